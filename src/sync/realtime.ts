import type pg from 'pg'
import { advanceToFinalized, applyReorg, findForkPoint, orphanBlocks, type Header } from '../chain/index.js'
import type { Logger } from '../logger.js'
import { InconsistentAnswerError, verifyLogs } from '../rpc/index.js'
import {
  blocksOffCanonical,
  statusBelow,
  getChainState,
  insertBlocks,
  storeTipBlocks,
  toLogRows,
  updateChainState,
  withTransaction,
  ZERO_HASH,
  type LogInput,
  type TransactionRow,
  type Status,
} from '../store/index.js'
import { crashPoint } from '../utils/crashPoint.js'
import type { Interval } from '../utils/interval.js'
import { isEveryLog, type LogFilter } from './filter.js'

/** Blocks stored per step when catching up, so each database transaction stays short. */
const MAX_BLOCKS_PER_STEP = 100

export type { Header }

/** What one step of the follower did, for logs, metrics and tests. */
export type FollowEvent =
  | { type: 'idle'; head: number }
  | { type: 'blocks'; from: number; to: number; head: number; logs: number; confirmed: number; diverged: number; dropped: number }
  | { type: 'reorg'; forkBlock: number; depth: number; logsRemoved: number }
  | { type: 'finalize'; from: number; to: number; logs: number }
  | { type: 'retry'; reason: string }

export type HeadFollowerContext = {
  pool: pg.Pool
  logger: Logger
  chainId: number
  filter: LogFilter
  filterId: string
  /** Further filters followed beside `filter` (the BuilderCodes registry's); their reorgs are repaired like any filter's. */
  alsoFollow?: readonly { filter: LogFilter; filterId: string }[]
  /** Where live indexing begins on the first start (`latest` = the head at that moment). */
  startBlock: number | 'latest'
  /** The node's header at a height or tag; null when it has none. */
  fetchHeader: (block: number | 'latest') => Promise<Header | null>
  fetchHeaders: (numbers: readonly number[]) => Promise<Header[]>
  fetchLogs: (range: Interval, filter: LogFilter) => Promise<LogInput[]>
  finalizedBlock: () => Promise<number | null>
  attribute?: (rows: readonly TransactionRow[], statusOf: (blockNumber: number) => Status, range: Interval) => Promise<(client: pg.PoolClient) => Promise<void>>
}

/**
 * The head follower: each `step` stores the next canonical blocks after the last one it stored,
 * checking parent hashes; a mismatch walks back to the fork point and hands the rest to `chain/`.
 */
export function createHeadFollower(context: HeadFollowerContext) {
  const { pool, chainId, logger } = context
  const also = context.alsoFollow ?? []
  let lastHead: number | undefined

  /** The logs of every followed filter in `range`, each answer checked against the headers, once each. */
  async function fetchFollowedLogs(range: Interval, headers: ReadonlyMap<number, Header>): Promise<LogInput[]> {
    const logs = await context.fetchLogs(range, context.filter)
    verifyLogs(logs, { headers, everyLog: isEveryLog(context.filter) })
    // An unfiltered follower already has every log of the other filters.
    if (isEveryLog(context.filter) || also.length === 0) return logs
    const seen = new Set(logs.map((log) => `${log.blockHash}:${log.logIndex}`))
    for (const { filter } of also) {
      const more = await context.fetchLogs(range, filter)
      verifyLogs(more, { headers, everyLog: false })
      for (const log of more) {
        const key = `${log.blockHash}:${log.logIndex}`
        if (!seen.has(key)) logs.push(log)
        seen.add(key)
      }
    }
    return logs
  }

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
      await updateChainState(client, chainId, { liveBlock: start - 1, liveHash: anchor?.hash ?? ZERO_HASH, headBlock: head.number })
    })
    logger.info({ chain_id: chainId, start_block: start }, 'live indexing starts')
    return { liveBlock: start - 1, liveHash: anchor?.hash ?? ZERO_HASH }
  }

  async function finalize(): Promise<FollowEvent[]> {
    const steps = await advanceToFinalized(pool, { chainId, finalizedBlock: await context.finalizedBlock(), fetchHeaders: context.fetchHeaders })
    return steps.map((step) => {
      if (step.type === 'finalize') return step
      logger.warn({ chain_id: chainId, blocks: step.blocks, logs_removed: step.logsRemoved }, 'stored rows from an orphaned fork')
      return { type: 'reorg', forkBlock: Math.min(...step.blocks) - 1, depth: 0, logsRemoved: step.logsRemoved }
    })
  }

  /**
   * Rows other writers (a backfill ahead of the follower) stored at these heights from another fork
   * than the canonical headers just stored: orphaned now, not when they reach finality.
   */
  async function orphanOffCanonical(headers: readonly Header[]): Promise<FollowEvent[]> {
    const stale = await blocksOffCanonical(pool, chainId, headers)
    if (stale.length === 0) return []
    const { logsRemoved } = await orphanBlocks(pool, chainId, stale)
    crashPoint('orphans-marked')
    logger.warn({ chain_id: chainId, blocks: stale.map((b) => b.number), logs_removed: logsRemoved }, 'stored rows from an orphaned fork')
    return [{ type: 'reorg', forkBlock: Math.min(...stale.map((b) => b.number)) - 1, depth: 0, logsRemoved }]
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
    const hashAt = new Map(headers.map((h) => [h.number, h]))
    let logs: LogInput[]
    try {
      logs = await fetchFollowedLogs([liveBlock + 1, to], hashAt)
    } catch (error) {
      if (error instanceof InconsistentAnswerError) return [{ type: 'retry', reason: error.message }]
      throw error
    }
    const rows = toLogRows(logs, (n) => hashAt.get(n)?.timestamp, (n) => hashAt.get(n)?.timestampMs)
    const finalized = await context.finalizedBlock()
    const extraWrites = await context.attribute?.(rows, statusBelow(finalized), [liveBlock + 1, to])
    const stored = await storeTipBlocks(pool, {
      chainId,
      filterId: context.filterId,
      alsoFilterIds: also.map((followed) => followed.filterId),
      blocks: headers,
      rows,
      finalizedBlock: finalized,
      ...(extraWrites ? { extraWrites } : {}),
    })
    crashPoint('tip-stored')
    const events: FollowEvent[] = [{ type: 'blocks', from: liveBlock + 1, to, head: head.number, logs: rows.length, ...stored }]
    events.push(...(await orphanOffCanonical(headers)))
    events.push(...(await finalize()))
    return events
  }

  async function reorg(liveBlock: number, oldHash: string, newHash: string): Promise<FollowEvent> {
    const state = await getChainState(pool, chainId)
    const forkBlock = await findForkPoint(pool, { chainId, from: liveBlock, finalizedBlock: state?.finalizedBlock ?? null, fetchHeader: context.fetchHeader })
    const depth = liveBlock - forkBlock.number
    const { logsRemoved, repairs } = await applyReorg(pool, { chainId, followerFilterId: context.filterId, forkBlock, depth, oldHash, newHash })
    crashPoint('reorg-marked')
    logger.warn({ chain_id: chainId, fork_block: forkBlock.number, depth, logs_removed: logsRemoved, filters_repaired: repairs.size }, 'reorg')
    return { type: 'reorg', forkBlock: forkBlock.number, depth, logsRemoved }
  }

  return { step, initialise }
}

export type HeadFollower = ReturnType<typeof createHeadFollower>
