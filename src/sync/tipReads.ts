import {
  getBlockRequest,
  getBlocksWithTransactions,
  getBlockWithTransactions,
  getLogsRequest,
  getTransactionReceiptRequest,
  InconsistentAnswerError,
  missingBlock,
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
import { toRpcFilter, type LogFilter } from './filter.js'

/** A new block at the tip: its header and its transactions as the node sent them. */
export type TipBlock = BlockWithTransactions

/** Blocks a step reads in one batch with its logs; past it (catching up), logs go through the chunked reader. */
export const BATCHED_STEP_BLOCKS = 20

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

  /** Blocks with their transactions, in order; a height the node lacks yet is asked again (load-balanced endpoints). */
  async function blocks(numbers: readonly number[]): Promise<TipBlock[]> {
    if (numbers.length === 0) return []
    return withRetry(async () => (await getBlocksWithTransactions(rpc, numbers)).map((block, i) => block ?? missingBlock(numbers[i]!)))
  }

  /**
   * The step's reads for `range`: the blocks not in `have`, the logs of each filter, and gas used of
   * `receipts` (transactions of blocks in `have`), in one batch when the range is short; otherwise
   * blocks, then logs through the chunked reader (receipts are then left to attribution).
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
    if (numbers.length <= BATCHED_STEP_BLOCKS) {
      const asked: LogsRequest[] = filters.map((filter) => ({ fromBlock: from, toBlock: to, ...toRpcFilter(filter) }))
      const answers = await rpc
        .batch([...missing.map((n) => getBlockRequest(n, { includeTransactions: true })), ...asked.map(getLogsRequest), ...receipts.map(getTransactionReceiptRequest)])
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

    async function readApart() {
      const fetched = await blocks(missing)
      const logs: LogInput[][] = []
      for (const filter of filters) logs.push(await fetchLogs([from, to], filter))
      return { blocks: assemble(fetched), logs, gasUsed: new Map<string, number>() }
    }
  }

  return { latest, blocks, step }
}

export type TipReader = ReturnType<typeof createTipReader>
