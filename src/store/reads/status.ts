import { sql, type Placeholder, type SQL } from 'drizzle-orm'
import { queryPrepared, type Database } from '../client.js'
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
  /** Attributed, confirmed transactions whose gas used the range jobs' follow-up has not filled yet. */
  gasUsedMissing: number
  /** Block time of the oldest confirmed log kept (retention deletes older ones). */
  oldestLogTimestamp: Date | null
  chain: ChainFacts
}

/** Logs of the chain's unfinalized blocks first stored in the last few seconds that meet `condition`. */
const recentLogs = (condition: SQL) => sql`(select count(*) from logs l
  where l.chain_id = s.chain_id and ${condition} and l.block_number > coalesce(s.finalized_block, -1)
    and l.seen_at >= now() - make_interval(secs => ${sql.raw(String(PENDING_RATE_WINDOW_SECONDS))}))`

/**
 * Logs of the chain's unfinalized blocks first stored as pending in the last few seconds and since claimed by
 * their canonical block (the claim moves `updated_at` past `seen_at`), read from the canonical key by block.
 * The bound is written into the statement, which is planned for it: given as a parameter, PostgreSQL expects a
 * third of each month above it and reads every month whole.
 */
async function claimedLogs(db: Database, chainId: number, finalizedBlock: number | string | null): Promise<number> {
  const above = Number(finalizedBlock ?? -1)
  if (!Number.isSafeInteger(above)) throw new Error(`finalized block ${finalizedBlock} is not a block number`)
  const { rows } = await db.$client.query<{ n: string }>(
    `select count(*) as n from logs l
     where l.chain_id = $1 and l.status <> 'pending' and l.block_number > ${above} and l.updated_at > l.seen_at
       and l.seen_at >= now() - make_interval(secs => ${PENDING_RATE_WINDOW_SECONDS})`,
    [chainId],
  )
  return Number(rows[0]!.n)
}

/** {@link getSyncStatus}'s statement, with a placeholder for the chain. */
const SYNC_STATUS = sql`
    select s.block_time_ms, s.preconfirmations, s.preconfirmations_source, s.head_block::int8 as head_block, s.finalized_block::int8 as finalized_block, s.live_block::int8 as live_block,
      (select extract(epoch from b.timestamp)::float8 * 1000 from blocks b where b.chain_id = s.chain_id and b.hash = s.live_hash) as live_ms,
      -- A chain without pre-confirmations has no pending rows to count: the scan of its unfinalized window is skipped.
      -- Pending rows (live or dropped) apart, each read from the partial index of its status by block: no index
      -- holds both, and asked together with the claimed ones (below) every month of logs was read whole.
      case when s.preconfirmations is false then 0 else
        ${recentLogs(sql`l.status = 'pending' and not l.removed`)} + ${recentLogs(sql`l.status = 'pending' and l.removed`)} end::int8 as pending_logs,
      (select count(*) from reorgs r where r.chain_id = s.chain_id and r.detected_at >= now() - interval '1 hour')::int8 as reorgs,
      -- From a partial index holding only the rows still owed: a backfill's tail, not history.
      (select count(distinct a.tx_hash) from attributions a
        where a.chain_id = c.chain_id and a.gas_used is null and a.status <> 'pending' and not a.removed)::int8 as gas_used_missing,
      -- The first entry of the canonical key: what retention has left of raw history.
      (select extract(epoch from l.block_timestamp)::float8 * 1000 from logs l
        where l.chain_id = c.chain_id and l.status <> 'pending' order by l.block_number limit 1) as oldest_log_ms
    from (select ${sql.placeholder('chainId')}::int as chain_id) c
    left join chain_state s on s.chain_id = c.chain_id`

/**
 * The follower's view of the chain from `chain_state`, reorgs handled in the last hour, and the rate
 * of pre-confirmed logs: rows first stored as pending in the last few seconds, still pending or since
 * claimed by their canonical block (a claim updates the row, so `updated_at` moves past `seen_at`).
 * Only unfinalized blocks are scanned.
 */
export async function getSyncStatus(db: Database, chainId: number): Promise<SyncStatus> {
  // Prepared once per connection: planned on every request, its reads of every month of `logs` and
  // `attributions` cost more to plan than to run.
  const [row] = await queryPrepared<{
    head_block: number | null
    finalized_block: number | null
    live_block: number | null
    live_ms: number | null
    pending_logs: number
    reorgs: number
    gas_used_missing: number
    oldest_log_ms: number | null
    block_time_ms: number | null
    preconfirmations: boolean | null
    preconfirmations_source: 'probe' | 'config' | null
  }>(db, 'sync-status', () => SYNC_STATUS, { chainId })
  const claimed = row?.preconfirmations === false ? 0 : await claimedLogs(db, chainId, row?.finalized_block ?? null)
  return {
    headBlock: row?.head_block ?? null,
    finalizedBlock: row?.finalized_block ?? null,
    indexedBlock: row?.live_block ?? null,
    indexedTimestamp: row?.live_ms == null ? null : new Date(row.live_ms),
    pendingLogsPerSecond: (Number(row?.pending_logs ?? 0) + claimed) / PENDING_RATE_WINDOW_SECONDS,
    reorgsLastHour: row?.reorgs ?? 0,
    gasUsedMissing: Number(row?.gas_used_missing ?? 0),
    oldestLogTimestamp: row?.oldest_log_ms == null ? null : new Date(row.oldest_log_ms),
    chain: chainFacts(
      row
        ? { blockTimeMs: row.block_time_ms, preconfirmations: row.preconfirmations, preconfirmationsSource: row.preconfirmations_source }
        : null,
    ),
  }
}

export type OpenRepair = { fromBlock: number; toBlock: number; reason: 'reorg' | 'orphaned'; quarantined: boolean }

/** Most open repairs one answer lists: past that, `complete: false` alone says enough. */
const OPEN_REPAIRS_LISTED = 100

/** `[fromBlock, toBlock]` with an open end made the first or last block there can be, as the repairs are compared with it. */
const repairRange = (fromBlock?: number, toBlock?: number) => ({ from: fromBlock ?? 0, to: toBlock ?? Number.MAX_SAFE_INTEGER })

/**
 * The values a keyset page's prepared statement takes beside its filters: the five columns of the cursor's key
 * (`after0`…`after4`), one row more than the page (whether more follow) and the block range of its open repairs.
 */
export const pageValues = (after: readonly unknown[] | undefined, limit: number, fromBlock?: number, toBlock?: number) => ({
  after0: after?.[0],
  after1: after?.[1],
  after2: after?.[2],
  after3: after?.[3],
  after4: after?.[4],
  limit: limit + 1,
  ...repairRange(fromBlock, toBlock),
})

/**
 * The open repairs of {@link openRepairsIn} over `[from, to]` (see {@link repairRange}) as one column,
 * JSON text or null when there are none (read by {@link pageOpenRepairs}): a page's own statement
 * carries it, so the page and its coverage are one round trip and one snapshot. An InitPlan, computed
 * once per statement whatever the rows. With the API's statements planned once (`genericPlans`), the
 * API bench at 10 M attributions served 20–40 % more requests per second, on 0.1–0.3 ms less CPU per
 * request in each of the API and PostgreSQL.
 */
export function openRepairsColumn(chainId: number | Placeholder, from: number | Placeholder, to: number | Placeholder): SQL<string | null> {
  return sql<
    string | null
  >`(select json_agg(json_build_array(r.from_block, r.to_block, r.reason, r.quarantined) order by r.from_block, r.to_block)::text
    from (select from_block::int8 as from_block, to_block::int8 as to_block, min(reason) as reason, bool_or(quarantined_at is not null) as quarantined
      from sync_repairs
      where chain_id = ${chainId} and to_block >= ${from} and from_block <= ${to}
      group by from_block, to_block order by from_block, to_block limit ${OPEN_REPAIRS_LISTED}) r)`
}

/** The repairs an {@link openRepairsColumn} holds. */
function openRepairsOf(column: string | null): OpenRepair[] {
  if (column === null) return []
  return (JSON.parse(column) as [number, number, OpenRepair['reason'], boolean][]).map(([fromBlock, toBlock, reason, quarantined]) => ({
    fromBlock,
    toBlock,
    reason,
    quarantined,
  }))
}

/**
 * The open repairs over a page's block range: those its first row carries ({@link openRepairsColumn};
 * `firstRow` undefined when the page has no row), else asked for alone.
 */
export async function pageOpenRepairs(
  db: Database,
  firstRow: string | null | undefined,
  chainId: number,
  fromBlock?: number,
  toBlock?: number,
): Promise<OpenRepair[]> {
  return firstRow === undefined ? openRepairsIn(db, chainId, fromBlock, toBlock) : openRepairsOf(firstRow)
}

/**
 * Open repairs (blocks some filter must read again after a reorg or orphan mark) touching
 * `[fromBlock, toBlock]` (either end open), merged across filters: rows of those blocks may be missing.
 * A page with rows carries them in its own statement ({@link openRepairsColumn}); this asks for them alone.
 */
export async function openRepairsIn(db: Database, chainId: number, fromBlock?: number, toBlock?: number): Promise<OpenRepair[]> {
  const [row] = await queryPrepared<{ open_repairs: string | null }>(
    db,
    'open-repairs-in',
    () => sql`select ${openRepairsColumn(sql.placeholder('chainId'), sql.placeholder('from'), sql.placeholder('to'))} as open_repairs`,
    { chainId, ...repairRange(fromBlock, toBlock) },
  )
  return openRepairsOf(row!.open_repairs)
}

export type ChainSummary = {
  chainId: number
  name: string | null
  headBlock: number | null
  indexedBlock: number | null
  finalizedBlock: number | null
  lagBlocks: number | null
}

/** Each of `chainIds` as `chain_state` holds it (what `analytics.chains` shows), in the order given. */
export async function listChainSummaries(db: Database, chainIds: readonly number[]): Promise<ChainSummary[]> {
  const result = await db.execute<{
    chain_id: number
    name: string | null
    head_block: number | null
    live_block: number | null
    finalized_block: number | null
  }>(sql`
    select c.chain_id, s.name, s.head_block::int8 as head_block, s.live_block::int8 as live_block, s.finalized_block::int8 as finalized_block
    from unnest(${`{${chainIds.join(',')}}`}::int[]) with ordinality as c(chain_id, position)
    left join chain_state s on s.chain_id = c.chain_id
    order by c.position`)
  return result.rows.map((row) => {
    const [head, live, finalized] = [row.head_block, row.live_block, row.finalized_block].map((value) =>
      value == null ? null : Number(value),
    )
    return {
      chainId: Number(row.chain_id),
      name: row.name,
      headBlock: head ?? null,
      indexedBlock: live ?? null,
      finalizedBlock: finalized ?? null,
      lagBlocks: head != null && live != null ? Math.max(0, head - live) : null,
    }
  })
}
