import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from '../internal/logger.js'
import { sleep } from '../utils/loop.js'

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

export type LeadParameters = {
  redis: Redis
  key: string
  ttlMs: number
  logger: Logger
  /** Fields every log line of this lease carries (`chain_id`, or `lease: 'delivery'`). */
  fields: Record<string, unknown>
  /** What the lease is for, in its log lines ("scheduler", "delivery"). */
  name: string
  /** Claims the next fencing generation on each acquisition (see `store/fence.ts`); a failed claim gives the lease up. */
  fence?: { claim(): Promise<number> }
  /** The holder's work, run until `term` aborts (the lease lost, or the stop); `term` may also be aborted by the work itself. */
  lead: (term: AbortController, generation: number | undefined) => Promise<void>
}

/**
 * Runs `lead` in at most one process at a time across every process: whoever holds the lease runs it,
 * renewing the lease every third of its time; the others wait and take over when it lapses.
 */
export function whileLeaseHeld({ redis, key, ttlMs, logger, fields, name, fence, lead }: LeadParameters) {
  const lease = createLease(redis, key, ttlMs)
  const stopped = new AbortController()
  let leader = false

  async function hold() {
    const generation = await fence?.claim().catch((error) => {
      logger.warn({ err: error, ...fields }, `${name} lease generation not claimed`)
      return null
    })
    if (generation === null) return lease.release().catch(() => {})
    const term = new AbortController()
    const stop = () => term.abort()
    stopped.signal.addEventListener('abort', stop, { once: true })
    leader = true
    logger.info({ ...fields, lease_generation: generation }, `${name} lease acquired`)
    const renewing = (async () => {
      while (!term.signal.aborted) {
        await sleep(ttlMs / 3, term.signal)
        if (term.signal.aborted) break
        const renewed = await lease.renew().catch(() => false)
        if (!renewed) {
          logger.warn(fields, `${name} lease lost: stopping`)
          term.abort()
        }
      }
    })()
    try {
      await Promise.all([renewing, lead(term, generation)])
    } finally {
      term.abort()
      stopped.signal.removeEventListener('abort', stop)
      leader = false
      await lease.release().catch(() => {})
    }
  }

  const running = (async () => {
    while (!stopped.signal.aborted) {
      const acquired = await lease.acquire().catch((error) => {
        logger.warn({ err: error, ...fields }, `${name} lease unavailable`)
        return false
      })
      let failed = false
      if (acquired)
        await hold().catch((error: unknown) => {
          failed = true
          logger.error({ err: error, ...fields }, `${name} lease holder failed`)
        })
      if (!acquired || failed) await sleep(ttlMs / 5, stopped.signal)
    }
  })()

  return {
    isLeader: () => leader,
    /** Stops the holder's work and releases the lease. */
    async stop() {
      stopped.abort()
      await running
    },
  }
}
