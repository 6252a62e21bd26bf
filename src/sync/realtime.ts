import type pg from 'pg'
import type { Logger } from '../logger.js'
import {
  advanceFinality,
  applyReorg,
  confirmedBlocks,
  orphanBlocks,
  statusBelow,
  getCanonicalBlock,
  getChainState,
  insertBlocks,
  storeTipBlocks,
  toLogRows,
  updateChainState,
  withTransaction,
  type BlockRow,
  type LogInput,
  type TransactionRow,
  type Status,
} from '../store/index.js'
import type { Interval } from '../utils/interval.js'
import type { LogFilter } from './filter.js'
import { crashPoint } from '../utils/crashPoint.js'

/** Blocks stored per step when catching up, so each database transaction stays short. */
const MAX_BLOCKS_PER_STEP = 100

export type Header = BlockRow & { parentHash: string }

/** What one step of the follower did, for logs, metrics and tests. */
export type FollowEvent =
  | { type: 'idle'; head: number }
  | { type: 'blocks'; from: number; to: number; head: number; logs: number; confirmed: number; dropped: number }
  | { type: 'reorg'; forkBlock: number; depth: number; logsRemoved: number }
  | { type: 'finalize'; from: number; to: number; logs: number }
  | { type: 'retry'; reason: string }

export class DeepReorgError extends Error {
  override name = 'DeepReorgError'
}

export type HeadFollowerContext = {
  pool: pg.Pool
  logger: Logger
  chainId: number
  filter: LogFilter
  filterId: string
  /** Where live indexing begins on the first start (`latest` = the head at that moment). */
  startBlock: number | 'latest'
  /** The node's header at a height or tag; null when it has none. */
  fetchHeader: (block: number | 'latest') => Promise<Header | null>
  fetchHeaders: (numbers: readonly number[]) => Promise<Header[]>
  fetchLogs: (range: Interval, filter: LogFilter) => Promise<LogInput[]>
  finalizedBlock: () => Promise<number | null>
  /** Stores the canonical logs of these blocks again for every filter whose progress covers them. */
  refetchBlocks?: (numbers: readonly number[]) => Promise<void>
  attribute?: (rows: readonly TransactionRow[], statusOf: (blockNumber: number) => Status, range: Interval) => Promise<(client: pg.PoolClient) => Promise<void>>
}

/**
 * The head follower: each `step` stores the next canonical blocks after the last one it stored,
 * checking parent hashes; a mismatch walks back to the fork point and orphans what lies above it.
 */
export function createHeadFollower(context: HeadFollowerContext) {
  const { pool, chainId, logger } = context
  let lastHead: number | undefined

  /** Sets the follower's position just before `startBlock` on the very first start. */
  async function initialise(): Promise<{ liveBlock: number; liveHash: string }> {
    const state = await getChainState(pool, chainId)
    if (state?.liveBlock != null && state.liveHash) return { liveBlock: state.liveBlock, liveHash: state.liveHash }
    const head = await context.fetchHeader('latest')
    if (!head) throw new Error('node has no latest block')
    const start = context.startBlock === 'latest' ? head.number : context.startBlock
    const anchor = start > 0 ? await context.fetchHeader(start - 1) : null
    await withTransaction(pool, async (client) => {
      if (anchor) await insertBlocks(client, chainId, [anchor], () => 'confirmed')
      await updateChainState(client, chainId, { liveBlock: start - 1, liveHash: anchor?.hash ?? `0x${'0'.repeat(64)}`, headBlock: head.number })
    })
    logger.info({ chain_id: chainId, start_block: start }, 'live indexing starts')
    return { liveBlock: start - 1, liveHash: anchor?.hash ?? `0x${'0'.repeat(64)}` }
  }

  /**
   * Walks back from `from` until the stored header equals the node's: that is the fork point. A height
   * with no stored header (stored by a backfill from logs alone, or never) proves nothing, so the walk
   * goes on, down to the finalized block at most.
   */
  async function findForkPoint(from: number, finalized: number | null): Promise<{ number: number; hash: string }> {
    for (let n = from; n >= 0; n--) {
      const [stored, onNode] = await Promise.all([getCanonicalBlock(pool, chainId, n), context.fetchHeader(n)])
      if (!onNode) throw new Error(`node has no block ${n}`)
      if (stored?.hash === onNode.hash) return { number: n, hash: onNode.hash }
      const final = finalized !== null && n <= finalized
      if (stored && final) {
        throw new DeepReorgError(`reorg reaches block ${n}, at or below the finalized block ${finalized}; not rewriting finalized data`)
      }
      if (final || n === 0) return { number: n, hash: onNode.hash }
    }
    throw new DeepReorgError('reorg reaches genesis')
  }

  /**
   * Before rows become final, checks the blocks of those still `confirmed` against the node: rows a
   * backfill stored from a fork the follower never saw are marked removed and their blocks fetched again.
   */
  async function finalize(): Promise<FollowEvent[]> {
    const finalized = await context.finalizedBlock()
    const state = await getChainState(pool, chainId)
    if (finalized === null || state?.liveBlock == null) return []
    const previous = state.finalizedBlock ?? -1
    const target = Math.min(finalized, state.liveBlock)
    if (target <= previous) return []
    const events: FollowEvent[] = []
    const stored = await confirmedBlocks(pool, chainId, [previous, target])
    if (stored.length > 0) {
      const onNode = new Map((await context.fetchHeaders([...new Set(stored.map((b) => b.number))])).map((h) => [h.number, h]))
      const orphaned = stored.filter((block) => onNode.get(block.number)?.hash !== block.hash)
      if (orphaned.length > 0) {
        const logsRemoved = await orphanBlocks(pool, chainId, orphaned.map((block) => block.hash))
        crashPoint('orphans-marked')
        logger.warn({ chain_id: chainId, blocks: orphaned.map((b) => b.number), logs_removed: logsRemoved }, 'stored rows from an orphaned fork')
        await context.refetchBlocks?.(orphaned.map((block) => block.number))
        events.push({ type: 'reorg', forkBlock: Math.min(...orphaned.map((b) => b.number)) - 1, depth: 0, logsRemoved })
      }
    }
    const logs = await advanceFinality(pool, chainId, [previous, target])
    events.push({ type: 'finalize', from: previous + 1, to: target, logs })
    return events
  }

  async function step(): Promise<FollowEvent[]> {
    const { liveBlock, liveHash } = await initialise()
    const head = await context.fetchHeader('latest')
    if (!head) return [{ type: 'retry', reason: 'node has no latest block' }]
    if (head.number !== lastHead) {
      await updateChainState(pool, chainId, { headBlock: head.number })
      lastHead = head.number
    }
    if (head.number <= liveBlock) {
      const atLive = await context.fetchHeader(liveBlock)
      if (atLive && atLive.hash !== liveHash) return [await reorg(liveBlock, liveHash, atLive.hash)]
      const finalized = await finalize()
      return finalized.length > 0 ? finalized : [{ type: 'idle', head: head.number }]
    }

    const to = Math.min(head.number, liveBlock + MAX_BLOCKS_PER_STEP)
    const numbers = Array.from({ length: to - liveBlock }, (_, i) => liveBlock + 1 + i)
    const headers = await context.fetchHeaders(numbers)
    if (headers[0]!.parentHash !== liveHash) return [await reorg(liveBlock, liveHash, headers[0]!.parentHash)]
    for (let i = 1; i < headers.length; i++) {
      if (headers[i]!.parentHash !== headers[i - 1]!.hash) return [{ type: 'retry', reason: `chain changed under block ${headers[i]!.number}` }]
    }
    const logs = await context.fetchLogs([liveBlock + 1, to], context.filter)
    const hashAt = new Map(headers.map((h) => [h.number, h]))
    for (const log of logs) {
      if (hashAt.get(Number(log.blockNumber))?.hash !== log.blockHash?.toLowerCase()) {
        return [{ type: 'retry', reason: `log of block ${Number(log.blockNumber)} is from another fork` }]
      }
    }
    const rows = toLogRows(logs, (n) => hashAt.get(n)?.timestamp)
    const finalized = await context.finalizedBlock()
    const extraWrites = await context.attribute?.(rows, statusBelow(finalized), [liveBlock + 1, to])
    const stored = await storeTipBlocks(pool, {
      chainId,
      filterId: context.filterId,
      blocks: headers,
      rows,
      finalizedBlock: finalized,
      ...(extraWrites ? { extraWrites } : {}),
    })
    crashPoint('tip-stored')
    const events: FollowEvent[] = [{ type: 'blocks', from: liveBlock + 1, to, head: head.number, logs: rows.length, ...stored }]
    events.push(...(await finalize()))
    return events
  }

  async function reorg(liveBlock: number, oldHash: string, newHash: string): Promise<FollowEvent> {
    const state = await getChainState(pool, chainId)
    const fork = await findForkPoint(liveBlock, state?.finalizedBlock ?? null)
    const depth = liveBlock - fork.number
    const logsRemoved = await applyReorg(pool, { chainId, forkBlock: fork, depth, oldHash, newHash })
    crashPoint('reorg-marked')
    logger.warn({ chain_id: chainId, fork_block: fork.number, depth, logs_removed: logsRemoved }, 'reorg')
    return { type: 'reorg', forkBlock: fork.number, depth, logsRemoved }
  }

  return { step, initialise }
}

export type HeadFollower = ReturnType<typeof createHeadFollower>
