import type pg from 'pg'
import type { Logger } from '../logger.js'
import type { RangeJobData, RangeJobResult } from '../queue/index.js'
import { getIntervals, isCovered, saveFilter, storeLogChunk, toLogRows, type BlockRow, type LogInput, type LogRow, type Status } from '../store/index.js'
import { alignedChunks, intervalDifference, intervalSum, type Interval } from '../utils/interval.js'
import { filterIdOf, normalizeFilter, type LogFilter } from './filter.js'

export type BackfillPlan = {
  filterId: string
  /** Parts of the range not stored yet. */
  gaps: Interval[]
  /** The gaps as range jobs of at most `chunkBlocks` blocks. */
  jobs: RangeJobData[]
  totalBlocks: number
  doneBlocks: number
}

/** Plans a backfill: what of `[from, to]` is missing for the filter, cut into aligned chunk jobs. */
export async function planBackfill(
  pool: pg.Pool,
  { chainId, filter, range, chunkBlocks }: { chainId: number; filter: LogFilter; range: Interval; chunkBlocks: number },
): Promise<BackfillPlan> {
  const normalized = normalizeFilter(filter)
  const filterId = filterIdOf(normalized)
  await saveFilter(pool, { chainId, filterId, ...normalized })
  const gaps = intervalDifference(range, await getIntervals(pool, chainId, filterId, range))
  const jobs = alignedChunks(gaps, chunkBlocks).map(([fromBlock, toBlock]) => ({
    chainId,
    filterId,
    addresses: [...normalized.addresses],
    topics: [...normalized.topics],
    fromBlock,
    toBlock,
  }))
  const totalBlocks = range[1] - range[0] + 1
  return { filterId, gaps, jobs, totalBlocks, doneBlocks: totalBlocks - intervalSum(gaps) }
}

/** How many blocks of `range` are stored for the filter. */
export async function storedBlocks(pool: pg.Pool, chainId: number, filterId: string, range: Interval): Promise<number> {
  const total = range[1] - range[0] + 1
  return total - intervalSum(intervalDifference(range, await getIntervals(pool, chainId, filterId, range)))
}

export type RangeContext = {
  pool: pg.Pool
  logger: Logger
  /** Every log of the range matching the filter, as the node returns them (adaptive, never partial). */
  fetchLogs: (range: Interval, filter: LogFilter) => Promise<LogInput[]>
  /** Headers of the given blocks, for nodes whose logs carry no `blockTimestamp`. */
  fetchBlocks: (numbers: readonly number[]) => Promise<BlockRow[]>
  /** The node's finalized block (or head − depth), so rows below it are stored as finalized. */
  finalizedBlock: () => Promise<number | null>
  /** Attribution of the rows' transactions, prepared before the database transaction, written inside it. */
  attribute?: (rows: readonly LogRow[], statusOf: (blockNumber: number) => Status, range: Interval) => Promise<(client: pg.PoolClient) => Promise<void>>
}

/** Runs one range job: fetch, decode, and store in one database transaction. */
export function createRangeProcessor(context: RangeContext) {
  return async function processRange(data: RangeJobData, { force = false } = {}): Promise<RangeJobResult> {
    const started = performance.now()
    const range: Interval = [data.fromBlock, data.toBlock]
    if (!force && (await isCovered(context.pool, data.chainId, data.filterId, range))) return { logs: 0, inserted: 0, stored: false }
    const filter = { addresses: data.addresses, topics: data.topics }
    const finalizedBlock = await context.finalizedBlock()
    // Headers of the blocks that may still be reorged, read before the logs: the finality check compares them with the node, empty blocks included.
    const unfinalized = Array.from({ length: range[1] - range[0] + 1 }, (_, i) => range[0] + i).filter((n) => finalizedBlock === null || n > finalizedBlock)
    let blocks: BlockRow[] = unfinalized.length > 0 ? await context.fetchBlocks(unfinalized) : []
    const logs = await context.fetchLogs(range, filter)

    const known = new Set(blocks.map((block) => block.number))
    const missing = [...new Set(logs.filter((log) => log.blockTimestamp == null).map((log) => Number(log.blockNumber)))].filter((n) => !known.has(n))
    if (missing.length > 0) blocks = [...blocks, ...(await context.fetchBlocks(missing))]
    const timestamps = new Map(blocks.map((block) => [block.number, block.timestamp]))
    const rows = toLogRows(logs, (blockNumber) => timestamps.get(blockNumber))

    const extraWrites = await context.attribute?.(rows, (n) => (finalizedBlock !== null && n <= finalizedBlock ? 'finalized' : 'confirmed'), range)
    const result = await storeLogChunk(context.pool, {
      chainId: data.chainId,
      filterId: data.filterId,
      range,
      rows,
      blocks,
      finalizedBlock,
      force,
      ...(extraWrites ? { extraWrites } : {}),
    })
    context.logger.info(
      {
        chain_id: data.chainId,
        from_block: data.fromBlock,
        to_block: data.toBlock,
        logs: rows.length,
        inserted: result.inserted,
        stored: result.stored,
        duration_ms: Math.round(performance.now() - started),
      },
      result.stored ? 'range stored' : 'range already stored',
    )
    return { logs: rows.length, inserted: result.inserted, stored: result.stored }
  }
}
