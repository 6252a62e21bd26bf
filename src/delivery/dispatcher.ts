import type pg from 'pg'
import type { Logger } from '../logger.js'
import type { WebhookJobData } from '../queue/index.js'
import {
  addOutstanding,
  CHANGES_CHANNEL,
  getDispatchCursor,
  listen,
  listSubscriptions,
  publishChanges,
  readEvents,
  setDispatchCursor,
} from '../store/index.js'
import { createWakeUp, runEvery } from '../utils/loop.js'
import { matchesSubscription } from './events.js'

/** Outbox rows moved, and events read, per statement. */
const BATCH = 2_000
/** A poll beside the trigger's notifications, which a reconnecting listener may miss. */
const POLL_MS = 1_000

export type DispatcherContext = {
  pool: pg.Pool
  logger: Logger
  enqueue: (jobs: readonly WebhookJobData[]) => Promise<void>
}

/**
 * The outbox's reader: publishes committed attribution changes as events, then hands each event to a
 * delivery job per subscription that wants it. The cursor moves only after the jobs are queued (with
 * deterministic ids), so a crash in between queues them again as the same jobs: at least once.
 */
export function createDispatcher({ pool, logger, enqueue }: DispatcherContext) {
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
      const cursor = await getDispatchCursor(pool)
      const events = await readEvents(pool, { after: cursor, limit: BATCH })
      if (events.length === 0) return dispatched
      const subscriptions = await listSubscriptions(pool, { activeOnly: true })
      const jobs = events.flatMap((event) =>
        subscriptions.filter((s) => matchesSubscription(s, event)).map((s) => ({ subscriptionId: s.id, eventId: event.id, txHash: event.txHash })),
      )
      // Outstanding first: a job may run as soon as it is queued and must see the earlier events of its transaction.
      await addOutstanding(pool, jobs)
      await enqueue(jobs.map(({ subscriptionId, eventId }) => ({ subscriptionId, eventId })))
      await setDispatchCursor(pool, events.at(-1)!.id)
      dispatched += jobs.length
      if (events.length < BATCH) return dispatched
    }
  }

  /** One round: publish what has committed, then dispatch it. */
  async function step(): Promise<{ published: number; dispatched: number }> {
    const published = await publish()
    const dispatched = await dispatch()
    if (published > 0 || dispatched > 0) logger.debug({ events: published, jobs: dispatched }, 'webhook events dispatched')
    return { published, dispatched }
  }

  return {
    step,
    /** Runs rounds until `signal` aborts: at once when the outbox trigger notifies, else every second. */
    async run(signal: AbortSignal): Promise<void> {
      const wakeUp = createWakeUp()
      const unlisten = listen(pool, CHANGES_CHANNEL, wakeUp.notify, logger)
      try {
        await runEvery(POLL_MS, step, { signal, logger, name: 'webhook-dispatch', wake: wakeUp.wait })
      } finally {
        await unlisten()
      }
    },
  }
}

export type Dispatcher = ReturnType<typeof createDispatcher>
