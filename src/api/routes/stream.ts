import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { KEEPALIVE_MS, toPayload, type EventStream } from '../../delivery/index.js'
import { WEBHOOK_EVENTS } from '../../store/index.js'
import { builderCode, errorResponses, list, walletAddress } from '../schemas.js'

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
          `event after that id comes first. A comment line is sent after ${KEEPALIVE_MS / 1000} s of silence to keep proxies from closing the connection.`,
        querystring: z.strictObject({
          builderCode: list(builderCode, 'builder code').optional(),
          walletAddress: list(walletAddress, 'wallet address').optional(),
          events: eventTypes.optional().meta({ description: 'Comma-separated event types. Default: all.' }),
          lastEventId: eventId.optional(),
        }),
        headers: z.object({ 'last-event-id': eventId.optional() }),
        response: { 200: z.string().meta({ description: 'text/event-stream' }), ...errorResponses(400, 429) },
      },
    },
    async (request, reply) => {
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
      try {
        const filter = { builderCodes: q.builderCode, walletAddresses: q.walletAddress, types: q.events }
        for await (const item of stream.follow({ after, filter, signal: closed.signal })) {
          if (item.type === 'keepalive') out.write(': keep-alive\n\n')
          else out.write(`id: ${item.event.id}\ndata: ${JSON.stringify(toPayload(item.event))}\n\n`)
        }
      } catch (error) {
        if (!closed.signal.aborted) request.log.warn({ err: error }, 'event stream ended by an error')
      } finally {
        out.end()
      }
    },
  )
}
