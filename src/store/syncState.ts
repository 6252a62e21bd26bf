import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import type { Queryable } from './client.js'

export type FilterRecord = { chainId: number; filterId: string; addresses: readonly string[]; topics: readonly string[] }

/** A filter's blocks `[fromBlock, toBlock]`: what one range job reads, planned by a backfill or by a repair. */
export type FilterRange = { chainId: number; filterId: string; addresses: string[]; topics: string[]; fromBlock: number; toBlock: number }

/** Remembers a filter's definition so its `filter_id` can be read back by people. */
export async function saveFilter(db: Queryable, filter: FilterRecord): Promise<void> {
  await db.query(`INSERT INTO sync_filters (chain_id, filter_id, addresses, topics) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
    filter.chainId,
    filter.filterId,
    filter.addresses,
    filter.topics,
  ])
}

/** The merged block ranges stored for a filter, optionally only those touching `[from, to]`. */
export async function getIntervals(db: Queryable, chainId: number, filterId: string, within?: Interval): Promise<Interval[]> {
  const { rows } = await db.query<{ from_block: number; to_block: number }>(
    `SELECT from_block, to_block FROM sync_intervals
     WHERE chain_id = $1 AND filter_id = $2 AND ($3::bigint IS NULL OR (to_block >= $3 AND from_block <= $4))
     ORDER BY from_block`,
    [chainId, filterId, within?.[0] ?? null, within?.[1] ?? null],
  )
  return rows.map((row) => [row.from_block, row.to_block] as const)
}

/** Whether every block of `[from, to]` is stored for the filter. */
export async function isCovered(db: Queryable, chainId: number, filterId: string, [from, to]: Interval): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM sync_intervals WHERE chain_id = $1 AND filter_id = $2 AND from_block <= $3 AND to_block >= $4`,
    [chainId, filterId, from, to],
  )
  return (rowCount ?? 0) > 0
}

/** Serialises changes to one filter's intervals until the caller's transaction ends. */
export async function lockFilterIntervals(client: pg.PoolClient, chainId: number, filterId: string): Promise<void> {
  await client.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, $2))`, [filterId, chainId])
}

/**
 * Records `[from, to]` as stored, merged with the intervals it touches, inside the caller's transaction
 * (so it commits with the rows it describes). Merges of one filter are serialised by an advisory lock.
 */
export async function recordInterval(client: pg.PoolClient, chainId: number, filterId: string, [from, to]: Interval): Promise<void> {
  await lockFilterIntervals(client, chainId, filterId)
  await client.query(
    `WITH merged AS (
       DELETE FROM sync_intervals
       WHERE chain_id = $1 AND filter_id = $2 AND to_block >= $3::bigint - 1 AND from_block <= $4::bigint + 1
       RETURNING from_block, to_block
     )
     INSERT INTO sync_intervals (chain_id, filter_id, from_block, to_block)
     SELECT $1, $2, LEAST($3::bigint, min(from_block)), GREATEST($4::bigint, max(to_block)) FROM merged`,
    [chainId, filterId, from, to],
  )
}

export type ChainState = {
  chainId: number
  headBlock: number | null
  safeBlock: number | null
  finalizedBlock: number | null
  liveBlock: number | null
  liveHash: string | null
}

export async function getChainState(db: Queryable, chainId: number): Promise<ChainState | null> {
  const { rows } = await db.query(
    `SELECT chain_id AS "chainId", head_block AS "headBlock", safe_block AS "safeBlock", finalized_block AS "finalizedBlock",
            live_block AS "liveBlock", live_hash AS "liveHash"
     FROM chain_state WHERE chain_id = $1`,
    [chainId],
  )
  return (rows[0] as ChainState | undefined) ?? null
}

/** Updates the given fields of a chain's state (creating the row), leaving the others as they are. */
export async function updateChainState(db: Queryable, chainId: number, fields: Partial<Omit<ChainState, 'chainId'>>): Promise<void> {
  const columns = {
    headBlock: 'head_block',
    safeBlock: 'safe_block',
    finalizedBlock: 'finalized_block',
    liveBlock: 'live_block',
    liveHash: 'live_hash',
  } as const
  const entries = (Object.keys(columns) as (keyof typeof columns)[]).filter((key) => fields[key] !== undefined)
  if (entries.length === 0) return
  const names = entries.map((key) => columns[key])
  const values = entries.map((key) => fields[key])
  await db.query(
    `INSERT INTO chain_state (chain_id, ${names.join(', ')}) VALUES ($1, ${names.map((_, i) => `$${i + 2}`).join(', ')})
     ON CONFLICT (chain_id) DO UPDATE SET ${names.map((name) => `${name} = EXCLUDED.${name}`).join(', ')}, updated_at = now()`,
    [chainId, ...values],
  )
}

/** Every filter the indexer has worked for on a chain. */
export async function listFilters(db: Queryable, chainId: number): Promise<FilterRecord[]> {
  const { rows } = await db.query(
    `SELECT chain_id AS "chainId", filter_id AS "filterId", addresses, topics FROM sync_filters WHERE chain_id = $1`,
    [chainId],
  )
  return rows as FilterRecord[]
}

/** The chains the database holds filters for, ascending: what an API without a node serves. */
export async function indexedChainIds(db: Queryable): Promise<number[]> {
  const { rows } = await db.query<{ chain_id: number }>(`SELECT DISTINCT chain_id FROM sync_filters ORDER BY chain_id`)
  return rows.map((row) => row.chain_id)
}
