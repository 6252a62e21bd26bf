import type pg from 'pg'
import { advanceToFinalized, checkTip, rewindToFork, type Header } from '../reorg/index.js'
import type { ChainIdentity } from '../chains/index.js'
import type { Logger } from '../internal/logger.js'
import { InconsistentAnswerError, verifyLogs } from '../rpc/index.js'
import {
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
  type Fence,
} from '../store/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import { isEveryLog, type LogFilter } from './filter.js'
import { createPollTimer } from './pollTimer.js'
import type { TipBlock, TipReader } from './tipReads.js'

/** Blocks stored per step when catching up, so each database transaction (and the bodies held) stays short. */
const MAX_BLOCKS_PER_STEP = 50

export type { Header }

const isTipBlock = (block: Header | TipBlock): block is TipBlock => 'transactions' in block

/**
 * Where a step that stored blocks spent its time, in ms: `startedAt` (epoch ms, comparable across
 * processes on one machine) when it began; `head` reading or taking the newest head, `read` the
 * batch of bodies and logs, `attribute` decoding and attribution, `store` the database transaction
 * (its rows are readable from `startedAt` + head + read + attribute + store), `finalize` the
 * finality step after it.
 */
export type StepTimings = { startedAt: number; head: number; read: number; attribute: number; store: number; finalize: number }

/** Wall-clock milliseconds with sub-millisecond precision. */
const now = () => performance.timeOrigin + performance.now()

/** What one step of the follower did, for logs, metrics and tests. */
export type FollowEvent =
  | { type: 'idle'; head: number }
  | {
      type: 'blocks'
      from: number
      to: number
      head: number
      logs: number
      confirmed: number
      diverged: number
      dropped: number
      timings: StepTimings
    }
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
  /** The node's finalized block (with its hash where the node has a `finalized` tag), as last read; null until known. */
  finalized: () => Promise<{ number: number; hash?: string } | null>
  /** Reads blocks with their transactions and the step's logs in as few calls as a step allows. */
  tip: TipReader
  /** Attribution of blocks read whole at the tip, `gasUsed` already read by the step. */
  attribute?: (
    blocks: readonly TipBlock[],
    rows: readonly TransactionRow[],
    statusOf: (blockNumber: number) => Status,
    gasUsed: ReadonlyMap<string, number>,
  ) => Promise<(client: pg.PoolClient) => Promise<void>>
  /** Transactions of these blocks whose gas used attribution will want: their receipts ride with the step's logs. */
  gasWanted?: (blocks: readonly TipBlock[]) => string[]
  /** The scheduler lease's fence: tip, reorg, orphan and finality transactions of a stale leader are refused. */
  fence?: Fence
  /**
   * The node's chain: verified between reading blocks and storing them (after a failed request the node may
   * be another one), and asked before a reorg is rewound (another chain's node looks like one).
   */
  chain?: Pick<ChainIdentity, 'verify'>
}

/**
 * The head follower: each `step` stores the next canonical blocks after the last one it stored,
 * checking parent hashes (`checkTip`); a mismatch hands the rest to `rewindToFork` in `reorg/`.
 */
export function createHeadFollower(context: HeadFollowerContext) {
  const { pool, chainId, logger } = context
  const also = context.alsoFollow ?? []
  const fenced = context.fence ? { fence: context.fence } : {}
  let lastHead: number | undefined
  /** The head last written to `chain_state` (by the tip's transaction when it stores blocks). */
  let savedHead: number | undefined
  /** The newest head a `newHeads` notification announced since the last step. */
  let announced: Header | undefined
  /** The node's finalized block that the last finality step reached. */
  let finalizedReached: number | undefined
  const polls = createPollTimer()

  /** The logs of every followed filter (answers in `[filter, ...also]` order), each checked against the headers, once each. */
  function followedLogs(answers: readonly LogInput[][], headers: ReadonlyMap<number, Header>): LogInput[] {
    const logs = [...answers[0]!]
    verifyLogs(logs, { headers, everyLog: isEveryLog(context.filter) })
    if (answers.length === 1) return logs
    const seen = new Set(logs.map((log) => `${log.blockHash}:${log.logIndex}`))
    for (const more of answers.slice(1)) {
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
    const finalized = await context.finalized()
    // Finality already reached this read of the node's finalized block: nothing to do until it moves.
    if (finalized && finalized.number === finalizedReached) return []
    const steps = await advanceToFinalized(pool, {
      chainId,
      finalized,
      fetchHeader: context.fetchHeader,
      fetchHeaders: context.fetchHeaders,
      ...fenced,
    })
    if (steps.some((step) => step.type === 'finalize' && step.to === finalized?.number)) finalizedReached = finalized!.number
    return steps.map((step) => {
      if (step.type === 'finalize') return step
      logger.warn({ chain_id: chainId, blocks: step.blocks, logs_removed: step.logsRemoved }, 'stored rows from an orphaned fork')
      return { type: 'reorg', forkBlock: Math.min(...step.blocks) - 1, depth: 0, logsRemoved: step.logsRemoved }
    })
  }

  /** Rows other writers (a backfill ahead of the follower) stored at the tip's heights from another fork, orphaned in the tip's transaction. */
  function orphanedOffCanonical(stale: readonly { number: number }[], logsRemoved: number): FollowEvent[] {
    if (stale.length === 0) return []
    logger.warn({ chain_id: chainId, blocks: stale.map((b) => b.number), logs_removed: logsRemoved }, 'stored rows from an orphaned fork')
    return [{ type: 'reorg', forkBlock: Math.min(...stale.map((b) => b.number)) - 1, depth: 0, logsRemoved }]
  }

  /**
   * One step: the newest block (from a `newHeads` notification, or one call that brings it with its
   * transactions), then every block up to it at once: the missing ones with their transactions and the
   * logs of the range in one batch, attribution from those bodies, one database transaction.
   */
  async function step(): Promise<FollowEvent[]> {
    const startedAt = now()
    const { liveBlock, liveHash } = await initialise()
    const notified = announced
    announced = undefined
    const filters = [context.filter, ...also.map((followed) => followed.filter)]
    const polled = notified ? undefined : await context.tip.poll(filters)
    if (polled === null) return [{ type: 'retry', reason: 'node has no latest block' }]
    if (polled) polls.polled(polled.block)
    const newest: Header | TipBlock = notified ?? polled!.block
    const head = newest
    lastHead = head.number
    if (head.number <= liveBlock) {
      if (head.number !== savedHead) {
        await updateChainState(pool, chainId, { headBlock: head.number })
        savedHead = head.number
      }
      if (head.number === liveBlock) {
        if (head.hash !== liveHash) return [await reorg(liveBlock, liveHash, head.hash)]
      } else if (!notified) {
        // The node is behind the follower (a shorter fork, or a lagging endpoint): is the stored tip still its chain?
        const atLive = await context.fetchHeader(liveBlock)
        if (atLive && atLive.hash !== liveHash) return [await reorg(liveBlock, liveHash, atLive.hash)]
      }
      const finalized = await finalize()
      return finalized.length > 0 ? finalized : [{ type: 'idle', head: head.number }]
    }

    const to = Math.min(head.number, liveBlock + MAX_BLOCKS_PER_STEP)
    const have = new Map<number, TipBlock>()
    if (isTipBlock(newest) && newest.number <= to) have.set(newest.number, newest)
    // Receipts ride with the logs only where every log is followed: elsewhere most attributed transactions have no indexed log.
    const receipts = context.gasWanted && isEveryLog(context.filter) ? context.gasWanted([...have.values()]) : []
    const headAt = now()
    let read: Awaited<ReturnType<TipReader['step']>>
    try {
      // The one new block came whole with the poll (its logs and receipts beside it): nothing more to read.
      read =
        polled?.reads && head.number === liveBlock + 1
          ? { blocks: [polled.block], ...polled.reads }
          : await context.tip.step([liveBlock + 1, to], have, filters, receipts)
    } catch (error) {
      if (error instanceof InconsistentAnswerError) return [{ type: 'retry', reason: error.message }]
      throw error
    }
    const readAt = now()
    const headers = read.blocks
    const check = checkTip({ hash: liveHash }, headers)
    if (check.type === 'reorg') return [await reorg(liveBlock, liveHash, check.newHash)]
    if (check.type === 'changed') return [{ type: 'retry', reason: `chain changed under block ${check.block}` }]
    const hashAt = new Map(headers.map((h) => [h.number, h]))
    let logs: LogInput[]
    try {
      logs = followedLogs(read.logs, hashAt)
    } catch (error) {
      if (error instanceof InconsistentAnswerError) return [{ type: 'retry', reason: error.message }]
      throw error
    }
    const rows = toLogRows(
      logs,
      (n) => hashAt.get(n)?.timestamp,
      (n) => hashAt.get(n)?.timestampMs,
    )
    const finalized = (await context.finalized())?.number ?? null
    // Gas used of the transactions attribution records it for (receipts may have brought every transaction's).
    const wanted = context.gasWanted?.(headers) ?? []
    const gasUsed = new Map(wanted.flatMap((hash) => (read.gasUsed.has(hash) ? [[hash, read.gasUsed.get(hash)!] as const] : [])))
    const extraWrites = await context.attribute?.(headers, rows, statusBelow(finalized), gasUsed)
    const attributedAt = now()
    await context.chain?.verify()
    crashPoint('tip-read')
    const { orphaned, orphanLogsRemoved, ...stored } = await storeTipBlocks(pool, {
      chainId,
      filterId: context.filterId,
      alsoFilterIds: also.map((followed) => followed.filterId),
      blocks: headers,
      rows,
      finalizedBlock: finalized,
      headBlock: head.number,
      ...(extraWrites ? { extraWrites } : {}),
      ...fenced,
    })
    crashPoint('tip-stored')
    savedHead = head.number
    const storedAt = now()
    const events: FollowEvent[] = orphanedOffCanonical(orphaned, orphanLogsRemoved)
    events.push(...(await finalize()))
    const ms = (from: number, to: number) => Math.round((to - from) * 10) / 10
    const timings = {
      startedAt: Math.round(startedAt),
      head: ms(startedAt, headAt),
      read: ms(headAt, readAt),
      attribute: ms(readAt, attributedAt),
      store: ms(attributedAt, storedAt),
      finalize: ms(storedAt, now()),
    }
    return [{ type: 'blocks', from: liveBlock + 1, to, head: head.number, logs: rows.length, ...stored, timings }, ...events]
  }

  async function reorg(liveBlock: number, oldHash: string, newHash: string): Promise<FollowEvent> {
    await context.chain?.verify({ ask: true })
    const state = await getChainState(pool, chainId)
    const { forkBlock, depth, logsRemoved, filtersRepaired } = await rewindToFork(pool, {
      chainId,
      followerFilterId: context.filterId,
      liveBlock,
      oldHash,
      newHash,
      finalizedBlock: state?.finalizedBlock ?? null,
      fetchHeader: context.fetchHeader,
      ...fenced,
    })
    logger.warn({ chain_id: chainId, fork_block: forkBlock, depth, logs_removed: logsRemoved, filters_repaired: filtersRepaired }, 'reorg')
    return { type: 'reorg', forkBlock, depth, logsRemoved }
  }

  return {
    step,
    initialise,
    /** A head announced by a `newHeads` subscription: the next step starts from it instead of asking the node. */
    announce(header: Header) {
      if (!announced || header.number >= announced.number) announced = header
    },
    /** The newest head any step saw (announced or read), for the subscription's freshness watchdog. */
    lastHead: () => lastHead,
    /** Milliseconds from now until the next poll should find the next block (see {@link createPollTimer}); undefined where the chain serves no `timestampMs`. */
    nextPollInMs: (blockTimeMs: number) => polls.nextInMs(blockTimeMs),
  }
}

export type HeadFollower = ReturnType<typeof createHeadFollower>
