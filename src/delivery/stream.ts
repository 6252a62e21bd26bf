import type pg from 'pg'
import type { Logger } from '../logger.js'
import { EVENTS_CHANNEL, latestEventId, listen, readEvents, type EventFilter, type WebhookEvent } from '../store/index.js'
import { sleep } from '../utils/loop.js'

/** Events read per query while a client catches up. */
const PAGE = 500
/** Silence after which a stream sends a keep-alive (and looks for events a lost notification hid). */
export const KEEPALIVE_MS = 10_000
/** How often a stream reading a replica looks again for an event the primary announced but the replica has not replayed yet. */
const REPLAY_WAIT_MS = 100

export type StreamItem = { type: 'event'; event: WebhookEvent } | { type: 'keepalive' }

/**
 * The live event stream of one API process: one `LISTEN` connection for every client, each client
 * reading the events it wants from `webhook_events` after its own cursor, so a resumed client gets
 * every event after the id it names.
 */
export function createEventStream({ pool, notifyPool = pool, logger }: { pool: pg.Pool; notifyPool?: pg.Pool; logger: Logger }) {
  const shutdown = new AbortController()
  const waiting = new Set<() => void>()
  // Counts notifications, so one that lands between a client's read and its wait is not slept through.
  let notifications = 0
  // The newest event id announced: reads from a replica that has not reached it yet look again soon.
  let announced = 0
  // Started by the first client: an API nobody streams from holds no extra connection.
  let unlisten: (() => Promise<void>) | undefined
  const startListening = () =>
    (unlisten ??= listen(
      notifyPool,
      EVENTS_CHANNEL,
      (payload) => {
        announced = Math.max(announced, Number(payload) || 0)
        notifications++
        for (const wake of waiting) wake()
      },
      logger,
    ))

  function published(signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        waiting.delete(wake)
        clearTimeout(timer)
        signal.removeEventListener('abort', aborted)
        resolve(woken)
      }
      const wake = () => done(true)
      const aborted = () => done(false)
      const timer = setTimeout(() => done(false), KEEPALIVE_MS)
      waiting.add(wake)
      signal.addEventListener('abort', aborted, { once: true })
    })
  }

  return {
    /**
     * Events matching `filter` after `after` (omitted: from now on), then live ones as they are
     * published, with a keep-alive after each quiet spell, until `signal` aborts.
     */
    async *follow({ after, filter, signal: clientGone }: { after?: number; filter: EventFilter; signal: AbortSignal }): AsyncGenerator<StreamItem> {
      const signal = AbortSignal.any([clientGone, shutdown.signal])
      startListening()
      let cursor = after ?? (await latestEventId(pool))
      while (!signal.aborted) {
        // Up to the newest id first: a filter that matches nothing still moves the cursor on.
        const seen = notifications
        const head = await latestEventId(pool)
        const events = await readEvents(pool, { after: cursor, upTo: head, limit: PAGE, filter })
        for (const event of events) yield { type: 'event', event }
        cursor = events.length === PAGE ? events.at(-1)!.id : Math.max(cursor, head)
        if (events.length === PAGE) continue
        if (head < announced) {
          await sleep(REPLAY_WAIT_MS, signal)
          continue
        }
        const woken = notifications !== seen || (await published(signal))
        if (!woken && !signal.aborted) yield { type: 'keepalive' }
      }
    },
    /** Ends every stream and stops listening. */
    async close() {
      shutdown.abort()
      await unlisten?.()
    },
  }
}

export type EventStream = ReturnType<typeof createEventStream>
