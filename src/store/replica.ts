import { drizzle } from 'drizzle-orm/node-postgres'
import pg from 'pg'
import type { Logger } from '../internal/logger.js'
import { runEvery } from '../utils/loop.js'
import { redactUrl } from '../utils/redact.js'
import type { Database } from './client.js'
import * as schema from './schema.js'

/** How often the replica's lag is measured: reads switch within this much of the replica falling behind or catching up. */
export const REPLICA_CHECK_MS = 1_000
/** Longest one lag measurement may take; a replica that cannot answer in this is bypassed. */
const CHECK_TIMEOUT_MS = 2_000
/** A standby cancels a read that conflicts with replaying the primary's changes (SQLSTATE 40001). */
const RECOVERY_CONFLICT = '40001'

export type ReplicaStatus = {
  /** `serving`: reads go to the replica; `lagging` or `down`: they go to the primary until it catches up. */
  state: 'serving' | 'lagging' | 'down'
  /** How long ago the primary committed the oldest change the replica has not replayed yet; null while it cannot be measured. */
  lagMs: number | null
  maxLagMs: number
  /** When the lag was last measured; null before the first measurement. */
  checkedAt: Date | null
}

export type ReadRouting = {
  /** A pool that sends each query to the replica while it serves, else to the primary; never ended by itself. */
  pool: pg.Pool
  db: Database
  status: () => ReplicaStatus
  /** Measures the lag once now (the loop does it every `checkIntervalMs`). */
  check: () => Promise<ReplicaStatus>
  /** Stops measuring and closes the replica's connections (not the primary's). */
  close: () => Promise<void>
}

export type CreateReadRoutingParameters = {
  /** The primary (`DATABASE_URL`): reads go there while the replica lags or is down. */
  primary: pg.Pool
  /** `DATABASE_READ_URL`. */
  replicaUrl: string
  /** `READ_MAX_LAG_MS`. */
  maxLagMs: number
  checkIntervalMs?: number
  logger: Logger
}

/**
 * Reads served by a streaming replica while it is at most `maxLagMs` behind the primary, checked every
 * `checkIntervalMs` rather than per request; reads that must see their own writes take the primary's pool.
 * The lag is the age of the replica's last replayed transaction when it has not yet replayed what the
 * primary had written at the start of the check, else zero (an idle primary leaves a caught-up replica
 * with an old last transaction).
 */
export function createReadRouting({
  primary,
  replicaUrl,
  maxLagMs,
  checkIntervalMs = REPLICA_CHECK_MS,
  logger,
}: CreateReadRoutingParameters): ReadRouting {
  // The primary pool's size and timeouts, on the replica.
  const replica = new pg.Pool({ ...primary.options, connectionString: replicaUrl })
  // An idle client's error (the replica restarting) must not end the process; the next check reports it.
  replica.on('error', () => {})
  // A connection of its own, so a check neither waits behind busy requests nor makes them wait.
  const probe = new pg.Pool({
    connectionString: replicaUrl,
    max: 1,
    connectionTimeoutMillis: CHECK_TIMEOUT_MS,
    statement_timeout: CHECK_TIMEOUT_MS,
  })
  probe.on('error', () => {})
  const where = redactUrl(replicaUrl)

  let status: ReplicaStatus = { state: 'down', lagMs: null, maxLagMs, checkedAt: null }

  async function measure(): Promise<number | null> {
    const { rows: at } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
    const { rows } = await probe.query<{ recovering: boolean; caught_up: boolean | null; replayed_ms: number | null }>(
      `SELECT pg_is_in_recovery() AS recovering,
              pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up,
              (extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::float8 AS replayed_ms`,
      [at[0]!.lsn],
    )
    const row = rows[0]!
    // Not a standby (say, promoted): it is the primary of its own history, current by definition.
    if (!row.recovering || row.caught_up) return 0
    return row.replayed_ms === null ? null : Math.max(0, Math.round(row.replayed_ms))
  }

  async function check(): Promise<ReplicaStatus> {
    let next: ReplicaStatus
    try {
      const lagMs = await measure()
      next = { state: lagMs !== null && lagMs <= maxLagMs ? 'serving' : 'lagging', lagMs, maxLagMs, checkedAt: new Date() }
    } catch (error) {
      next = { state: 'down', lagMs: null, maxLagMs, checkedAt: new Date() }
      if (status.state !== 'down' || status.checkedAt === null)
        logger.warn({ replica: where, err: error }, 'read replica unreachable: reads go to the primary')
    }
    if (next.state !== status.state)
      logger.info({ replica: where, state: next.state, lag_ms: next.lagMs, max_lag_ms: maxLagMs }, 'read replica state changed')
    status = next
    return status
  }

  const current = () => (status.state === 'serving' ? replica : primary)

  /** A query on the replica cancelled by a conflict with replay is answered by the primary instead. */
  function query(this: void, ...args: unknown[]): unknown {
    const target = current()
    const run = (pool: pg.Pool) => (pool.query as (...a: unknown[]) => unknown)(...args)
    if (target === primary || typeof args.at(-1) === 'function') return run(target)
    return (run(target) as Promise<unknown>).catch((error: { code?: string }) => {
      if (error?.code !== RECOVERY_CONFLICT) throw error
      return run(primary)
    })
  }

  // Every property of whichever pool serves now, so drizzle and the stream use it as a pool.
  const pool = new Proxy(replica, {
    get(_target, property) {
      if (property === 'query') return query
      const target = current()
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })

  const stop = new AbortController()
  const loop = (async () => {
    await runEvery(checkIntervalMs, check, { signal: stop.signal, logger, name: 'replica-lag' })
  })()

  return {
    pool,
    db: drizzle(pool, { schema }) as Database,
    status: () => status,
    check,
    async close() {
      stop.abort()
      await loop
      await Promise.all([replica.end(), probe.end()])
    },
  }
}
