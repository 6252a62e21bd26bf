import type pg from 'pg'
import type { Logger } from '../internal/logger.js'
import { EVENTS_CHANNEL, latestEventId, listen, markStreamDemand, readEvents, type EventFilter, type WebhookEvent } from '../store/index.js'
import { briefly } from '../internal/errors.js'
import { toPayload } from './events.js'

/** Events read per query. */
const PAGE = 500
/** A heartbeat comment this often to every client (and a look for events a lost notification hid). */
export const KEEPALIVE_MS = 15_000
/** After a client was last connected, how long the outbox keeps recording every event for it to resume with. */
const RESUME_WINDOW_MS = 3_600_000
/** How often a connected stream says so again. */
const DEMAND_REFRESH_MS = 60_000
/** Bytes a client may leave unread before it is dropped (it resumes with Last-Event-ID). */
export const STREAM_CLIENT_BUFFER_BYTES = 1024 * 1024
/** How long a client catching up may leave a full buffer unread before it is dropped. */
const CATCH_UP_DRAIN_MS = KEEPALIVE_MS
/** How often a stream reading a replica looks again for an event the primary announced but the replica has not replayed yet. */
const REPLAY_WAIT_MS = 100

/** Where a client's messages go: the response, as far as the stream needs it. */
export type StreamSink = {
  write: (chunk: string) => boolean
  /** Bytes written and not yet taken by the client. */
  buffered: () => number
  /** Resolves at once unless the last write filled the buffer; then when it has drained (or the client is gone). */
  drained: () => Promise<void>
}

/** One Server-Sent Events message: the event id and the body webhooks receive. */
const format = (event: WebhookEvent) => `id: ${event.id}\ndata: ${JSON.stringify(toPayload(event))}\n\n`

type Client = { filter: EventFilter; sink: StreamSink; live: boolean; drop: (reason: string) => void }

/** Whether a stream filter (each list given narrows it) takes the event. */
function wants(filter: EventFilter, event: WebhookEvent): boolean {
  return (
    (!filter.builderCodes || filter.builderCodes.includes(event.builderCode)) &&
    (!filter.walletAddresses || (event.walletAddress !== null && filter.walletAddresses.includes(event.walletAddress))) &&
    (!filter.types || filter.types.includes(event.type)) &&
    (!filter.chainIds || filter.chainIds.includes(event.chainId))
  )
}

/**
 * The live event stream of one API process: one `LISTEN` connection and one query per wake-up for
 * every live client, the events fanned out in memory by each client's filter. A client resuming from
 * an older id first catches up with queries of its own, honouring backpressure, then joins. A client
 * that leaves more than {@link STREAM_CLIENT_BUFFER_BYTES} unread is dropped: it resumes with
 * Last-Event-ID and misses nothing. Events are read from `pool` (a read replica, where one serves);
 * notifications and the demand mark go to `notifyPool`, the primary: a standby can neither LISTEN nor write.
 */
export function createEventStream({
  pool,
  notifyPool = pool,
  logger,
  maxClients = 1_000,
}: {
  pool: pg.Pool
  notifyPool?: pg.Pool
  logger: Logger
  maxClients?: number
}) {
  const clients = new Set<Client>()
  /** The newest event id fanned out to the live clients; unset while nobody is connected. */
  let cursor: number | undefined
  let reading: Promise<void> | undefined
  let readAgain = false
  let unlisten: (() => Promise<void>) | undefined
  let heartbeat: NodeJS.Timeout | undefined
  // The newest event id announced: a read from a replica that has not replayed it yet looks again soon.
  let announced = 0
  let replayWait: NodeJS.Timeout | undefined

  let demandSaidAt = -Infinity
  /** Keeps the outbox recording every event type while clients are here, and for a while after (each new client says it at once). */
  async function sayDemand(now = false): Promise<void> {
    if (!now && performance.now() - demandSaidAt < DEMAND_REFRESH_MS) return
    demandSaidAt = performance.now()
    await markStreamDemand(notifyPool, RESUME_WINDOW_MS).catch((error: unknown) => {
      demandSaidAt = -Infinity
      logger.warn({ err: error }, 'stream demand not recorded')
    })
  }

  const send = (client: Client, chunk: string): void => {
    client.sink.write(chunk)
    if (client.sink.buffered() > STREAM_CLIENT_BUFFER_BYTES) client.drop('the client does not read fast enough')
  }

  /** One wake-up: reads what was published after the cursor, once for every live client. */
  async function fanOut(): Promise<void> {
    const live = () => [...clients].filter((c) => c.live)
    for (;;) {
      if (cursor === undefined || live().length === 0) return
      const from = cursor
      const events = await readEvents(pool, { after: from, limit: PAGE })
      if (cursor !== from) continue
      for (const event of events) {
        const message = format(event)
        for (const client of live()) if (wants(client.filter, event)) send(client, message)
      }
      if (events.length > 0) cursor = events.at(-1)!.id
      if (events.length < PAGE) return
    }
  }

  /** Runs {@link fanOut}, once at a time; a wake-up during a read reads again after it. */
  function wake(): Promise<void> {
    if (reading) {
      readAgain = true
      return reading
    }
    reading = (async () => {
      try {
        do {
          readAgain = false
          await fanOut()
        } while (readAgain)
        if (cursor !== undefined && cursor < announced && !replayWait) {
          replayWait = setTimeout(() => {
            replayWait = undefined
            void wake()
          }, REPLAY_WAIT_MS)
        }
      } catch (error) {
        logger.warn({ reason: briefly(error) }, 'event stream read failed')
      } finally {
        reading = undefined
      }
    })()
    return reading
  }

  function start(): void {
    unlisten ??= listen(
      notifyPool,
      EVENTS_CHANNEL,
      (payload) => {
        announced = Math.max(announced, Number(payload) || 0)
        void wake()
      },
      logger,
    )
    heartbeat ??= setInterval(() => {
      for (const client of clients) if (client.live) send(client, ': keep-alive\n\n')
      void sayDemand()
      void wake()
    }, KEEPALIVE_MS)
  }

  function stop(): void {
    clearInterval(heartbeat)
    clearTimeout(replayWait)
    heartbeat = undefined
    replayWait = undefined
    cursor = undefined
  }

  /** Sends `client` what matches its filter after `after`, up to the live cursor, then makes it live. */
  async function catchUp(client: Client, after: number, gone: AbortSignal): Promise<void> {
    let from = after
    while (!gone.aborted) {
      const upTo = cursor!
      const events = await readEvents(pool, { after: from, upTo, limit: PAGE, filter: client.filter })
      for (const event of events) send(client, format(event))
      if (gone.aborted) return
      let timer: NodeJS.Timeout | undefined
      const drained = await Promise.race([
        client.sink.drained().then(() => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(resolve, CATCH_UP_DRAIN_MS, false))),
      ])
      clearTimeout(timer)
      if (!drained) return client.drop('the client does not read while catching up')
      if (events.length === PAGE) {
        from = events.at(-1)!.id
        continue
      }
      from = upTo
      // No await between this check and going live: the next fan-out starts at the cursor this client reached.
      if (cursor === upTo) {
        client.live = true
        return
      }
    }
  }

  return {
    /** Whether `maxClients` are connected: a new client is refused. */
    full: () => clients.size >= maxClients,
    maxClients,
    /**
     * Serves one client until `signal` aborts or it is dropped (then 'dropped'): events matching
     * `filter` after `after` (omitted: from now on), then live ones.
     */
    async serve({
      after,
      filter,
      sink,
      signal,
    }: {
      after?: number
      filter: EventFilter
      sink: StreamSink
      signal: AbortSignal
    }): Promise<'gone' | 'dropped'> {
      const ended = new AbortController()
      const gone = AbortSignal.any([signal, ended.signal])
      const client: Client = {
        filter,
        sink,
        live: false,
        drop: (reason) => {
          if (!ended.signal.aborted) logger.info({ reason, buffered_bytes: sink.buffered() }, 'stream client dropped')
          clients.delete(client)
          ended.abort()
        },
      }
      clients.add(client)
      try {
        start()
        await sayDemand(true)
        cursor ??= await latestEventId(pool)
        if (after === undefined || after >= cursor) client.live = true
        else await catchUp(client, after, gone)
        if (!gone.aborted) await new Promise((resolve) => gone.addEventListener('abort', resolve, { once: true }))
        return ended.signal.aborted && !signal.aborted ? 'dropped' : 'gone'
      } finally {
        clients.delete(client)
        if (clients.size === 0) stop()
      }
    },
    /** Ends every stream and stops listening. */
    async close() {
      for (const client of [...clients]) client.drop('the server is closing')
      stop()
      await unlisten?.()
      unlisten = undefined
    },
  }
}

export type EventStream = ReturnType<typeof createEventStream>
