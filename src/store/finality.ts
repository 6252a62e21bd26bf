import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import { lockForkMarks } from './chainLock.js'
import { withTransaction } from './client.js'
import type { Fence } from './fence.js'
import { updateChainState } from './syncState.js'

/**
 * Moves rows of `(from, to]` from `confirmed` to `finalized` as the node's finalized block advances,
 * and records the new finalized block.
 */
export async function advanceFinality(pool: pg.Pool, chainId: number, range: Interval, fence?: Fence): Promise<number> {
  return withTransaction(pool, async (client) => {
    await lockForkMarks(client, chainId, 'mark')
    await fence?.(client, 'update')
    return advanceFinalityIn(client, chainId, range)
  })
}

/**
 * {@link advanceFinality} in the caller's transaction, which holds the fork-mark lock: range jobs
 * storing rows of these blocks commit before it (their rows are moved here) or read the new finalized block.
 */
export async function advanceFinalityIn(client: pg.PoolClient, chainId: number, [from, to]: Interval): Promise<number> {
  const logs = await markFinalized(client, chainId, [from + 1, to])
  await updateChainState(client, chainId, { finalizedBlock: to })
  return logs
}

/** Rows of `(from, to]` (headers, confirmed logs, not removed) of any block but the `canonical` ones. */
export async function blocksOtherThan(
  db: Pick<pg.PoolClient, 'query'>,
  chainId: number,
  [from, to]: Interval,
  canonical: ReadonlyMap<number, string>,
): Promise<{ number: number; hash: string }[]> {
  const { rows } = await db.query(
    `SELECT DISTINCT r.number, r.hash FROM (
       SELECT number, hash FROM blocks WHERE chain_id = $1 AND number > $2 AND number <= $3 AND NOT removed
       UNION ALL
       SELECT block_number, block_hash FROM logs WHERE chain_id = $1 AND block_number > $2 AND block_number <= $3 AND status = 'confirmed' AND NOT removed
     ) r
     WHERE NOT EXISTS (SELECT 1 FROM unnest($4::bigint[], $5::text[]) AS c(number, hash) WHERE c.number = r.number AND c.hash = r.hash)`,
    [chainId, from, to, [...canonical.keys()], [...canonical.values()]],
  )
  return rows as { number: number; hash: string }[]
}

/** Moves the confirmed, not removed rows of `[from, to]` to `finalized` in the caller's transaction; returns the logs moved. */
async function markFinalized(client: pg.PoolClient, chainId: number, [from, to]: Interval): Promise<number> {
  let logs = 0
  for (const table of ['logs', 'blocks', 'transactions', 'attributions']) {
    const column = table === 'blocks' ? 'number' : 'block_number'
    const result = await client.query(
      `UPDATE ${table} SET status = 'finalized', updated_at = now()
       WHERE chain_id = $1 AND ${column} >= $2 AND ${column} <= $3 AND status = 'confirmed' AND NOT removed`,
      [chainId, from, to],
    )
    if (table === 'logs') logs = result.rowCount ?? 0
  }
  return logs
}

/**
 * For a range job that read the finalized block before finality moved past some of its blocks: those
 * blocks' rows become `finalized` in the job's own transaction, since the finality step that passed them
 * ran before they were there.
 */
export async function finalizeBehindFinality(
  client: pg.PoolClient,
  chainId: number,
  [from, to]: Interval,
  finalizedWhenRead: number | null,
): Promise<void> {
  const { rows } = await client.query<{ finalized_block: number | null }>(`SELECT finalized_block FROM chain_state WHERE chain_id = $1`, [
    chainId,
  ])
  const finalized = rows[0]?.finalized_block ?? null
  if (finalized === null || (finalizedWhenRead !== null && finalized <= finalizedWhenRead)) return
  const low = Math.max(from, (finalizedWhenRead ?? -1) + 1)
  if (low <= Math.min(to, finalized)) await markFinalized(client, chainId, [low, Math.min(to, finalized)])
}

/** Stored headers of `(from, to]` not marked removed, as their writers saw them (parent hash null where a backfill stored a block from its logs alone). */
export async function blocksBetween(
  db: Pick<pg.Pool | pg.PoolClient, 'query'>,
  chainId: number,
  [from, to]: Interval,
): Promise<{ number: number; hash: string; parentHash: string | null }[]> {
  const { rows } = await db.query(
    `SELECT number, hash, parent_hash AS "parentHash" FROM blocks WHERE chain_id = $1 AND number > $2 AND number <= $3 AND NOT removed`,
    [chainId, from, to],
  )
  return rows as { number: number; hash: string; parentHash: string | null }[]
}

/** Distinct blocks of `(from, to]` holding logs stored as confirmed (not yet final) and not removed. */
export async function unfinalizedLogBlocks(
  db: Pick<pg.Pool, 'query'>,
  chainId: number,
  [from, to]: Interval,
): Promise<{ number: number; hash: string }[]> {
  const { rows } = await db.query(
    `SELECT DISTINCT block_number AS number, block_hash AS hash FROM logs
     WHERE chain_id = $1 AND block_number > $2 AND block_number <= $3 AND status = 'confirmed' AND NOT removed`,
    [chainId, from, to],
  )
  return rows as { number: number; hash: string }[]
}
