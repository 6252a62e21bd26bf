import { Bloom } from 'ox'
import type { FetchedBlock } from '../attribution/attributor.js'
import type { TransactionInput } from '../attribution/transaction.js'
import { InconsistentAnswerError, toBlockHeader, verifyLogsRequested, withRetry, type BlockHeader, type RpcBlockHeader, type RpcCall } from '../rpc/index.js'
import type { LogInput } from '../store/index.js'
import type { Interval } from '../utils/interval.js'
import { isEveryLog, toRpcFilter, type LogFilter } from './filter.js'

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
type RpcBlockReceipt = { transactionHash: string; blockHash: string; gasUsed: string; logs: LogInput[] }

/**
 * What a head poll brought: the newest block with its transactions and, where the answer provably
 * holds every log of that block, the logs of each followed filter and the gas used of its transactions.
 */
export type PolledHead = { block: TipBlock; reads?: { logs: LogInput[][]; gasUsed: Map<string, number> } }

/** Whether a block whose bloom is `bloom` may hold a log `filter` selects (its address, and its topic0, in the bloom). */
export function bloomMayMatch(bloom: string | undefined, filter: LogFilter): boolean {
  if (!bloom) return true
  const prepared = Bloom.prepare(bloom as `0x${string}`)
  const any = (values: readonly string[]) => values.length === 0 || values.some((value) => Bloom.containsPrepared(prepared, value as `0x${string}`))
  return any(filter.addresses) && any(filter.topics)
}

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
    const calls: RpcCall[] = [
      { method: 'eth_getBlockByNumber', params: ['latest', true] },
      ...(receipts ? [{ method: 'eth_getBlockReceipts', params: ['latest'] }] : []),
      ...filters.slice(receipts ? 1 : 0).map((filter) => ({ method: 'eth_getLogs', params: [{ fromBlock: 'latest', toBlock: 'latest', ...toRpcFilter(filter) }] })),
    ]
    let answers: unknown[]
    try {
      answers = await withRetry(() => rpc.batch<unknown>(calls))
    } catch (error) {
      const block = await latest()
      // The node answers a plain poll but not this one (no eth_getBlockReceipts, batches refused): poll plainly from now on.
      combined = false
      if (!block) throw error
      return { block }
    }
    const raw = answers[0] as RpcFullBlock | null
    if (!raw) return null
    const block = toTipBlock(raw)
    const reads = readsOf(block, filters, receipts, answers.slice(1))
    return reads ? { block, reads } : { block }
  }

  /** The polled block's logs per filter and gas used from the answers beside it, or undefined where they may be another block's or incomplete. */
  function readsOf(block: TipBlock, filters: readonly LogFilter[], receipts: boolean, answers: unknown[]): PolledHead['reads'] {
    const gasUsed = new Map<string, number>()
    const logs: LogInput[][] = []
    const ofBlock = (list: readonly LogInput[]) => list.every((log) => String(log.blockHash).toLowerCase() === block.hash)
    if (receipts) {
      const list = answers.shift() as RpcBlockReceipt[] | null
      if (!Array.isArray(list) || list.length !== block.transactions.length) return undefined
      if (!list.every((receipt) => String(receipt.blockHash).toLowerCase() === block.hash)) return undefined
      const blockLogs = list.flatMap((receipt) => receipt.logs)
      if (!ofBlock(blockLogs)) return undefined
      for (const receipt of list) gasUsed.set(receipt.transactionHash.toLowerCase(), Number(receipt.gasUsed))
      logs.push(blockLogs)
    }
    for (const filter of filters.slice(receipts ? 1 : 0)) {
      const list = answers.shift() as LogInput[] | null
      if (!Array.isArray(list) || !ofBlock(list)) return undefined
      // No log: the `latest` it read may have been another block, unless this block's bloom rules its logs out.
      if (list.length === 0 && bloomMayMatch(block.logsBloom, filter)) return undefined
      if (!answersRequested(list, [block.number, block.number], filter)) return undefined
      logs.push(list)
    }
    return { logs, gasUsed }
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
    const gasUsed = new Map<string, number>()
    const assemble = (fetched: readonly TipBlock[]) => {
      const at = new Map([...have, ...fetched.map((block) => [block.number, block] as const)])
      return numbers.map((n) => at.get(n)!)
    }
    if (numbers.length <= BATCHED_STEP_BLOCKS && isEveryLog(filters[0]!)) {
      // Every log followed: each block's receipts carry its logs and every transaction's gas used, in the blocks' batch.
      const calls: RpcCall[] = [
        ...missing.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, true] })),
        ...numbers.map((n) => ({ method: 'eth_getBlockReceipts', params: [`0x${n.toString(16)}`] })),
        ...filters.slice(1).map((filter) => ({ method: 'eth_getLogs', params: [{ fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}`, ...toRpcFilter(filter) }] })),
      ]
      const answers = await rpc.batch<unknown>(calls).catch(() => null)
      const fetched = answers?.slice(0, missing.length) as (RpcFullBlock | null)[] | undefined
      if (answers && fetched!.every(Boolean)) {
        const blocks = assemble(fetched!.map((block) => toTipBlock(block!)))
        const perBlock = answers.slice(missing.length, missing.length + numbers.length) as (RpcBlockReceipt[] | null)[]
        const others = answers.slice(missing.length + numbers.length) as LogInput[][]
        const whole = perBlock.every(
          (list, i) => Array.isArray(list) && list.length === blocks[i]!.transactions.length && list.every((receipt) => String(receipt.blockHash).toLowerCase() === blocks[i]!.hash),
        )
        if (whole && others.every((list, i) => answersRequested(list, [from, to], filters[i + 1]!))) {
          for (const list of perBlock) for (const receipt of list!) gasUsed.set(receipt.transactionHash.toLowerCase(), Number(receipt.gasUsed))
          return { blocks, logs: [perBlock.flatMap((list) => list!.flatMap((receipt) => receipt.logs)), ...others], gasUsed }
        }
      }
      // A refused or partial batch, receipts of another fork: read part by part, with retries and narrowing.
    } else if (numbers.length <= BATCHED_STEP_BLOCKS) {
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

  return { poll, blocks, step }
}

export type TipReader = ReturnType<typeof createTipReader>
