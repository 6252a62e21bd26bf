import type pg from 'pg'
import type { Logger } from '../internal/logger.js'
import {
  getIntervals,
  isCovered,
  joinPrepared,
  prepareLogs,
  saveFilter,
  statusBelow,
  storeLogChunk,
  toLogRows,
  type FilterRange,
  type LogInput,
  type PreparedLogs,
  type Status,
  type TransactionRow,
} from '../store/index.js'
import { alignedChunks, intervalDifference, intervalSum, type Interval } from '../utils/interval.js'
import { filterIdOf, isEveryLog, normalizeFilter, type LogFilter } from './filter.js'
import type { Header } from '../reorg/index.js'
import { blocksForTarget, FatalError, logsJsonBytes, toKindedError, verifyLogs, type LogsDensity } from '../rpc/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import { ChainMismatchError, type ChainIdentity } from '../chains/index.js'

/**
 * Logs per `eth_getLogs` request a range job aims at: the parsed answer then fits the young generation
 * and dies there, where a whole 1,000-block chunk of a busy chain (~25,000 logs, 15 MB) outlived
 * collections and cost the old generation's (harness/bench/README.md).
 */
const LOGS_PER_REQUEST = 2_500
/** JSON bytes per request aimed at: 2,500 logs of 4 KB data each would be 20 MB. */
const BYTES_PER_REQUEST = 4 * 1024 * 1024
/** The first request of the first range: no density is known yet. */
const FIRST_REQUEST_BLOCKS = 100

export type RangeJobResult = { logs: number; inserted: number; stored: boolean }

export type BackfillPlan = {
  filterId: string
  /** Parts of the range not stored yet. */
  gaps: Interval[]
  /** The gaps as range jobs of at most `chunkBlocks` blocks. */
  jobs: FilterRange[]
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
  /** The chain this worker's node serves: a job for another chain is refused before anything is read or written. */
  chain: Pick<ChainIdentity, 'chainId' | 'verify'>
  /** Every log of the range matching the filter, as the node returns them (adaptive, never partial). */
  fetchLogs: (range: Interval, filter: LogFilter) => Promise<LogInput[]>
  /** Headers of the given blocks: to check unfinalized blocks' logs against, and for nodes whose logs carry no `blockTimestamp`. */
  fetchBlocks: (numbers: readonly number[]) => Promise<Header[]>
  /** The node's finalized block (or head − depth), so rows below it are stored as finalized. */
  finalizedBlock: () => Promise<number | null>
  /** Logs per `eth_getLogs` request to aim at. @default LOGS_PER_REQUEST */
  logsPerRequest?: number
  /** JSON bytes per `eth_getLogs` request to aim at. @default BYTES_PER_REQUEST */
  bytesPerRequest?: number
  /** Called with each request's range and what its answer held. */
  onLogsRequest?: (range: Interval, density: LogsDensity) => void
  /**
   * Called once the range is stored (or found stored: a retry after a failure here), e.g. to queue the
   * follow-up that fills gas used; a failure fails the job, which then retries.
   */
  afterStored?: (data: FilterRange, blockSizes: ReadonlyMap<string, number>) => Promise<void>
  /** Attribution of the rows' transactions, prepared before the database transaction, written inside it. */
  attribute?: (
    rows: readonly TransactionRow[],
    statusOf: (blockNumber: number) => Status,
    range: Interval,
    blockSizes?: ReadonlyMap<string, number>,
    /** The hash of each unfinalized block as its header was read (stored with the range and checked by finality). */
    headers?: ReadonlyMap<number, string>,
  ) => Promise<(client: pg.PoolClient) => Promise<void>>
}

/** The headers of the blocks of `[from, to]` among those fetched. */
function headersWithin(headerAt: ReadonlyMap<number, Header>, [from, to]: Interval): Map<number, Header> {
  const within = new Map<number, Header>()
  for (const [number, header] of headerAt) if (number >= from && number <= to) within.set(number, header)
  return within
}

/** Runs one range job: fetch, decode, and store in one database transaction. */
export function createRangeProcessor(context: RangeContext) {
  const target = { logs: context.logsPerRequest ?? LOGS_PER_REQUEST, bytes: context.bytesPerRequest ?? BYTES_PER_REQUEST }
  // The density of the last answer, carried into the next range's first request.
  let last: LogsDensity | undefined
  /**
   * The range's logs in requests of about `logsPerRequest` logs, each prepared for storing as
   * soon as it arrives, while the next request is in flight: its parsed logs die young, and while the
   * transactions are fetched only the `COPY` data and one row per transaction wait. Returns them with
   * the headers fetched for blocks whose logs carry no timestamp.
   */
  async function fetchPrepared(data: FilterRange, range: Interval, headers: readonly Header[], finalizedBlock: number | null) {
    const headerAt = new Map(headers.map((header) => [header.number, header]))
    const everyLog = isEveryLog(data)
    const parts: PreparedLogs[] = []
    const blocks = [...headers]
    const timestamps = new Map(headers.map((block) => [block.number, block.timestamp]))
    const timestampsMs = new Map(headers.map((block) => [block.number, block.timestampMs]))
    type LogsRequest = { part: Interval; logs: Promise<LogInput[]> }
    const request = (from: number, size: number): LogsRequest => {
      const part: Interval = [from, Math.min(range[1], from + size - 1)]
      const logs = context.fetchLogs(part, { addresses: data.addresses, topics: data.topics })
      // Awaited in the next turn; a failure while this turn is processed must not go unhandled meanwhile.
      logs.catch(() => {})
      return { part, logs }
    }
    let next: LogsRequest | undefined = request(range[0], last ? blocksForTarget(last, target) : FIRST_REQUEST_BLOCKS)
    while (next) {
      const part: Interval = next.part
      const logs: LogInput[] = await next.logs
      // The next request is sized by how dense this one was (logs and bytes), and sent before this one is processed.
      last = { blocks: part[1] - part[0] + 1, logs: logs.length, bytes: logsJsonBytes(logs) }
      context.onLogsRequest?.(part, last)
      next = part[1] < range[1] ? request(part[1] + 1, blocksForTarget(last, target)) : undefined
      verifyLogs(logs, { headers: headersWithin(headerAt, part), everyLog })
      const missing = [...new Set(logs.filter((log) => log.blockTimestamp == null).map((log) => Number(log.blockNumber)))].filter(
        (n) => !timestamps.has(n),
      )
      for (const block of missing.length > 0 ? await context.fetchBlocks(missing) : []) {
        blocks.push(block)
        timestamps.set(block.number, block.timestamp)
        timestampsMs.set(block.number, block.timestampMs)
      }
      const rows = toLogRows(
        logs,
        (blockNumber) => timestamps.get(blockNumber),
        (blockNumber) => timestampsMs.get(blockNumber),
      )
      parts.push(prepareLogs(rows, data.chainId, finalizedBlock))
    }
    return { prepared: joinPrepared(parts), blocks }
  }

  /**
   * Reads and stores one range. A failure asking again cannot change rejects as a `FatalError`, so a
   * queue fails the job at once without reading node errors itself; any other failure is left as it is.
   */
  return async function processRange(data: FilterRange): Promise<RangeJobResult> {
    try {
      return await readAndStore(data)
    } catch (error) {
      const kinded = toKindedError(error)
      throw kinded instanceof FatalError ? kinded : error
    }
  }

  async function readAndStore(data: FilterRange): Promise<RangeJobResult> {
    const started = performance.now()
    const range: Interval = [data.fromBlock, data.toBlock]
    // Two deployments sharing a Redis prefix, or a node swapped under a worker, must not store one chain's logs as another's.
    if (data.chainId !== context.chain.chainId) {
      const error = new ChainMismatchError(
        data.chainId,
        context.chain.chainId,
        `range job ${data.fromBlock}–${data.toBlock} refused: this worker's node`,
      )
      context.logger.error(
        { chain_id: data.chainId, node_chain_id: context.chain.chainId, from_block: data.fromBlock, to_block: data.toBlock },
        'range job for another chain refused',
      )
      throw error
    }
    await context.chain.verify()
    if (await isCovered(context.pool, data.chainId, data.filterId, range)) {
      await context.afterStored?.(data, new Map())
      return { logs: 0, inserted: 0, stored: false }
    }
    const finalizedBlock = await context.finalizedBlock()
    // Headers of the blocks that may still be reorged, read before the logs: the finality check compares them with the node, empty blocks included.
    const unfinalized = Array.from({ length: range[1] - range[0] + 1 }, (_, i) => range[0] + i).filter(
      (n) => finalizedBlock === null || n > finalizedBlock,
    )
    const headers = unfinalized.length > 0 ? await context.fetchBlocks(unfinalized) : []
    const { prepared, blocks } = await fetchPrepared(data, range, headers, finalizedBlock)

    // The headers read say how many transactions their blocks hold: only those may be read whole.
    const blockSizes = new Map(
      blocks.flatMap((block) => (block.transactionCount === undefined ? [] : [[block.hash, block.transactionCount] as const])),
    )
    const extraWrites = await context.attribute?.(
      prepared.transactions,
      statusBelow(finalizedBlock),
      range,
      blockSizes,
      new Map(headers.map((block) => [block.number, block.hash])),
    )
    // The node may have failed and come back as another one while the range was read.
    await context.chain.verify()
    const result = await storeLogChunk(context.pool, {
      chainId: data.chainId,
      filterId: data.filterId,
      range,
      logs: prepared,
      blocks,
      finalizedBlock,
      ...(extraWrites ? { extraWrites } : {}),
    })
    if (result.stored) crashPoint('range-stored')
    // The sizes of the blocks holding logs, for the follow-up's choice between whole-block and per-transaction receipts.
    const withLogs = new Set(prepared.transactions.map((row) => row.blockHash))
    await context.afterStored?.(data, new Map([...blockSizes].filter(([blockHash]) => withLogs.has(blockHash))))
    context.logger.info(
      {
        chain_id: data.chainId,
        from_block: data.fromBlock,
        to_block: data.toBlock,
        logs: prepared.copy.rows,
        inserted: result.inserted,
        stored: result.stored,
        duration_ms: Math.round(performance.now() - started),
      },
      result.stored ? 'range stored' : 'range already stored',
    )
    return { logs: prepared.copy.rows, inserted: result.inserted, stored: result.stored }
  }
}
