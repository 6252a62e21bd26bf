import type { FetchedBlock } from '../attribution/attributor.js'
import type { TransactionInput } from '../attribution/transaction.js'
import { InconsistentAnswerError, toBlockHeader, verifyLogsRequested, withRetry, type BlockHeader, type RpcBlockHeader, type RpcCall } from '../rpc/index.js'
import type { LogInput } from '../store/index.js'
import type { Interval } from '../utils/interval.js'
import { toRpcFilter, type LogFilter } from './filter.js'

/** Whether every log of `logs` is one `filter` asked for in `range`. */
function answersRequested(logs: readonly LogInput[], [fromBlock, toBlock]: Interval, filter: LogFilter): boolean {
  try {
    verifyLogsRequested(logs, { fromBlock, toBlock, ...toRpcFilter(filter) })
    return true
  } catch (error) {
    if (error instanceof InconsistentAnswerError) return false
    throw error
  }
}

/** A new block at the tip: its header and its transactions as the node sent them. */
export type TipBlock = BlockHeader & { transactions: readonly TransactionInput[] }

/** Blocks a step reads in one batch with its logs; past it (catching up), logs go through the chunked reader. */
export const BATCHED_STEP_BLOCKS = 20

type RpcFullBlock = RpcBlockHeader & { transactions: TransactionInput[] }
type RpcReceipt = { transactionHash: string; gasUsed: string } | null

export const toTipBlock = (block: RpcFullBlock): TipBlock & FetchedBlock => ({ ...toBlockHeader(block), transactions: block.transactions })

export type TipReaderParameters = {
  rpc: { batch<T>(calls: readonly RpcCall[]): Promise<T[]>; request<T>(method: string, params: unknown[]): Promise<T> }
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
    const block = await withRetry(() => rpc.request<RpcFullBlock | null>('eth_getBlockByNumber', ['latest', true]))
    return block ? toTipBlock(block) : null
  }

  /** Blocks with their transactions, in order; a height the node lacks yet is asked again (load-balanced endpoints). */
  async function blocks(numbers: readonly number[]): Promise<TipBlock[]> {
    if (numbers.length === 0) return []
    return withRetry(async () => {
      const answers = await rpc.batch<RpcFullBlock | null>(numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, true] })))
      return answers.map((block, i) => {
        if (!block) throw new Error(`node has no block ${numbers[i]}`)
        return toTipBlock(block)
      })
    })
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
    const gasUsed = new Map<string, number>()
    const assemble = (fetched: readonly TipBlock[]) => {
      const at = new Map([...have, ...fetched.map((block) => [block.number, block] as const)])
      return numbers.map((n) => at.get(n)!)
    }
    if (numbers.length <= BATCHED_STEP_BLOCKS) {
      const calls: RpcCall[] = [
        ...missing.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, true] })),
        ...filters.map((filter) => ({ method: 'eth_getLogs', params: [{ fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}`, ...toRpcFilter(filter) }] })),
        ...receipts.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
      ]
      const answers = await rpc.batch<unknown>(calls).catch(() => null)
      const fetched = answers?.slice(0, missing.length) as (RpcFullBlock | null)[] | undefined
      if (answers && fetched!.every(Boolean)) {
        const logs = answers.slice(missing.length, missing.length + filters.length) as LogInput[][]
        // Logs nobody asked for are a malformed answer: the part-by-part path below reads them again, checked.
        if (!logs.every((list, i) => answersRequested(list, [from, to], filters[i]!))) return readApart()
        ;(answers.slice(missing.length + filters.length) as RpcReceipt[]).forEach((receipt, i) => receipt && gasUsed.set(receipts[i]!, Number(receipt.gasUsed)))
        return { blocks: assemble(fetched!.map((block) => toTipBlock(block!))), logs, gasUsed }
      }
      // A refused or partial batch (a lagging node, a range too big to answer): read part by part, with retries and narrowing.
    }
    return readApart()

    async function readApart() {
      const fetched = await blocks(missing)
      const logs: LogInput[][] = []
      for (const filter of filters) logs.push(await fetchLogs([from, to], filter))
      return { blocks: assemble(fetched), logs, gasUsed }
    }
  }

  return { latest, blocks, step }
}

export type TipReader = ReturnType<typeof createTipReader>
