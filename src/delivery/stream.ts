import type pg from 'pg'
import type { Logger } from '../logger.js'
import { EVENTS_CHANNEL, latestEventId, listen, markStreamDemand, readEvents, type EventFilter, type WebhookEvent } from '../store/index.js'

/** Events read per query while a client catches up. */
const PAGE = 500
/** Silence after which a stream sends a keep-alive (and looks for events a lost notification hid). */
export const KEEPALIVE_MS = 10_000
/** After a client was last connected, how long the outbox keeps recording every event for it to resume with. */
const RESUME_WINDOW_MS = 3_600_000
/** How often a connected stream says so again. */
const DEMAND_REFRESH_MS = 60_000

export type StreamItem = { type: 'event'; event: WebhookEvent } | { type: 'keepalive' }

/**
 * The live event stream of one API process: one `LISTEN` connection for every client, each client
 * reading the events it wants from `webhook_events` after its own cursor, so a resumed client gets
 * every event after the id it names.
 */
export function createEventStream({ pool, logger }: { pool: pg.Pool; logger: Logger }) {
  const shutdown = new AbortController()
  const waiting = new Set<() => void>()
  // Counts notifications, so one that lands between a client's read and its wait is not slept through.
  let notifications = 0
  // Started by the first client: an API nobody streams from holds no extra connection.
  let unlisten: (() => Promise<void>) | undefined
  const startListening = () =>
    (unlisten ??= listen(
      pool,
      EVENTS_CHANNEL,
      () => {
        notifications++
        for (const wake of waiting) wake()
      },
      logger,
    ))

  let demandSaidAt = -Infinity
  /** Keeps the outbox recording every event type while clients are here, and for a while after (each new client says it at once). */
  async function sayDemand(now = false): Promise<void> {
    if (!now && performance.now() - demandSaidAt < DEMAND_REFRESH_MS) return
    demandSaidAt = performance.now()
    await markStreamDemand(pool, RESUME_WINDOW_MS).catch((error: unknown) => {
      demandSaidAt = -Infinity
      logger.warn({ err: error }, 'stream demand not recorded')
    })
  }

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
      await sayDemand(true)
      let cursor = after ?? (await latestEventId(pool))
      while (!signal.aborted) {
        await sayDemand()
        // Up to the newest id first: a filter that matches nothing still moves the cursor on.
        const seen = notifications
        const head = await latestEventId(pool)
        const events = await readEvents(pool, { after: cursor, upTo: head, limit: PAGE, filter })
        for (const event of events) yield { type: 'event', event }
        cursor = events.length === PAGE ? events.at(-1)!.id : Math.max(cursor, head)
        if (events.length === PAGE) continue
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
