import { createRequire } from 'node:module'
import type { FastifyRateLimitOptions, FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { Redis } from 'ioredis'

/**
 * The HTTP server's limits: a client must send its headers and body within these, an idle keep-alive
 * socket is closed, and beyond `maxConnections` new sockets are refused at once.
 */
export const EDGE_DEFAULTS = {
  /** Every body the API takes is under 16 KiB: 15 s is ample even on a poor link. */
  requestTimeoutMs: 15_000,
  headersTimeoutMs: 10_000,
  /** Above the usual load balancer idle timeout (60 s), so the balancer closes first and never reuses a closed socket. */
  keepAliveTimeoutMs: 72_000,
  /** Room for STREAM_MAX_CLIENTS event streams plus the ordinary requests. */
  maxConnections: 2_048,
  /** How often Node checks the request and header timeouts (its default, 30 s, lets a slow client stay that long). */
  checkIntervalMs: 1_000,
} as const

export type EdgeLimits = { [K in keyof typeof EDGE_DEFAULTS]: number }

type Incr = FastifyRateLimitStore['incr']
type StoreModule = new (continueExceeding: boolean, exponentialBackoff: boolean, ...rest: unknown[]) => FastifyRateLimitStore
const require = createRequire(import.meta.url)
// The plugin's own stores; it exports only the option to pass a constructor.
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as StoreModule
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as StoreModule

/**
 * A rate-limit store that counts in Redis (shared by every API process) and, while Redis does not
 * answer, in this process's memory: limits then hold per process instead of switching off.
 */
export function fallbackStore(redis: Redis, nameSpace: string): FastifyRateLimitStoreCtor {
  class Fallback implements FastifyRateLimitStore {
    constructor(
      private readonly shared: FastifyRateLimitStore,
      private readonly local: FastifyRateLimitStore,
    ) {}
    incr: Incr = (key, callback, timeWindow, max) =>
      this.shared.incr(
        key,
        (error, result) => (error ? this.local.incr(key, callback, timeWindow, max) : callback(null, result)),
        timeWindow,
        max,
      )
    child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      return new Fallback(this.shared.child(routeOptions), this.local.child(routeOptions))
    }
  }
  return class extends Fallback {
    constructor(options: FastifyRateLimitOptions & { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
      const continueExceeding = options.continueExceeding ?? false
      const exponentialBackoff = options.exponentialBackoff ?? false
      super(new RedisStore(continueExceeding, exponentialBackoff, redis, nameSpace), new LocalStore(continueExceeding, exponentialBackoff))
    }
  }
}
