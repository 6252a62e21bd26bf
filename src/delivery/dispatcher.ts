import type pg from 'pg'
import type { Logger } from '../internal/logger.js'
import type { DrainJob } from '../queue/index.js'
import {
  addOutstanding,
  CHANGES_CHANNEL,
  ensureMonthPartitions,
  listen,
  listSubscriptions,
  lockDispatchCursor,
  MONTH_PARTITIONS_CHECK_MS,
  publishChanges,
  pruneWebhookHistory,
  readEvents,
  setDispatchCursor,
  undrainedSubscriptions,
  withTransaction,
  type Fence,
} from '../store/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import { createWakeUp, runEvery } from '../utils/loop.js'
import { matchesSubscription } from './events.js'

/** Outbox rows moved, and events read, per statement. */
const BATCH = 2_000
/** A poll beside the trigger's notifications, which a reconnecting listener may miss. */
const POLL_MS = 1_000
/** How often the leader queues a drain for every subscription owed events that no drain holds (lost jobs, a flushed Redis). */
export const RECONCILE_MS = 3_000
/** How often events and delivery records past `WEBHOOK_RETENTION_DAYS` are pruned, and how many rows per statement. */
const PRUNE_MS = 10 * 60_000
export const PRUNE_BATCH = 10_000

export type DispatcherContext = {
  pool: pg.Pool
  logger: Logger
  enqueue: (jobs: readonly DrainJob[]) => Promise<void>
  /** `WEBHOOK_RETENTION_DAYS`. */
  retentionDays?: number
  /** The scheduler lease's fence: a stale leader's dispatch round is refused. */
  fence?: Fence
}

/**
 * The outbox's reader: publishes committed attribution changes as events, then records each event as
 * owed to every subscription that wants it, in one transaction with its cursor, and queues a drain of
 * each such subscription. The queue only schedules: a drain lost to a crash or a Redis flush is queued
 * again by {@link reconcile}.
 */
export function createDispatcher({ pool, logger, enqueue, retentionDays = 30, fence }: DispatcherContext) {
  async function publish(): Promise<number> {
    let published = 0
    for (;;) {
      const step = await publishChanges(pool, BATCH)
      published += step.published
      if (!step.more) return published
    }
  }

  async function dispatch(): Promise<number> {
    let dispatched = 0
    for (;;) {
      const round = await withTransaction(pool, async (client) => {
        const cursor = await lockDispatchCursor(client)
        await fence?.(client)
        const events = await readEvents(client, { after: cursor, limit: BATCH })
        if (events.length === 0) return null
        const subscriptions = await listSubscriptions(client, { activeOnly: true })
        const owed = events.flatMap((event) =>
          subscriptions
            .filter((s) => matchesSubscription(s, event))
            .map((s) => ({ subscriptionId: s.id, eventId: event.id, txHash: event.txHash })),
        )
        await addOutstanding(client, owed)
        const last = events.at(-1)!.id
        await setDispatchCursor(client, last)
        return { owed, last, full: events.length === BATCH }
      })
      if (!round) return dispatched
      crashPoint('events-dispatched')
      const subscriptionIds = [...new Set(round.owed.map((o) => o.subscriptionId))]
      await enqueue(subscriptionIds.map((subscriptionId) => ({ subscriptionId, jobId: `drain.${subscriptionId}.${round.last}` })))
      dispatched += round.owed.length
      if (!round.full) return dispatched
    }
  }

  /** Queues a drain of every subscription owed events that no live drain holds; returns how many. */
  async function reconcile(): Promise<number> {
    const ids = await undrainedSubscriptions(pool)
    if (ids.length > 0) crashPoint('drains-reconciled')
    // One id per subscription: while such a drain waits, the next sweep adds nothing.
    await enqueue(ids.map((subscriptionId) => ({ subscriptionId, jobId: `drain.${subscriptionId}` })))
    return ids.length
  }

  /** One round: publish what has committed, then dispatch it. */
  async function step(): Promise<{ published: number; dispatched: number }> {
    const published = await publish()
    if (published > 0) crashPoint('events-published')
    const dispatched = await dispatch()
    if (published > 0 || dispatched > 0) logger.debug({ events: published, jobs: dispatched }, 'webhook events dispatched')
    return { published, dispatched }
  }

  /** Prunes what is past retention (never an event owed to an enabled subscription). */
  async function prune(): Promise<{ events: number; deliveries: number; partitions: string[]; moved: number }> {
    const pruned = await pruneWebhookHistory(pool, retentionDays, PRUNE_BATCH)
    if (pruned.events > 0 || pruned.deliveries > 0) logger.info({ ...pruned, retention_days: retentionDays }, 'webhook history pruned')
    return pruned
  }

  /** Makes sure the webhook tables have this month's partition and the next ones (events are published, attempts recorded, into them). */
  async function ensurePartitions(): Promise<string[]> {
    const created = [...(await ensureMonthPartitions(pool, 'webhook_events')), ...(await ensureMonthPartitions(pool, 'webhook_deliveries'))]
    if (created.length > 0) logger.info({ partitions: created }, 'webhook partitions created')
    return created
  }

  return {
    step,
    reconcile,
    prune,
    /**
     * Runs rounds until `signal` aborts: at once when the outbox trigger notifies, else every second;
     * beside them the reconciler, every few seconds, pruning, every ten minutes, and the months ahead of
     * the webhook tables, every hour.
     */
    async run(signal: AbortSignal): Promise<void> {
      const wakeUp = createWakeUp()
      const unlisten = listen(pool, CHANGES_CHANNEL, wakeUp.notify, logger)
      try {
        await Promise.all([
          runEvery(POLL_MS, step, { signal, logger, name: 'webhook-dispatch', wake: wakeUp.wait }),
          runEvery(RECONCILE_MS, reconcile, { signal, logger, name: 'webhook-reconcile' }),
          runEvery(PRUNE_MS, prune, { signal, logger, name: 'webhook-prune' }),
          runEvery(MONTH_PARTITIONS_CHECK_MS, ensurePartitions, { signal, logger, name: 'webhook-partitions' }),
        ])
      } finally {
        await unlisten()
      }
    },
  }
}
