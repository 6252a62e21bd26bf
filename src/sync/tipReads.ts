import { Bloom } from 'ox'
import {
  getBlockReceiptsRequest,
  getBlockRequest,
  getBlocksWithTransactions,
  getBlockWithTransactions,
  getLogsRequest,
  getTransactionReceiptRequest,
  InconsistentAnswerError,
  missingBlock,
  parseBlockReceiptsWithLogs,
  parseBlockWithTransactions,
  parseLogs,
  parseReceipt,
  withRetry,
  type BlockWithTransactions,
  type LogsRequest,
  type RpcClient,
} from '../rpc/index.js'
import type { LogInput } from '../store/index.js'
import type { Interval } from '../utils/interval.js'
import { isEveryLog, toRpcFilter, type LogFilter } from './filter.js'

/** A new block at the tip: its header and its transactions as the node sent them. */
export type TipBlock = BlockWithTransactions

/** Blocks a step reads in one batch with its logs; past it (catching up), logs go through the chunked reader. */
export const BATCHED_STEP_BLOCKS = 20

/**
 * What a head poll brought: the newest block with its transactions and, where the answer provably
 * holds every log of that block, the logs of each followed filter and the gas used of its transactions.
 */
export type PolledHead = { block: TipBlock; reads?: { logs: LogInput[][]; gasUsed: Map<string, number> } }

/** Whether a block whose bloom is `bloom` may hold a log `filter` selects (its address, and its topic0, in the bloom). */
export function bloomMayMatch(bloom: string | undefined, filter: LogFilter): boolean {
  if (!bloom) return true
  const prepared = Bloom.prepare(bloom as `0x${string}`)
  const any = (values: readonly string[]) =>
    values.length === 0 || values.some((value) => Bloom.containsPrepared(prepared, value as `0x${string}`))
  return any(filter.addresses) && any(filter.topics)
}

export type TipReaderParameters = {
  rpc: Pick<RpcClient, 'request' | 'batch'>
  /** The chunked, self-narrowing `eth_getLogs` reader, for ranges too wide or answers too big for one batch. */
  fetchLogs: (range: Interval, filter: LogFilter) => Promise<LogInput[]>
}

/**
 * The head follower's node reads, as few calls and requests as a step allows: the newest block with
 * its transactions in one call; a step's missing blocks (with transactions) and its logs for every
 * followed filter in one batch, with the receipts of transactions already known to need gas used.
 */
export function createTipReader({ rpc, fetchLogs }: TipReaderParameters) {
  /** The node's newest block with its transactions (`eth_getBlockByNumber("latest", true)`). */
  async function latest(): Promise<TipBlock | null> {
    return withRetry(() => getBlockWithTransactions(rpc, 'latest'))
  }

  /** Cleared when a node refuses the combined poll while it answers a plain one: it is then polled plainly. */
  let combined = true

  /**
   * The newest block with its transactions and, in the same request, what a step needs of it: its
   * receipts (logs and gas used) where the first filter follows every log, else `eth_getLogs` of the
   * `latest` block per filter. Two calls in one request bring a new block whole; the reads are kept
   * only where they are the polled block's (same hash, every transaction's receipt; an empty answer
   * only where the block's bloom rules out the filter's logs).
   */
  async function poll(filters: readonly LogFilter[]): Promise<PolledHead | null> {
    if (!combined || filters.length === 0) {
      const block = await latest()
      return block && { block }
    }
    const receipts = isEveryLog(filters[0]!)
    const asked: LogsRequest[] = filters
      .slice(receipts ? 1 : 0)
      .map((filter) => ({ fromBlock: 'latest', toBlock: 'latest', ...toRpcFilter(filter) }))
    let answers: unknown[]
    try {
      answers = await withRetry(() =>
        rpc.batch([
          getBlockRequest('latest', { includeTransactions: true }),
          ...(receipts ? [getBlockReceiptsRequest('latest')] : []),
          ...asked.map(getLogsRequest),
        ]),
      )
    } catch (error) {
      const block = await latest()
      // The node answers a plain poll but not this one (no eth_getBlockReceipts, batches refused): poll plainly from now on.
      combined = false
      if (!block) throw error
      return { block }
    }
    const block = parseBlockWithTransactions(answers[0])
    if (!block) return null
    const reads = readsOf(block, filters, receipts, answers.slice(1))
    return reads ? { block, reads } : { block }
  }

  /** The polled block's logs per filter and gas used from the answers beside it, or undefined where they may be another block's or incomplete. */
  function readsOf(block: TipBlock, filters: readonly LogFilter[], receipts: boolean, answers: unknown[]): PolledHead['reads'] {
    const gasUsed = new Map<string, number>()
    const logs: LogInput[][] = []
    const ofBlock = (list: readonly { blockHash: string | null }[]) =>
      list.every((log) => String(log.blockHash).toLowerCase() === block.hash)
    try {
      if (receipts) {
        const read = parseBlockReceiptsWithLogs(answers.shift())
        if (
          !read ||
          read.receipts.length !== block.transactions.length ||
          !read.receipts.every((receipt) => receipt.blockHash === block.hash)
        )
          return undefined
        if (!ofBlock(read.logs)) return undefined
        for (const receipt of read.receipts) gasUsed.set(receipt.transactionHash, receipt.gasUsed)
        logs.push(read.logs as LogInput[])
      }
      for (const filter of filters.slice(receipts ? 1 : 0)) {
        const list = parseLogs(answers.shift(), { fromBlock: block.number, toBlock: block.number, ...toRpcFilter(filter) })
        if (!ofBlock(list)) return undefined
        // No log: the `latest` it read may have been another block, unless this block's bloom rules its logs out.
        if (list.length === 0 && bloomMayMatch(block.logsBloom, filter)) return undefined
        logs.push(list as LogInput[])
      }
    } catch (error) {
      if (error instanceof InconsistentAnswerError) return undefined
      throw error
    }
    return { logs, gasUsed }
  }

  /** Blocks with their transactions, in order; a height the node lacks yet is asked again (load-balanced endpoints). */
  async function blocks(numbers: readonly number[]): Promise<TipBlock[]> {
    if (numbers.length === 0) return []
    return withRetry(async () => (await getBlocksWithTransactions(rpc, numbers)).map((block, i) => block ?? missingBlock(numbers[i]!)))
  }

  /**
   * The step's reads for `range`: the blocks not in `have`, the logs of each filter, and gas used, in
   * one batch when the range is short: where every log is followed, each block's receipts (its logs and
   * every transaction's gas used); else `eth_getLogs` per filter and the receipts of `receipts`
   * (transactions of blocks in `have`). Otherwise blocks, then logs through the chunked reader (gas
   * used is then left to attribution).
   */
  async function step(
    [from, to]: Interval,
    have: ReadonlyMap<number, TipBlock>,
    filters: readonly LogFilter[],
    receipts: readonly string[],
  ): Promise<{ blocks: TipBlock[]; logs: LogInput[][]; gasUsed: Map<string, number> }> {
    const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i)
    const missing = numbers.filter((n) => !have.has(n))
    const assemble = (fetched: readonly TipBlock[]) => {
      const at = new Map([...have, ...fetched.map((block) => [block.number, block] as const)])
      return numbers.map((n) => at.get(n)!)
    }
    if (numbers.length <= BATCHED_STEP_BLOCKS && isEveryLog(filters[0]!)) {
      // Every log followed: each block's receipts carry its logs and every transaction's gas used, in the blocks' batch.
      const asked: LogsRequest[] = filters.slice(1).map((filter) => ({ fromBlock: from, toBlock: to, ...toRpcFilter(filter) }))
      const answers = await rpc
        .batch([
          ...missing.map((n) => getBlockRequest(n, { includeTransactions: true })),
          ...numbers.map(getBlockReceiptsRequest),
          ...asked.map(getLogsRequest),
        ])
        .catch(() => null)
      const read = answers && readReceiptsBatch(answers, asked)
      if (read) return read
      // A refused, partial or malformed batch, receipts of another fork: read part by part, with retries and checks.
    } else if (numbers.length <= BATCHED_STEP_BLOCKS) {
      const asked: LogsRequest[] = filters.map((filter) => ({ fromBlock: from, toBlock: to, ...toRpcFilter(filter) }))
      const answers = await rpc
        .batch([
          ...missing.map((n) => getBlockRequest(n, { includeTransactions: true })),
          ...asked.map(getLogsRequest),
          ...receipts.map(getTransactionReceiptRequest),
        ])
        .catch(() => null)
      const read = answers && readBatch(answers, asked)
      if (read) return { blocks: assemble(read.fetched), logs: read.logs, gasUsed: read.gasUsed }
      // A refused, partial or malformed batch (a lagging node, a range too big to answer, logs nobody asked
      // for): read part by part, with retries, narrowing and checks.
    }
    return readApart()

    /** The batch's answers decoded and checked, or null where a block is missing or an answer is malformed. */
    function readBatch(answers: readonly unknown[], asked: readonly LogsRequest[]) {
      try {
        const fetched = answers.slice(0, missing.length).map(parseBlockWithTransactions)
        if (!fetched.every((block): block is TipBlock => block !== null)) return null
        const logs = asked.map((request, i) => parseLogs(answers[missing.length + i], request) as LogInput[])
        const read = new Map<string, number>()
        answers.slice(missing.length + asked.length).forEach((answer, i) => {
          const receipt = parseReceipt(answer)
          if (receipt) read.set(receipts[i]!, receipt.gasUsed)
        })
        return { fetched, logs, gasUsed: read }
      } catch (error) {
        if (error instanceof InconsistentAnswerError) return null
        throw error
      }
    }

    /** The receipts batch decoded and checked: every block's receipts its own (same hash, one per transaction); else null. */
    function readReceiptsBatch(answers: readonly unknown[], asked: readonly LogsRequest[]) {
      try {
        const fetched = answers.slice(0, missing.length).map(parseBlockWithTransactions)
        if (!fetched.every((block): block is TipBlock => block !== null)) return null
        const blocks = assemble(fetched)
        const perBlock = answers.slice(missing.length, missing.length + numbers.length).map(parseBlockReceiptsWithLogs)
        const gasUsed = new Map<string, number>()
        const logs: LogInput[] = []
        for (const [i, read] of perBlock.entries()) {
          const block = blocks[i]!
          if (
            !read ||
            read.receipts.length !== block.transactions.length ||
            !read.receipts.every((receipt) => receipt.blockHash === block.hash)
          )
            return null
          for (const receipt of read.receipts) gasUsed.set(receipt.transactionHash, receipt.gasUsed)
          logs.push(...(read.logs as LogInput[]))
        }
        const others = asked.map((request, i) => parseLogs(answers[missing.length + numbers.length + i], request) as LogInput[])
        return { blocks, logs: [logs, ...others], gasUsed }
      } catch (error) {
        if (error instanceof InconsistentAnswerError) return null
        throw error
      }
    }

    async function readApart() {
      const fetched = await blocks(missing)
      const logs: LogInput[][] = []
      for (const filter of filters) logs.push(await fetchLogs([from, to], filter))
      return { blocks: assemble(fetched), logs, gasUsed: new Map<string, number>() }
    }
  }

  return { poll, blocks, step }
}

export type TipReader = ReturnType<typeof createTipReader>
