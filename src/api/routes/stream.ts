import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { KEEPALIVE_MS, type EventStream } from '../../delivery/index.js'
import { WEBHOOK_EVENTS } from '../../store/index.js'
import { ApiError } from '../errors.js'
import { builderCode, chainIdParam, errorResponses, list, walletAddress } from '../schemas.js'

const eventId = z
  .string()
  .regex(/^[0-9]{1,15}$/, 'must be an event id')
  .transform(Number)
  .meta({ description: 'Resume after this event id (the `id:` of the last message received).' })

export const eventTypes = list(z.enum(WEBHOOK_EVENTS, `must be one of ${WEBHOOK_EVENTS.join(', ')}`), 'event type')

/** How long a browser waits before reconnecting (it then sends Last-Event-ID). */
const RETRY_MS = 1_000

/** `GET /v1/stream`: attribution events as Server-Sent Events. */
export const streamRoutes: FastifyPluginAsyncZod<{ stream: EventStream }> = async (app, { stream }) => {
  app.get(
    '/v1/stream',
    {
      schema: {
        tags: ['attributions'],
        operationId: 'streamAttributionEvents',
        summary: 'Attribution events, live, as Server-Sent Events',
        description:
          'Each message is one event: `id:` is the event id and `data:` the JSON body webhooks receive ({id, type, createdAt, data}). ' +
          'Without Last-Event-ID (header, or lastEventId in the query) the stream starts with the next event; with it, every ' +
          `event after that id comes first. A comment line is sent every ${KEEPALIVE_MS / 1000} s to keep proxies from closing the connection. ` +
          'A client that leaves too much unread is disconnected (it resumes with Last-Event-ID); beyond STREAM_MAX_CLIENTS connections the answer is 503.',
        querystring: z.strictObject({
          builderCode: list(builderCode, 'builder code').optional(),
          walletAddress: list(walletAddress, 'wallet address').optional(),
          chainId: list(chainIdParam, 'chain id').optional().meta({ description: 'Comma-separated chain ids. Default: every chain.' }),
          events: eventTypes.optional().meta({ description: 'Comma-separated event types. Default: all.' }),
          lastEventId: eventId.optional(),
        }),
        headers: z.object({ 'last-event-id': eventId.optional() }),
        response: {
          200: { description: 'The event stream, open until the client leaves.', content: { 'text/event-stream': { schema: z.string() } } },
          ...errorResponses(400, 429, 503),
        },
      },
    },
    async (request, reply) => {
      if (stream.full())
        throw new ApiError(
          503,
          'stream_full',
          `The stream serves at most ${stream.maxClients} clients (STREAM_MAX_CLIENTS); try again later.`,
        )
      const q = request.query
      const after = request.headers['last-event-id'] ?? q.lastEventId
      const closed = new AbortController()
      request.raw.once('close', () => closed.abort())
      reply.hijack()
      const out = reply.raw
      // Hijacked: the security and CORS headers set on the reply so far go out only if passed on here.
      out.writeHead(200, {
        ...(reply.getHeaders() as OutgoingHttpHeaders),
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache',
        Connection: 'keep-alive',
        // Proxies such as nginx buffer responses unless told not to.
        'X-Accel-Buffering': 'no',
      })
      out.write(`retry: ${RETRY_MS}\n\n`)
      let ended: 'gone' | 'dropped' = 'gone'
      try {
        const filter = { builderCodes: q.builderCode, walletAddresses: q.walletAddress, types: q.events, chainIds: q.chainId }
        const sink = {
          write: (chunk: string) => out.write(chunk),
          buffered: () => out.writableLength,
          drained: () =>
            new Promise<void>((resolve) => {
              if (!out.writableNeedDrain || closed.signal.aborted) return resolve()
              out.once('drain', resolve)
              closed.signal.addEventListener('abort', () => resolve(), { once: true })
            }),
        }
        ended = await stream.serve({ after, filter, sink, signal: closed.signal })
      } catch (error) {
        if (!closed.signal.aborted) request.log.warn({ err: error }, 'event stream ended by an error')
      } finally {
        // A dropped client's unread buffer is thrown away, not sent: it resumes with Last-Event-ID.
        if (ended === 'dropped') out.destroy()
        else out.end()
      }
    },
  )
}
