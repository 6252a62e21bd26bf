import type pg from 'pg'
import { withTransaction } from './client.js'

/**
 * The tables partitioned by month (UTC), and the time each is partitioned by: `logs`, `attributions` and
 * `transactions` by block time (migrations 0033, 0036 and 0037), `webhook_events` and `webhook_deliveries`
 * by when the event was published and the attempt made (migration 0034). Each has month tables
 * `<table>_pYYYY_MM` and `<table>_default` for rows no month holds.
 */
const MONTH_PARTITIONED = {
  logs: 'block_timestamp',
  attributions: 'block_timestamp',
  transactions: 'block_timestamp',
  webhook_events: 'created_at',
  webhook_deliveries: 'created_at',
} as const
export type MonthPartitionedTable = keyof typeof MONTH_PARTITIONED

/** Months after the current one that a partitioned table's writer keeps a partition ready for. */
const MONTHS_AHEAD = 2
/** How often each writer makes sure its months are ready: the scheduler's leader for the block-time tables, the dispatcher for the webhook tables. */
export const MONTH_PARTITIONS_CHECK_MS = 60 * 60_000
// Serialises partition changes across processes (the leaders of every chain share the partitions of logs).
const PARTITIONS_LOCK = 0x6374706d
/** How long a partition change waits for a table lock before it gives up until the next pass. */
const PARTITION_LOCK_TIMEOUT = '5s'
/**
 * How long a detach waits for its ACCESS EXCLUSIVE lock on the parent. While it waits every read and write
 * of the table queues behind it (the tip's writes of `logs`, the publisher's of `webhook_events`), so it
 * waits no longer than a few blocks' writes take and otherwise leaves the month for the next pass (a long
 * report reading the table holds it off). `DETACH … CONCURRENTLY` would take a weaker lock, but
 * PostgreSQL refuses it on a table with a default partition.
 */
const DETACH_LOCK_TIMEOUT = '250ms'

/** The first instant of the month (UTC) `months` after the one holding `at`. */
function monthStart(at: Date, months = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1))
}

/** `<table>_pYYYY_MM`, the name of the partition of the month starting at `month`, as the migrations name them too. */
function partitionName(table: MonthPartitionedTable, month: Date): string {
  return `${table}_p${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`
}

/** The month partitions of `table` and the month each holds, oldest first. */
async function monthPartitions(
  db: Pick<pg.Pool, 'query'>,
  table: MonthPartitionedTable,
): Promise<{ name: string; from: Date; to: Date }[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY 1`,
    [table],
  )
  const monthPartition = new RegExp(`^${table}_p(\\d{4})_(\\d{2})$`)
  return rows.flatMap(({ name }) => {
    const match = monthPartition.exec(name)
    if (!match) return []
    const from = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1))
    return [{ name, from, to: monthStart(from, 1) }]
  })
}

/** A time range month partitions cover without a gap: from the start of the first to the end of the last. */
export type MonthSpan = { from: Date; to: Date }

/**
 * The newest run of consecutive month partitions of `table`, or null when it has none. A read whose time
 * bounds are literals inside it plans without the default partition, which PostgreSQL must otherwise
 * keep in every plan (any value may sit there), and which stops it reading the months in order, newest
 * first, with one index scan after another: a default partition holds values of any time, so the months
 * can only be merged.
 */
export async function monthSpan(db: Pick<pg.Pool, 'query'>, table: MonthPartitionedTable): Promise<MonthSpan | null> {
  const months = await monthPartitions(db, table)
  const last = months.at(-1)
  if (!last) return null
  let from = last.from
  for (let index = months.length - 2; index >= 0 && months[index]!.to.getTime() === from.getTime(); index--) from = months[index]!.from
  return { from, to: last.to }
}

/**
 * Makes sure `table` has a partition for the month of `now` and the {@link MONTHS_AHEAD} after it (and,
 * with `since`, for every month from the one holding it: a bulk load of history), so its writers write
 * into months and not into its default partition. Idempotent. A month is created
 * empty and attached (the parent takes only a SHARE UPDATE EXCLUSIVE lock, so reads and writes of other
 * months go on). Rows the default partition already holds for that month (the writer was away, or a
 * node's clock ran ahead) move into it first, with the default partition closed to writes meanwhile and
 * its triggers off: the rows move, they do not change (for `logs`, `registry_tokens` stays as it is).
 * Returns the partitions it created.
 */
export async function ensureMonthPartitions(pool: pg.Pool, table: MonthPartitionedTable, now = new Date(), since = now): Promise<string[]> {
  const column = MONTH_PARTITIONED[table]
  const created: string[] = []
  const last = monthStart(now, MONTHS_AHEAD)
  for (let from = monthStart(since); from <= last; from = monthStart(from, 1)) {
    const to = monthStart(from, 1)
    const name = partitionName(table, from)
    const made = await withTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITIONS_LOCK])
      const {
        rows: [exists],
      } = await client.query<{ exists: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS exists`, [name])
      if (exists!.exists) return false
      await client.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`)
      // Writers reach the default partition only through the parent, whose lock they take first: no lock cycle.
      await client.query(`LOCK TABLE ${table}_default IN EXCLUSIVE MODE`)
      await client.query(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`)
      const {
        rows: [held],
      } = await client.query<{ any: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ${table}_default WHERE ${column} >= $1 AND ${column} < $2) AS any`,
        [from, to],
      )
      if (held!.any) {
        await client.query(`ALTER TABLE ${table}_default DISABLE TRIGGER USER`)
        await client.query(
          `WITH moved AS (DELETE FROM ${table}_default WHERE ${column} >= $1 AND ${column} < $2 RETURNING *)
           INSERT INTO ${name} SELECT * FROM moved`,
          [from, to],
        )
        await client.query(`ALTER TABLE ${table}_default ENABLE TRIGGER USER`)
      }
      // Builds the partition's indexes and clones the parent's triggers onto it.
      await client.query(
        `ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`,
      )
      return true
    })
    if (made) created.push(name)
  }
  return created
}

/**
 * Most rows a month partition may hold that retention must keep for the month to be dropped anyway: they
 * are moved into the default partition first, while the parent is locked for the detach. A month holding
 * more keeps the batched delete.
 */
export const KEPT_ROWS_MOVED_AT_MOST = 10_000

/** What retention may let go of in a month partition `p` of a table: each table's retention states its own. */
export type ExpiryRules = {
  /** Counts the partition's rows (`rows`) and those that keep the whole month (`open`), as one row. */
  check: (p: string) => string
  /** Selects the rows retention must keep even so, found through the partition's indexes where it can; none when absent. */
  kept?: (p: string) => string
  /**
   * Deletes what goes with the partition's rows from tables of their own, before the detach; the rows `kept`
   * selected are in the temporary table `kept_rows`.
   */
  alsoDelete?: (p: string) => string
}

/**
 * Detaches and drops each month partition of `table` that ends at or before `cutoff` and whose rows
 * retention may let go of (`rules.check` finds none open). The rows it must keep even so
 * (`rules.kept`) move into the default partition as the month goes, when there are at most
 * {@link KEPT_ROWS_MOVED_AT_MOST}, unchanged and with the default partition's triggers off. A month
 * with a row open, or with more rows to keep, stays for the batched delete. The partition is closed to
 * writes while it is checked; one whose lock is not granted within a few seconds, whose parent is not
 * free for the detach within {@link DETACH_LOCK_TIMEOUT}, or that deadlocks with a writer, is left for
 * the next pass. Returns the partitions dropped, the rows let go and the rows moved.
 */
export async function dropExpiredMonths(
  pool: pg.Pool,
  table: MonthPartitionedTable,
  cutoff: Date,
  rules: ExpiryRules,
): Promise<{ partitions: string[]; rows: number; moved: number }> {
  const dropped: string[] = []
  let rows = 0
  let moved = 0
  for (const { name, to } of await monthPartitions(pool, table)) {
    if (to > cutoff) continue
    const counts = await withTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITIONS_LOCK])
      await client.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`)
      await client.query(`LOCK TABLE ${name} IN SHARE MODE`)
      const {
        rows: [scan],
      } = await client.query<{ rows: string; open: string }>(rules.check(name))
      if (Number(scan!.open) > 0) return null
      // Taken aside before the detach, so the parent is locked only for the move of the few there are.
      const { rowCount } = rules.kept
        ? await client.query(
            `CREATE TEMP TABLE kept_rows ON COMMIT DROP AS SELECT * FROM (${rules.kept(name)}) kept LIMIT ${KEPT_ROWS_MOVED_AT_MOST + 1}`,
          )
        : { rowCount: 0 }
      const kept = rowCount ?? 0
      if (kept > KEPT_ROWS_MOVED_AT_MOST) return null
      if (rules.alsoDelete) await client.query(rules.alsoDelete(name))
      await client.query(`SET LOCAL lock_timeout = '${DETACH_LOCK_TIMEOUT}'`)
      await client.query(`ALTER TABLE ${table} DETACH PARTITION ${name}`)
      if (kept > 0) {
        // The month's range belongs to no partition now, so the default partition takes its rows.
        await client.query(`ALTER TABLE ${table}_default DISABLE TRIGGER USER`)
        await client.query(`INSERT INTO ${table}_default SELECT * FROM kept_rows`)
        await client.query(`ALTER TABLE ${table}_default ENABLE TRIGGER USER`)
      }
      await client.query(`DROP TABLE ${name}`)
      return { rows: Number(scan!.rows) - kept, moved: kept }
    }).catch((error: { code?: string }) => {
      // lock_not_available or deadlock_detected (a writer reached the partition first): tried again at the next pass.
      if (error.code === '55P03' || error.code === '40P01') return null
      throw error
    })
    if (counts === null) continue
    dropped.push(name)
    rows += counts.rows
    moved += counts.moved
  }
  return { partitions: dropped, rows, moved }
}
