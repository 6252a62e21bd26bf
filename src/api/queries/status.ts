import { sql } from 'drizzle-orm'
import type { Database } from '../../store/index.js'
import { chainFacts, type ChainFacts } from './health.js'

/** Pre-confirmed logs are counted over this window; short, so rows are counted before they finalize. */
export const PENDING_RATE_WINDOW_SECONDS = 10

export type SyncStatus = {
  /** The node's head as the follower last saw it. */
  headBlock: number | null
  finalizedBlock: number | null
  indexedBlock: number | null
  indexedTimestamp: Date | null
  pendingLogsPerSecond: number
  reorgsLastHour: number
  chain: ChainFacts
}

/**
 * The follower's view of the chain from `chain_state`, reorgs handled in the last hour, and the rate
 * of pre-confirmed logs: rows first stored as pending in the last few seconds, still pending or since
 * claimed by their canonical block (a claim updates the row, so `updated_at` moves past `seen_at`).
 * Only unfinalized blocks are scanned.
 */
export async function getSyncStatus(db: Database, chainId: number): Promise<SyncStatus> {
  const result = await db.execute<{
    head_block: number | null
    finalized_block: number | null
    live_block: number | null
    live_ms: number | null
    pending_logs: number
    reorgs: number
    block_time_ms: number | null
    preconfirmations: boolean | null
    preconfirmations_source: 'probe' | 'config' | null
  }>(sql`
    select s.block_time_ms, s.preconfirmations, s.preconfirmations_source, s.head_block::int8 as head_block, s.finalized_block::int8 as finalized_block, s.live_block::int8 as live_block,
      (select extract(epoch from b.timestamp)::float8 * 1000 from blocks b where b.chain_id = s.chain_id and b.hash = s.live_hash) as live_ms,
      -- A chain without pre-confirmations has no pending rows to count: the scan of its unfinalized window is skipped.
      case when s.preconfirmations is false then 0 else (select count(*) from logs l
        where l.chain_id = s.chain_id and l.block_number > coalesce(s.finalized_block, -1)
          and l.seen_at >= now() - make_interval(secs => ${PENDING_RATE_WINDOW_SECONDS})
          and (l.status = 'pending' or l.updated_at > l.seen_at)) end::int8 as pending_logs,
      (select count(*) from reorgs r where r.chain_id = s.chain_id and r.detected_at >= now() - interval '1 hour')::int8 as reorgs
    from (select ${chainId}::int as chain_id) c
    left join chain_state s on s.chain_id = c.chain_id`)
  const row = result.rows[0]
  return {
    headBlock: row?.head_block ?? null,
    finalizedBlock: row?.finalized_block ?? null,
    indexedBlock: row?.live_block ?? null,
    indexedTimestamp: row?.live_ms == null ? null : new Date(row.live_ms),
    pendingLogsPerSecond: (row?.pending_logs ?? 0) / PENDING_RATE_WINDOW_SECONDS,
    reorgsLastHour: row?.reorgs ?? 0,
    chain: chainFacts(row ? { blockTimeMs: row.block_time_ms, preconfirmations: row.preconfirmations, preconfirmationsSource: row.preconfirmations_source } : null),
  }
}
