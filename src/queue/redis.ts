import { Redis } from 'ioredis'

export type QueueContext = { redisUrl: string; prefix: string }

/** A Redis connection as BullMQ wants it for blocking commands. */
export function createRedis(redisUrl: string): Redis {
  return new Redis(redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false })
}

/** Fails fast, with the address in the message, when Redis does not answer a PING. */
export async function checkRedis(redisUrl: string, timeoutMs = 3_000): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 0, connectTimeout: timeoutMs, lazyConnect: true, retryStrategy: () => null })
  redis.on('error', () => {})
  try {
    await redis.connect()
    await redis.ping()
  } catch (error) {
    const { hostname, port } = new URL(redisUrl)
    throw new Error(`Redis is not reachable at ${hostname}:${port || 6379} (${(error as Error).message}): start it, or set REDIS_URL`)
  } finally {
    redis.disconnect()
  }
}

/** Deletes every key under `prefix:` (a fresh start for the demo, cleanup for tests and benches). */
export async function clearRedisPrefix(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  let deleted = 0
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1_000)
      cursor = next
      if (keys.length > 0) deleted += await redis.del(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
  return deleted
}
