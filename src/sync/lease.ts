import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'

// Deletes or extends the key only while it still holds our token: never another holder's lock.
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`

/**
 * A lease in Redis that at most one process holds at a time (`SET NX PX`). The holder renews it well
 * before it expires; when the holder dies, the lease lapses and another process acquires it.
 */
export function createLease(redis: Redis, key: string, ttlMs: number) {
  const token = randomUUID()
  return {
    key,
    token,
    async acquire(): Promise<boolean> {
      return (await redis.set(key, token, 'PX', ttlMs, 'NX')) === 'OK'
    },
    async renew(): Promise<boolean> {
      return Number(await redis.eval(RENEW, 1, key, token, ttlMs)) === 1
    },
    async release(): Promise<void> {
      await redis.eval(RELEASE, 1, key, token)
    },
  }
}
