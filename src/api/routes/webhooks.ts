import { randomBytes } from 'node:crypto'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import type pg from 'pg'
import { z } from 'zod'
import type { WebhookQueue } from '../../queue/index.js'
import {
  addOutstanding,
  deleteSubscription,
  enableSubscription,
  getDispatchCursor,
  getSubscription,
  insertSubscription,
  listDeliveries,
  listSubscriptions,
  readEvents,
  rotateSecret,
  WEBHOOK_EVENTS,
  type WebhookSubscription,
} from '../../store/index.js'
import { matchesSubscription, newWebhookSecret, sealSecret } from '../../delivery/index.js'
import { ApiError } from '../errors.js'
import { builderCode, errorResponses, isoTime, MAX_LIST_ITEMS, walletAddress } from '../schemas.js'
import { ADMIN_SECURITY, requireBearerToken } from '../admin.js'
import { webhookTargets } from '../../delivery/targets.js'

/** Roles of ERC-8021 schema 2 codes. */
const ROLES = ['app', 'wallet', 'service'] as const
const MAX_URL_LENGTH = 2_000
const DEFAULT_DELIVERIES = 50
const MAX_DELIVERIES = 500
/** Events one redeliver call queues; `nextFromEventId` says where to go on. */
const MAX_REDELIVER = 10_000

const webhookUrl = z
  .string()
  .max(MAX_URL_LENGTH, `must be at most ${MAX_URL_LENGTH} characters`)
  .refine((value) => {
    try {
      return ['http:', 'https:'].includes(new URL(value).protocol)
    } catch {
      return false
    }
  }, 'must be an http or https URL')
  .meta({ description: 'Where events are POSTed.', example: 'https://example.com/codetrail' })

const array = <T extends z.ZodType>(item: T, what: string) =>
  z.array(item).min(1, `must name at least one ${what}`).max(MAX_LIST_ITEMS, `may name at most ${MAX_LIST_ITEMS} ${what}s`)

const subscriptionBody = z.strictObject({
  url: webhookUrl,
  events: array(z.enum(WEBHOOK_EVENTS, `must be one of ${WEBHOOK_EVENTS.join(', ')}`), 'event type'),
  builderCodes: array(builderCode, 'builder code').optional(),
  walletAddresses: array(walletAddress, 'wallet address').optional(),
  roles: array(z.enum(ROLES, `must be one of ${ROLES.join(', ')}`), 'role').optional(),
  chainIds: array(z.number().int().positive('must be a chain id'), 'chain id')
    .optional()
    .meta({ description: 'Only events of these chains. Default: every chain.' }),
})

const subscriptionAnswer = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    builderCodes: z.array(z.string()).nullable(),
    walletAddresses: z.array(z.string()).nullable(),
    roles: z.array(z.string()).nullable(),
    chainIds: z.array(z.number().int()).nullable(),
    createdAt: isoTime,
    status: z.enum(['active', 'failing', 'disabled']),
    consecutiveFailures: z.number().int(),
    disabledAt: isoTime.nullable(),
    disabledReason: z.string().nullable().meta({ description: 'Why deliveries stopped; POST redeliver enables it again.' }),
  })
  .meta({ id: 'WebhookSubscription' })

const createdAnswer = subscriptionAnswer
  .extend({ secret: z.string().meta({ description: 'Signing secret: shown once, here.' }) })
  .meta({ id: 'CreatedWebhookSubscription' })

const subscriptionId = z.strictObject({ id: z.string().regex(/^wh_[0-9a-f]{16}$/, 'must be a webhook id') })

function toAnswer(s: WebhookSubscription): z.output<typeof subscriptionAnswer> {
  return {
    id: s.id,
    url: s.url,
    events: s.events,
    builderCodes: s.builderCodes,
    walletAddresses: s.walletAddresses,
    roles: s.roles,
    chainIds: s.chainIds,
    createdAt: s.createdAt.toISOString(),
    status: s.disabledAt ? 'disabled' : s.consecutiveFailures > 0 ? 'failing' : 'active',
    consecutiveFailures: s.consecutiveFailures,
    disabledAt: s.disabledAt?.toISOString() ?? null,
    disabledReason: s.disabledReason,
  }
}

export type WebhookRoutesOptions = {
  pool: pg.Pool
  adminToken: string
  queue: Pick<WebhookQueue, 'enqueue'>
  /** `WEBHOOK_ALLOW_PRIVATE`: URLs on loopback and private addresses are accepted too. */
  allowPrivate?: boolean
  /** `SECRETS_KEY`: secrets are sealed with it before they are stored. */
  secretsKey?: Buffer | undefined
}

/** How long a replaced secret keeps signing, unless the rotation says otherwise. */
const DEFAULT_OVERLAP_SECONDS = 24 * 3_600
const MAX_OVERLAP_SECONDS = 7 * 24 * 3_600

/** Webhook subscriptions, served only with `ADMIN_TOKEN` and only to its bearer. */
export const webhookRoutes: FastifyPluginAsyncZod<WebhookRoutesOptions> = async (
  app,
  { pool, adminToken, queue, allowPrivate = false, secretsKey },
) => {
  app.addHook('onRequest', requireBearerToken(adminToken))
  const targets = webhookTargets({ allowPrivate })
  const found = async (id: string) => {
    const subscription = await getSubscription(pool, id)
    if (!subscription) throw new ApiError(404, 'webhook_not_found', `There is no webhook ${id}.`)
    return subscription
  }
  const tags = ['webhooks']
  const security = ADMIN_SECURITY

  app.post(
    '/v1/webhooks',
    {
      schema: {
        tags,
        security,
        operationId: 'createWebhook',
        summary: 'Subscribe a URL to attribution events',
        description:
          'Filters left out match everything. The answer carries the signing secret, once. URLs on link-local and cloud-metadata addresses are refused (400 webhook_url_refused), ' +
          'and so are loopback and private ones unless WEBHOOK_ALLOW_PRIVATE=1; a host name is judged by the addresses it resolves to, at subscription and at each delivery.',
        body: subscriptionBody,
        response: { 201: createdAnswer, ...errorResponses(400, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      const body = request.body
      const refusal = await targets.check(body.url)
      if (refusal) throw new ApiError(400, 'webhook_url_refused', `Body field url is refused: ${refusal}.`)
      const secret = newWebhookSecret()
      const subscription = await insertSubscription(pool, {
        id: `wh_${randomBytes(8).toString('hex')}`,
        secret: sealSecret(secretsKey, secret),
        url: body.url,
        events: [...new Set(body.events)],
        builderCodes: body.builderCodes ? [...new Set(body.builderCodes)] : null,
        walletAddresses: body.walletAddresses ? [...new Set(body.walletAddresses)] : null,
        roles: body.roles ? [...new Set(body.roles)] : null,
        chainIds: body.chainIds ? [...new Set(body.chainIds)] : null,
      })
      return reply.code(201).send({ ...toAnswer(subscription), secret })
    },
  )

  app.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      schema: {
        tags,
        security,
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret, with an overlap',
        description:
          `Answers the new secret, once. Until previousSecretExpiresAt (overlapSeconds from now, default ${DEFAULT_OVERLAP_SECONDS}) ` +
          'deliveries carry two signatures, one per secret, so receivers can switch without missing an event.',
        params: subscriptionId,
        body: z
          .strictObject({
            overlapSeconds: z
              .number()
              .int(`must be an integer from 0 to ${MAX_OVERLAP_SECONDS}`)
              .min(0, `must be an integer from 0 to ${MAX_OVERLAP_SECONDS}`)
              .max(MAX_OVERLAP_SECONDS, `must be an integer from 0 to ${MAX_OVERLAP_SECONDS}`)
              .optional(),
          })
          .optional(),
        response: { 200: z.object({ secret: z.string(), previousSecretExpiresAt: isoTime }), ...errorResponses(400, 404, 415, 429) },
      },
    },
    async (request) => {
      const secret = newWebhookSecret()
      const until = await rotateSecret(
        pool,
        request.params.id,
        sealSecret(secretsKey, secret),
        (request.body?.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS) * 1000,
      )
      if (!until) throw new ApiError(404, 'webhook_not_found', `There is no webhook ${request.params.id}.`)
      return { secret, previousSecretExpiresAt: until.toISOString() }
    },
  )

  app.get(
    '/v1/webhooks',
    {
      schema: {
        tags,
        security,
        operationId: 'listWebhooks',
        summary: 'Every webhook subscription',
        response: { 200: z.object({ items: z.array(subscriptionAnswer) }), ...errorResponses(429) },
      },
    },
    async () => ({ items: (await listSubscriptions(pool)).map(toAnswer) }),
  )

  app.get(
    '/v1/webhooks/:id',
    {
      schema: {
        tags,
        security,
        operationId: 'getWebhook',
        summary: 'One webhook subscription',
        params: subscriptionId,
        response: { 200: subscriptionAnswer, ...errorResponses(400, 404, 429) },
      },
    },
    async (request) => toAnswer(await found(request.params.id)),
  )

  app.delete(
    '/v1/webhooks/:id',
    {
      schema: {
        tags,
        security,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook subscription and its delivery log',
        params: subscriptionId,
        response: { 204: z.null(), ...errorResponses(400, 404, 429) },
      },
    },
    async (request, reply) => {
      if (!(await deleteSubscription(pool, request.params.id)))
        throw new ApiError(404, 'webhook_not_found', `There is no webhook ${request.params.id}.`)
      return reply.code(204).send(null)
    },
  )

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      schema: {
        tags,
        security,
        operationId: 'listWebhookDeliveries',
        summary: 'Latest delivery attempts, newest first',
        params: subscriptionId,
        querystring: z.strictObject({
          limit: z
            .string()
            .regex(/^[0-9]{1,3}$/, `must be an integer from 1 to ${MAX_DELIVERIES}`)
            .transform(Number)
            .refine((n) => n >= 1 && n <= MAX_DELIVERIES, `must be an integer from 1 to ${MAX_DELIVERIES}`)
            .optional(),
        }),
        response: {
          200: z.object({
            items: z.array(
              z.object({
                eventId: z.string(),
                ok: z.boolean(),
                httpStatus: z.number().int().nullable(),
                error: z.string().nullable(),
                durationMs: z.number().int(),
                createdAt: isoTime,
              }),
            ),
          }),
          ...errorResponses(400, 404, 429),
        },
      },
    },
    async (request) => {
      await found(request.params.id)
      const deliveries = await listDeliveries(pool, request.params.id, request.query.limit ?? DEFAULT_DELIVERIES)
      return { items: deliveries.map((d) => ({ ...d, eventId: String(d.eventId), createdAt: d.createdAt.toISOString() })) }
    },
  )

  app.post(
    '/v1/webhooks/:id/redeliver',
    {
      schema: {
        tags,
        security,
        operationId: 'redeliverWebhook',
        summary: 'Send the matching events again from an event id on',
        description:
          `Enables a disabled subscription again and queues every matching event from fromEventId that the dispatcher has handed out, ` +
          `at most ${MAX_REDELIVER} per call; later ones follow as usual. Go on from nextFromEventId when it is not null.`,
        params: subscriptionId,
        body: z.strictObject({
          fromEventId: z.union([z.string().regex(/^[0-9]{1,15}$/), z.number().int().min(0)], 'must be an event id').transform(Number),
        }),
        response: {
          202: z.object({ queued: z.number().int(), nextFromEventId: z.string().nullable() }),
          ...errorResponses(400, 404, 415, 429),
        },
      },
    },
    async (request, reply) => {
      const subscription = await found(request.params.id)
      await enableSubscription(pool, subscription.id)
      const upTo = await getDispatchCursor(pool)
      const events = await readEvents(pool, { after: request.body.fromEventId - 1, upTo, limit: MAX_REDELIVER })
      const wanted = events.filter((event) => matchesSubscription(subscription, event))
      const jobs = wanted.map((event) => ({ subscriptionId: subscription.id, eventId: event.id, txHash: event.txHash }))
      await addOutstanding(pool, jobs)
      await queue.enqueue([{ subscriptionId: subscription.id, jobId: `drain.${subscription.id}.r${Date.now()}` }])
      const last = events.at(-1)
      const more = events.length === MAX_REDELIVER && last !== undefined && last.id < upTo
      return reply.code(202).send({ queued: jobs.length, nextFromEventId: more ? String(last.id + 1) : null })
    },
  )
}
