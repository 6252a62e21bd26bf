import type pg from 'pg'
import { withTransaction } from './client.js'

/** Months after the current one that the scheduler's leader keeps a `logs` partition ready for. */
export const LOG_MONTHS_AHEAD = 2
// Serialises partition changes across the leaders of every chain (partitions hold every chain's rows).
const LOG_PARTITIONS_LOCK = 0x6374706d
/** How long a partition change waits for a table lock before it gives up until the next pass. */
const PARTITION_LOCK_TIMEOUT = '5s'
const MONTH_PARTITION = /^logs_p(\d{4})_(\d{2})$/

/** The first instant of the month (UTC) `months` after the one holding `at`. */
function monthStart(at: Date, months = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1))
}

/** `logs_pYYYY_MM`, the name of the partition of the month starting at `month`, as migration 0033 names them too. */
function logPartitionName(month: Date): string {
  return `logs_p${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`
}

/** The month partitions of `logs` and the month each holds, oldest first. */
async function logMonthPartitions(db: Pick<pg.Pool, 'query'>): Promise<{ name: string; from: Date; to: Date }[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'logs'::regclass ORDER BY 1`,
  )
  return rows.flatMap(({ name }) => {
    const match = MONTH_PARTITION.exec(name)
    if (!match) return []
    const from = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1))
    return [{ name, from, to: monthStart(from, 1) }]
  })
}

/**
 * Makes sure `logs` has a partition for the month of `now` and the {@link LOG_MONTHS_AHEAD} after it, so
 * the tip writes into months and not into `logs_default`. Idempotent; run by the scheduler's leader. A
 * month is created empty and attached (the parent takes only a SHARE UPDATE EXCLUSIVE lock, so reads and
 * writes of other months go on). Rows already in `logs_default` for that month (the leader was away, or
 * a node's clock ran ahead) move into it first, with `logs_default` closed to writes meanwhile and its
 * triggers off: the rows move, they do not change, so `registry_tokens` stays as it is.
 * Returns the partitions it created.
 */
export async function ensureLogPartitions(pool: pg.Pool, now = new Date()): Promise<string[]> {
  const created: string[] = []
  for (let ahead = 0; ahead <= LOG_MONTHS_AHEAD; ahead++) {
    const from = monthStart(now, ahead)
    const to = monthStart(now, ahead + 1)
    const name = logPartitionName(from)
    const made = await withTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [LOG_PARTITIONS_LOCK])
      const {
        rows: [exists],
      } = await client.query<{ exists: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS exists`, [name])
      if (exists!.exists) return false
      await client.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`)
      // Writers reach logs_default only through the parent, whose lock they take first: no lock cycle.
      await client.query('LOCK TABLE logs_default IN EXCLUSIVE MODE')
      await client.query(`CREATE TABLE ${name} (LIKE logs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`)
      const {
        rows: [held],
      } = await client.query<{ any: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM logs_default WHERE block_timestamp >= $1 AND block_timestamp < $2) AS any`,
        [from, to],
      )
      if (held!.any) {
        await client.query('ALTER TABLE logs_default DISABLE TRIGGER USER')
        await client.query(
          `WITH moved AS (DELETE FROM logs_default WHERE block_timestamp >= $1 AND block_timestamp < $2 RETURNING *)
           INSERT INTO ${name} SELECT * FROM moved`,
          [from, to],
        )
        await client.query('ALTER TABLE logs_default ENABLE TRIGGER USER')
      }
      // Builds the partition's indexes and clones the triggers of logs onto it.
      await client.query(`ALTER TABLE logs ATTACH PARTITION ${name} FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`)
      return true
    })
    if (made) created.push(name)
  }
  return created
}

/**
 * Most rows a month partition may hold that retention must keep (the registry's logs, rows under an open
 * repair) for the month to be dropped anyway: they are moved into `logs_default` first, while `logs` is
 * locked for the detach. A month holding more keeps the batched delete.
 */
export const KEPT_ROWS_MOVED_AT_MOST = 10_000

/**
 * Detaches and drops each month partition of `logs` that ends at or before `cutoff` and whose rows
 * retention may let go of, whatever their chain: finalized, or pre-confirmed rows that were dropped
 * (`pending` and removed) at a height at or below their chain's finalized block, which nothing claims
 * again. Rows it must keep even so — the registry's logs (`registry_tokens` is recomputed from them) and
 * rows under an open repair — move into `logs_default` as the month goes, when there are at most
 * {@link KEPT_ROWS_MOVED_AT_MOST} (a deployment that follows the BuilderCodes registry has some in most
 * months); they move unchanged, with `logs_default`'s triggers off, so `registry_tokens` stays as it is.
 * A month with a row not finalized, or with more rows to keep, stays for the batched delete. The
 * partition is closed to writes while it is checked; one whose lock is not granted within a few
 * seconds is left for the next pass. Returns the partitions dropped, the rows let go and the rows moved.
 */
export async function dropExpiredLogPartitions(
  pool: pg.Pool,
  cutoff: Date,
): Promise<{ partitions: string[]; logs: number; moved: number }> {
  const dropped: string[] = []
  let logs = 0
  let moved = 0
  for (const { name, to } of await logMonthPartitions(pool)) {
    if (to > cutoff) continue
    const counts = await withTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [LOG_PARTITIONS_LOCK])
      await client.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`)
      await client.query(`LOCK TABLE ${name} IN SHARE MODE`)
      const {
        rows: [scan],
      } = await client.query<{ rows: string; open: string }>(
        `SELECT count(*) AS rows, count(*) FILTER (WHERE NOT (l.status = 'finalized'
           OR l.status = 'pending' AND l.removed AND l.block_number <= (SELECT s.finalized_block FROM chain_state s WHERE s.chain_id = l.chain_id))) AS open
         FROM ${name} l`,
      )
      if (Number(scan!.open) > 0) return null
      // The rows kept, found through the partition's indexes (the registries' addresses; the canonical key for
      // the repairs' blocks: a dropped pre-confirmation at a finalized height is nothing a repair reads) and
      // taken aside before the detach, so logs is locked only for the move of the few there are.
      const { rowCount } = await client.query(
        `CREATE TEMP TABLE kept_logs ON COMMIT DROP AS SELECT * FROM (
           SELECT l.* FROM ${name} l JOIN builder_code_registries g ON g.chain_id = l.chain_id AND g.address = l.address
           UNION
           SELECT l.* FROM sync_repairs r JOIN ${name} l ON l.chain_id = r.chain_id AND l.status <> 'pending'
             AND l.block_number BETWEEN r.from_block AND r.to_block) kept
         LIMIT ${KEPT_ROWS_MOVED_AT_MOST + 1}`,
      )
      const kept = rowCount ?? 0
      if (kept > KEPT_ROWS_MOVED_AT_MOST) return null
      await client.query(`ALTER TABLE logs DETACH PARTITION ${name}`)
      if (kept > 0) {
        // The month's range belongs to no partition now, so logs_default takes its rows.
        await client.query('ALTER TABLE logs_default DISABLE TRIGGER USER')
        await client.query('INSERT INTO logs_default SELECT * FROM kept_logs')
        await client.query('ALTER TABLE logs_default ENABLE TRIGGER USER')
      }
      await client.query(`DROP TABLE ${name}`)
      return { logs: Number(scan!.rows) - kept, moved: kept }
    }).catch((error: { code?: string }) => {
      // lock_not_available or deadlock_detected (a writer reached the partition first): tried again at the next pass.
      if (error.code === '55P03' || error.code === '40P01') return null
      throw error
    })
    if (counts === null) continue
    dropped.push(name)
    logs += counts.logs
    moved += counts.moved
  }
  return { partitions: dropped, logs, moved }
}
