import type { Redis } from 'ioredis'
import { getBlock, type RpcClient } from '../rpc/index.js'
import type { Database } from '../store/index.js'
import { getIndexedHead, getSyncStatus, type SyncStatus } from '../store/reads/index.js'

/** How long readiness waits for one dependency before calling it down. */
export const CHECK_TIMEOUT_MS = 2_000
/**
 * How long one look at the database, Redis and the node serves `/readyz` and `/v1/status`: whatever
 * the request rate, the node gets at most one call per this, and the database one query of each kind.
 */
export const SNAPSHOT_MAX_AGE_MS = 3_000

export type Check = { status: 'ok' | 'down' | 'not_configured'; latencyMs: number | null; error: string | null }
export type Probe<T> = { check: Check; value: T | null }
export type Head = { block: number; timestamp: number }
export type IndexedHead = Awaited<ReturnType<typeof getIndexedHead>>

/**
 * What `/readyz` and `/v1/status` serve: each part refreshed on the first request after it is
 * {@link SNAPSHOT_MAX_AGE_MS} old, concurrent requests sharing the one refresh in flight.
 */
export type HealthSnapshot = {
  database: () => Promise<Probe<IndexedHead>>
  redis: () => Promise<Probe<string>>
  node: () => Promise<Probe<Head>>
  /** Rejects as the query did, so the error handler answers as for any database error. */
  sync: () => Promise<SyncStatus>
}

export function createHealthSnapshot({
  db,
  chainId,
  rpc,
  redis,
  maxAgeMs = SNAPSHOT_MAX_AGE_MS,
}: {
  db: Database
  chainId: number
  rpc?: RpcClient
  redis?: Redis
  maxAgeMs?: number
}): HealthSnapshot {
  return {
    database: refreshing(maxAgeMs, () => probe(() => getIndexedHead(db, chainId))),
    redis: refreshing(maxAgeMs, () => (redis ? probe(() => redis.ping()) : Promise.resolve(NOT_CONFIGURED))),
    node: refreshing(maxAgeMs, async (): Promise<Probe<Head>> => {
      if (!rpc) return NOT_CONFIGURED
      const node = await probe(() => getBlock(rpc, 'latest', { timeoutMs: CHECK_TIMEOUT_MS }))
      return { check: node.check, value: node.value ? { block: node.value.number, timestamp: node.value.timestamp } : null }
    }),
    sync: refreshing(maxAgeMs, () => getSyncStatus(db, chainId)),
  }
}

/** `take`'s last result while younger than `maxAgeMs` (counted from when it started), else a new one. */
function refreshing<T>(maxAgeMs: number, take: () => Promise<T>): () => Promise<T> {
  let last: { startedAt: number; result: Promise<T> } | undefined
  return () => {
    const now = performance.now()
    if (!last || now - last.startedAt >= maxAgeMs) {
      const result = take()
      // A rejection is served to every caller until the next refresh; none is left unhandled.
      result.catch(() => {})
      last = { startedAt: now, result }
    }
    return last.result
  }
}

export const NOT_CONFIGURED: Probe<never> = { check: { status: 'not_configured', latencyMs: null, error: null }, value: null }

export async function probe<T>(run: () => Promise<T>): Promise<Probe<T>> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'timeout' })), CHECK_TIMEOUT_MS)
    })
    const value = await Promise.race([run(), timeout])
    return { check: { status: 'ok', latencyMs: Math.round(performance.now() - started), error: null }, value }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    return {
      check: { status: 'down', latencyMs: null, error: typeof code === 'string' || typeof code === 'number' ? String(code) : 'error' },
      value: null,
    }
  } finally {
    clearTimeout(timer)
  }
}
