import type { Redis } from 'ioredis'
import type { Logger } from '../internal/logger.js'
import { whileLeaseHeld } from './lease.js'
import { LeaseFencedError, type LeaseFence } from '../store/index.js'
import { whilePreconfirming, type ChainProfiler } from '../chains/index.js'
import { createWakeUp, runEvery } from '../utils/loop.js'
import type { FollowEvent, HeadFollower } from './realtime.js'
import type { PendingPoller } from './pendingPoller.js'
import type { RepairRunner } from '../reorg/index.js'

/** How long a dead scheduler's lease blocks the next one; renewed every third of it. */
const LEASE_TTL_MS = 5_000
/** How often open repairs are looked at when no reorg says there are new ones. */
const REPAIR_POLL_MS = 2_000

export type SchedulerContext = {
  redis: Redis
  keyPrefix: string
  chainId: number
  logger: Logger
  follower: HeadFollower
  poller?: PendingPoller
  /** Turns open repairs into range jobs (see `reorg/repairRunner.ts`). */
  repairs?: RepairRunner
  /** How often the head is looked at without a notification (read again each round). */
  headPollMs: number | (() => number)
  /** Milliseconds from now until the next block should be readable, where known: the next look is then, if sooner than `headPollMs`. */
  nextHeadInMs?: () => number | undefined
  pendingPollMs: number
  /** Whether the chain pre-confirms: the pending poller runs only while it does. Unset: always. */
  profiler?: Pick<ChainProfiler, 'current' | 'onChange'>
  /** A source of new-head notifications (a `newHeads` subscription) run while the lease is held; each wakes the follower. */
  heads?: (signal: AbortSignal, onHead: () => void) => Promise<void>
  onFollowEvent?: (event: FollowEvent) => void
  /** Extra single-instance loops (e.g. a `pendingLogs` subscription) run while the lease is held. */
  whileLeader?: (signal: AbortSignal) => Promise<void>
  /** Claims the next lease generation on each acquisition (see `store/fence.ts`). */
  fence?: Pick<LeaseFence, 'claim'>
}

/**
 * Runs the head follower and the pending poller once per chain across every process: whoever holds
 * the chain's lease runs them; the others wait and take over when the lease lapses.
 */
export function startScheduler(context: SchedulerContext) {
  const { logger, chainId } = context
  return whileLeaseHeld({
    redis: context.redis,
    key: `${context.keyPrefix}:scheduler:${chainId}`,
    ttlMs: LEASE_TTL_MS,
    logger,
    fields: { chain_id: chainId },
    name: 'scheduler',
    ...(context.fence ? { fence: context.fence } : {}),
    lead: (term) => lead(context, term),
  })
}

/** The leader's loops: the head follower, the pending poller, repairs and `whileLeader`, until `term` aborts. */
async function lead(context: SchedulerContext, term: AbortController) {
  const { logger, chainId } = context
  // Each pending poll also reads the head: a new block is stepped at once, not at the follower's next poll.
  const woken = createWakeUp()
  const nudge = () => woken.notify()
  let polledHead: number | undefined
  // A reorg or an orphan check records repairs: they are looked at right after, not at the next poll.
  const repairsNudged = createWakeUp()
  let stepsStarted = 0
  const headPollMs = context.headPollMs
  const nextLook = () => {
    const interval = typeof headPollMs === 'number' ? headPollMs : headPollMs()
    const next = context.nextHeadInMs?.()
    // runEvery waits the interval less the run's time: the run's time is added back so the look lands when the block is due.
    return next === undefined ? interval : Math.min(interval, next + (performance.now() - stepsStarted))
  }
  const follow = runEvery(
    nextLook,
    async () => {
      stepsStarted = performance.now()
      // Catching up: step again at once while a step leaves blocks behind the head (a step that reached it waits for the next).
      for (;;) {
        const events = await context.follower.step().catch((error: unknown) => {
          if (!(error instanceof LeaseFencedError)) throw error
          logger.warn(
            { chain_id: chainId, lease_generation: error.generation, current_generation: error.current },
            'scheduler lease fenced: write refused, stopping',
          )
          term.abort()
          return []
        })
        for (const event of events) context.onFollowEvent?.(event)
        if (events.some((event) => event.type === 'reorg')) repairsNudged.notify()
        const behind = events.some((event) => event.type === 'reorg' || (event.type === 'blocks' && event.to < event.head))
        if (term.signal.aborted || !behind) break
      }
    },
    { signal: term.signal, logger, name: 'head', wake: woken.wait },
  )
  const poller = context.poller
  const pollPending = (signal: AbortSignal) =>
    runEvery(
      context.pendingPollMs,
      async () => {
        const { head } = await poller!.poll()
        if (polledHead !== undefined && head > polledHead) nudge()
        polledHead = head
      },
      { signal, logger, name: 'pending' },
    )
  const profiler = context.profiler
  const poll =
    poller && context.pendingPollMs > 0
      ? profiler
        ? whilePreconfirming(profiler, term.signal, pollPending)
        : pollPending(term.signal)
      : Promise.resolve()
  const heads = context.heads?.(term.signal, nudge) ?? Promise.resolve()
  const repairs = context.repairs
  const repair = repairs
    ? runEvery(REPAIR_POLL_MS, () => repairs.run(), { signal: term.signal, logger, name: 'repairs', wake: repairsNudged.wait })
    : Promise.resolve()
  const extra = context.whileLeader?.(term.signal) ?? Promise.resolve()
  await Promise.all([follow, poll, heads, repair, extra])
  await context.poller?.settled()
}
