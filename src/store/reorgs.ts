import type pg from 'pg'
import { intervalDifference, intervalIntersection, intervalUnion, type Interval } from '../utils/interval.js'
import { lockForkMarks } from './chainLock.js'
import { withTransaction, type Queryable } from './client.js'
import { getIntervals, lockFilterIntervals } from './syncState.js'

/** A block as the rows stored from it name it. */
export type BlockId = { number: number; hash: string }

const ROW_TABLES = [
  { table: 'logs', number: 'block_number', hash: 'block_hash', canonical: `status <> 'pending'` },
  { table: 'transactions', number: 'block_number', hash: 'block_hash', canonical: `status <> 'pending'` },
  { table: 'attributions', number: 'block_number', hash: 'block_hash', canonical: `status <> 'pending'` },
  { table: 'blocks', number: 'number', hash: 'hash', canonical: 'true' },
] as const

/**
 * Marks every canonical row above `forkBlock` removed (never deleted): blocks, logs, transactions and
 * attributions, whatever filter stored them. Returns how many logs were removed.
 */
export async function markRemovedAbove(client: pg.PoolClient, chainId: number, forkBlock: number): Promise<number> {
  let logs = 0
  for (const { table, number, canonical } of ROW_TABLES) {
    const result = await client.query(
      `UPDATE ${table} SET removed = true, updated_at = now() WHERE chain_id = $1 AND ${number} > $2 AND ${canonical} AND NOT removed`,
      [chainId, forkBlock],
    )
    if (table === 'logs') logs = result.rowCount ?? 0
  }
  return logs
}

/**
 * Marks the rows of these orphaned blocks removed. Keyed by (number, hash), so the block-led indexes
 * serve it however long the history. Returns how many logs were removed.
 */
export async function markBlocksRemoved(client: pg.PoolClient, chainId: number, blocks: readonly BlockId[]): Promise<number> {
  if (blocks.length === 0) return 0
  let logs = 0
  for (const { table, number, hash, canonical } of ROW_TABLES) {
    const result = await client.query(
      `UPDATE ${table} t SET removed = true, updated_at = now()
       FROM unnest($2::bigint[], $3::text[]) AS o(number, hash)
       WHERE t.chain_id = $1 AND t.${number} = o.number AND t.${hash} = o.hash AND ${canonical} AND NOT t.removed`,
      [chainId, blocks.map((b) => b.number), blocks.map((b) => b.hash)],
    )
    if (table === 'logs') logs = result.rowCount ?? 0
  }
  return logs
}

/** Stored canonical blocks at these heights whose hash is not the given one: rows of another fork. */
export async function blocksOffCanonical(db: Queryable, chainId: number, canonical: readonly BlockId[]): Promise<BlockId[]> {
  if (canonical.length === 0) return []
  const { rows } = await db.query(
    `SELECT DISTINCT s.number, s.hash FROM unnest($2::bigint[], $3::text[]) AS c(number, hash)
     CROSS JOIN LATERAL (
       SELECT block_number AS number, block_hash AS hash FROM logs
       WHERE chain_id = $1 AND block_number = c.number AND status <> 'pending' AND NOT removed AND block_hash <> c.hash
       UNION
       SELECT number, hash FROM blocks WHERE chain_id = $1 AND number = c.number AND NOT removed AND hash <> c.hash
     ) s`,
    [chainId, canonical.map((b) => b.number), canonical.map((b) => b.hash)],
  )
  return rows as BlockId[]
}

/**
 * Marks the rows of these orphaned blocks removed in the caller's transaction (which holds the fork-mark
 * lock): the blocks leave the sync intervals of every filter that covered them, and each filter but
 * `storing` (those the caller stores these heights for right here) gets a repair of them.
 */
export async function orphanBlocksIn(
  client: pg.PoolClient,
  chainId: number,
  orphaned: readonly BlockId[],
  storing: readonly string[] = [],
): Promise<{ logsRemoved: number; repairs: Map<string, Interval[]> }> {
  const logsRemoved = await markBlocksRemoved(client, chainId, orphaned)
  const taken = await takeOutOfIntervals(client, chainId, intervalUnion(orphaned.map((block) => [block.number, block.number] as const)))
  for (const filterId of storing) taken.delete(filterId)
  for (const [filterId, ranges] of taken) await recordRepairs(client, chainId, filterId, ranges, 'orphaned')
  return { logsRemoved, repairs: taken }
}

/**
 * Of these blocks (a range job's answer), the heights where the index holds the very block as orphaned
 * or holds another block as canonical: the answer and the index disagree, so the answer is read again.
 */
export async function blocksInConflict(db: Queryable, chainId: number, blocks: readonly BlockId[]): Promise<number[]> {
  if (blocks.length === 0) return []
  const orphaned = await db.query<{ number: number }>(
    `SELECT b.number FROM unnest($2::bigint[], $3::text[]) AS h(number, hash)
     JOIN blocks b ON b.chain_id = $1 AND b.hash = h.hash AND b.removed`,
    [chainId, blocks.map((b) => b.number), blocks.map((b) => b.hash)],
  )
  const other = await blocksOffCanonical(db, chainId, blocks)
  return [...new Set([...orphaned.rows.map((row) => row.number), ...other.map((block) => block.number)])].sort((a, b) => a - b)
}

/**
 * Takes `ranges` out of the stored intervals of every filter whose intervals touch them, inside the
 * caller's transaction; returns, per filter, the blocks that were taken out (what it must read again).
 */
export async function takeOutOfIntervals(
  client: pg.PoolClient,
  chainId: number,
  ranges: readonly Interval[],
): Promise<Map<string, Interval[]>> {
  const taken = new Map<string, Interval[]>()
  if (ranges.length === 0) return taken
  const low = Math.min(...ranges.map((r) => r[0]))
  const high = Math.max(...ranges.map((r) => r[1]))
  const { rows } = await client.query<{ filter_id: string; from_block: number; to_block: number }>(
    `SELECT filter_id, from_block, to_block FROM sync_intervals WHERE chain_id = $1 AND to_block >= $2 AND from_block <= $3
     ORDER BY filter_id, from_block`,
    [chainId, low, high],
  )
  const byFilter = new Map<string, Interval[]>()
  for (const row of rows) byFilter.set(row.filter_id, [...(byFilter.get(row.filter_id) ?? []), [row.from_block, row.to_block]])
  for (const [filterId, intervals] of byFilter) {
    const removed = intervalIntersection(intervals, ranges)
    if (removed.length === 0) continue
    await lockFilterIntervals(client, chainId, filterId)
    for (const interval of intervals) {
      if (intervalIntersection([interval], ranges).length === 0) continue
      await client.query(`DELETE FROM sync_intervals WHERE chain_id = $1 AND filter_id = $2 AND from_block = $3`, [
        chainId,
        filterId,
        interval[0],
      ])
      const kept = intervalDifference(interval, ranges)
      for (const [from, to] of kept) {
        await client.query(`INSERT INTO sync_intervals (chain_id, filter_id, from_block, to_block) VALUES ($1, $2, $3, $4)`, [
          chainId,
          filterId,
          from,
          to,
        ])
      }
    }
    taken.set(filterId, removed)
  }
  return taken
}

export type Repair = {
  chainId: number
  filterId: string
  fromBlock: number
  toBlock: number
  reason: 'reorg' | 'orphaned'
  /** When a mark last (re)opened the blocks, in ms since the epoch. */
  markedAtMs: number
  failures: number
  lastError: string | null
  /** A failure was recorded and its retry is not due yet. */
  waiting: boolean
  /** A failure was recorded (its retry may be due). */
  failed: boolean
  quarantined: boolean
}

/**
 * Records blocks a filter must read again, in the caller's transaction (see `sync_repairs`). A repair
 * already open for the same blocks starts over: new blocks there deserve fresh attempts.
 */
export async function recordRepairs(
  client: pg.PoolClient,
  chainId: number,
  filterId: string,
  ranges: readonly Interval[],
  reason: Repair['reason'],
) {
  for (const [from, to] of ranges) {
    await client.query(
      `INSERT INTO sync_repairs (chain_id, filter_id, from_block, to_block, reason) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (chain_id, filter_id, from_block, to_block) DO UPDATE SET marked_at = now(), failures = 0, last_error = NULL, retry_at = NULL, quarantined_at = NULL`,
      [chainId, filterId, from, to, reason],
    )
  }
}

/** Every open repair of a chain, oldest first. */
export async function listRepairs(db: Queryable, chainId: number): Promise<Repair[]> {
  const { rows } = await db.query(
    `SELECT chain_id AS "chainId", filter_id AS "filterId", from_block AS "fromBlock", to_block AS "toBlock", reason,
       extract(epoch FROM marked_at)::float8 * 1000 AS "markedAtMs", failures, last_error AS "lastError", retry_at > now() AS "waiting", retry_at IS NOT NULL AS "failed",
       quarantined_at IS NOT NULL AS "quarantined"
     FROM sync_repairs WHERE chain_id = $1 ORDER BY created_at, from_block`,
    [chainId],
  )
  return rows.map((row) => ({ ...row, waiting: row.waiting === true })) as Repair[]
}

const repairKey = `chain_id = $1 AND filter_id = $2 AND from_block = $3 AND to_block = $4`
const repairKeyOf = ({ chainId, filterId, fromBlock, toBlock }: Pick<Repair, 'chainId' | 'filterId' | 'fromBlock' | 'toBlock'>) => [
  chainId,
  filterId,
  fromBlock,
  toBlock,
]

/** Closes a repair unconditionally (its filter is gone). */
export async function deleteRepair(db: Queryable, repair: Repair): Promise<void> {
  await db.query(`DELETE FROM sync_repairs WHERE ${repairKey}`, repairKeyOf(repair))
}

/**
 * Closes a repair if its blocks are stored again for its filter. The check and the delete run under the
 * fork-mark lock: a mark that takes the blocks out again (and finds this row open) cannot commit between
 * them. Returns whether it closed.
 */
export async function closeRepairIfStored(pool: pg.Pool, repair: Repair): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    await lockForkMarks(client, repair.chainId, 'store')
    const range = [repair.fromBlock, repair.toBlock] as const
    const stored = await getIntervals(client, repair.chainId, repair.filterId, range)
    if (intervalDifference(range, stored).length > 0) return false
    await client.query(`DELETE FROM sync_repairs WHERE ${repairKey}`, repairKeyOf(repair))
    return true
  })
}

/**
 * Counts a failed attempt: the next waits `retryInMs`, and at `maxFailures` the repair is quarantined
 * (no longer retried). Returns the repair's failures and whether it is now quarantined.
 */
export async function recordRepairFailure(
  db: Queryable,
  repair: Repair,
  { error, retryInMs, maxFailures }: { error: string; retryInMs: number; maxFailures: number },
): Promise<{ failures: number; quarantined: boolean }> {
  const { rows } = await db.query<{ failures: number; quarantined: boolean }>(
    `UPDATE sync_repairs SET failures = failures + 1, last_error = $5, retry_at = now() + make_interval(secs => $6::float8 / 1000),
       quarantined_at = CASE WHEN failures + 1 >= $7 THEN now() END
     WHERE ${repairKey} RETURNING failures, quarantined_at IS NOT NULL AS quarantined`,
    [...repairKeyOf(repair), error, retryInMs, maxFailures],
  )
  return rows[0] ?? { failures: repair.failures, quarantined: false }
}

/** A recorded failure's retry is under way: the repair is no longer waiting for it. */
export async function clearRepairRetry(db: Queryable, repair: Repair): Promise<void> {
  await db.query(`UPDATE sync_repairs SET retry_at = NULL WHERE ${repairKey}`, repairKeyOf(repair))
}

/** Appends a handled reorg to the audit table. */
export async function recordReorg(
  client: pg.PoolClient,
  chainId: number,
  {
    forkBlock,
    depth,
    oldHash,
    newHash,
    logsRemoved,
  }: { forkBlock: number; depth: number; oldHash: string; newHash: string; logsRemoved: number },
): Promise<void> {
  await client.query(`INSERT INTO reorgs (chain_id, fork_block, depth, old_hash, new_hash, logs_removed) VALUES ($1, $2, $3, $4, $5, $6)`, [
    chainId,
    forkBlock,
    depth,
    oldHash,
    newHash,
    logsRemoved,
  ])
}
