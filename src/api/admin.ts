import { createHash, timingSafeEqual } from 'node:crypto'
import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { FastifyAdapter } from '@bull-board/fastify'
import type { Queue } from 'bullmq'
import type { SwaggerTransform } from '@fastify/swagger'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { ErrorEnvelope } from './errors.js'
import { errorResponses } from './schemas.js'

/** The OpenAPI security scheme of every admin operation. */
export const ADMIN_SECURITY_SCHEME = 'adminToken'
export const ADMIN_SECURITY = [{ [ADMIN_SECURITY_SCHEME]: [] }]
const QUEUES_PATH = '/admin/queues'

const digest = (text: string) => createHash('sha256').update(text).digest()

/**
 * An `onRequest` hook letting through only `Authorization: Bearer <token>`. Both sides are hashed
 * first, so the comparison takes the same time whatever the length or content of the guess.
 */
export function requireBearerToken(token: string) {
  const expected = digest(token)
  return async function checkBearerToken(request: FastifyRequest, reply: FastifyReply) {
    const [scheme, given] = (request.headers.authorization ?? '').split(' ')
    if (scheme?.toLowerCase() === 'bearer' && given && timingSafeEqual(digest(given), expected)) return
    // Answered here, not thrown: bull-board's routes have an error handler of their own.
    return reply
      .status(401)
      .header('www-authenticate', 'Bearer realm="codetrail admin"')
      .send({
        error: { code: 'unauthorized', message: 'This route needs the admin token: send Authorization: Bearer <ADMIN_TOKEN>.' },
      } satisfies ErrorEnvelope)
  }
}

export type AdminRoutesOptions = {
  /** `ADMIN_TOKEN`. */
  token: string
  /** Shown at `/admin/queues`; none: the dashboard is not served. */
  queues: readonly Queue[]
}

/** The dashboard page's entry in the OpenAPI document. */
const dashboardSchema = {
  operationId: 'getQueueDashboard',
  tags: ['operations'],
  summary: 'The BullMQ dashboard (read-only)',
  description: 'An HTML page showing the range-job queue; served when ADMIN_UI=1 and ADMIN_TOKEN is set.',
  security: ADMIN_SECURITY,
  response: {
    200: { description: 'The dashboard page.', content: { 'text/html': { schema: z.string() } } },
    ...errorResponses(401, 429),
  },
}

/**
 * Every route that needs `ADMIN_TOKEN`: registered only when it is set, each behind
 * {@link requireBearerToken}. Today the BullMQ dashboard (read-only) at `/admin/queues`.
 */
export const adminRoutes: FastifyPluginAsyncZod<AdminRoutesOptions> = async (app, { token, queues }) => {
  app.addHook('onRequest', requireBearerToken(token))
  if (queues.length === 0) return
  const serverAdapter = new FastifyAdapter()
  serverAdapter.setBasePath(QUEUES_PATH)
  createBullBoard({ queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })), serverAdapter })
  await app.register(serverAdapter.registerPlugin(), { prefix: QUEUES_PATH })
}

/**
 * The document's transform with the dashboard page documented: bull-board hides its routes, and the
 * page's route reaches the document as `/admin/queues/` (a path with a trailing slash is frowned on).
 */
export function withAdminDocs(transform: SwaggerTransform): SwaggerTransform {
  return (route) => {
    if (route.url === `${QUEUES_PATH}/` && route.route.method === 'GET')
      return transform({ ...route, url: QUEUES_PATH, schema: dashboardSchema })
    return transform(route)
  }
}
