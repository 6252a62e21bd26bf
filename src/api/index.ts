import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { Queue } from 'bullmq'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import { jsonSchemaTransform, jsonSchemaTransformObject, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod'
import { Redis } from 'ioredis'
import { API_DEFAULTS, type Config } from '../config/index.js'
import type { Logger } from '../internal/logger.js'
import { createRangeQueue } from '../queue/index.js'
import type { EndpointState, RpcClient } from '../rpc/index.js'
import { createReadRouting, createStore, type ReadRouting, type Store } from '../store/index.js'
import { ADMIN_SECURITY_SCHEME, adminRoutes, withAdminDocs } from './admin.js'
import type { ApiContext } from './context.js'
import { dashboardRoutes, DEFAULT_DASHBOARD_DIR } from './dashboard.js'
import { EDGE_DEFAULTS, fallbackStore, type EdgeLimits } from './edges.js'
import { ApiError, createErrorHandler, handleClientError } from './errors.js'
import { createMetrics, type Metrics } from '../internal/metrics.js'
import { createBuilderCodeRegistrar } from './registration.js'
import { addSecurityHeaders } from './securityHeaders.js'
import { serializerCompiler } from './serializer.js'
import { attributionRoutes } from './routes/attributions.js'
import { builderCodeRoutes } from './routes/builderCodes.js'
import { healthRoutes } from './routes/health.js'
import { logRoutes } from './routes/logs.js'
import { transactionRoutes } from './routes/transactions.js'
import { streamRoutes } from './routes/stream.js'
import { webhookRoutes } from './routes/webhooks.js'
import { createEventStream } from '../delivery/index.js'
import { createWebhookQueue, type WebhookQueue } from '../queue/index.js'

export { createMetrics, type Metrics } from '../internal/metrics.js'
export { createBuilderCodeClient, BuilderCodeClientError } from '../client/client.js'

const RATE_LIMIT_WINDOW_MS = 60_000
/** The largest body any route takes is a wallet address; anything much bigger is refused. */
const BODY_LIMIT_BYTES = 16 * 1024
const REDIS_CONNECT_TIMEOUT_MS = 2_000
/** Twice the statement timeout: a connection is free by then unless the database is stuck. */
const DB_ACQUIRE_TIMEOUT_MS = 10_000

export type ApiConfig = Pick<Config, 'port' | 'builderApiUrl' | 'adminUi' | 'databaseUrl' | 'redisUrl' | 'redisPrefix'> &
  Partial<
    Pick<
      Config,
      | 'adminToken'
      | 'dashboardDir'
      | 'webhookAllowPrivate'
      | 'secretsKey'
      | 'streamMaxClients'
      | 'databaseReadUrl'
      | 'readMaxLagMs'
      | 'retentionLogsDays'
    >
  >

export type CreateApiParameters = {
  config: ApiConfig
  /** The chain whose rows are served when a request names none (the daemon reads it from the node). */
  chainId: number
  /** Every chain served, `chainId` among them; a request may name any with `chainId=`. @default [chainId] */
  chainIds?: readonly number[]
  /**
   * The database. Omitted: the API opens a pool of its own on `config.databaseUrl` with
   * `statementTimeoutMs`; a store passed in should have been created with one. With
   * `config.databaseReadUrl`, reads go to that replica, on a pool with this one's settings.
   */
  store?: Store
  /** Shared rate-limit counters and the readiness check; see {@link createApiRedis}. Omitted: per-process limits. */
  redis?: Redis
  /** The node, for wallet nonces and readiness. */
  rpc?: RpcClient
  /** Each chain's RPC endpoints as this process's node clients see them, for `/v1/status`. */
  endpointsOf?: (chainId: number) => EndpointState[] | null
  logger: Logger
  metrics?: Metrics
  /** Queues shown at `/admin/queues` when `config.adminUi` and `config.adminToken`; omitted: the range queue on `config.redisUrl`. */
  queues?: Queue[]
  /** Requests per minute per client on every route but health and metrics. */
  rateLimit?: number
  /** No query may run longer, so one expensive request cannot starve the others. */
  statementTimeoutMs?: number
  /**
   * Connections of the API's own pool (`API_DB_POOL_SIZE`). Beyond the database server's cores, more
   * connections only make its backends contend: at 8 concurrent clients on 2 cores, 10 connections
   * cost PostgreSQL 2–2.5 times the CPU per request that 2 did (harness/bench/README.md).
   */
  dbPoolSize?: number
  /** Longest a request waits for a connection of the API's own pool before a 503, so a stall cannot queue requests for ever. */
  dbAcquireTimeoutMs?: number
  /** Where webhook redeliveries are queued (with `config.adminToken`); omitted: the webhook queue on `config.redisUrl`. */
  webhookQueue?: Pick<WebhookQueue, 'enqueue'>
  /** Listen address. @default '0.0.0.0' */
  host?: string
  /** Trust `X-Forwarded-For` from a proxy in front (`TRUST_PROXY`: hops or proxy addresses), so limits apply per real client. */
  trustProxy?: boolean | number | string | readonly string[]
  /** Browser origins allowed to call the API and the stream (`CORS_ORIGINS`); empty: no CORS headers at all. */
  corsOrigins?: readonly string[]
  /** Registrations per minute per client (`REGISTRATION_RATE_LIMIT`). */
  registrationRateLimit?: number
  /** Timeouts and the connection cap of the HTTP server; see {@link EDGE_DEFAULTS}. */
  edges?: Partial<EdgeLimits>
}

export type Api = {
  app: FastifyInstance
  /** Starts listening on `config.port`; resolves to the bound address. */
  listen: () => Promise<string>
  /** Stops accepting requests, waits for those in flight, and closes what the API opened itself. */
  close: () => Promise<void>
}

/**
 * A Redis client for the API: commands fail at once while Redis is away (rate limiting then lets
 * requests through, readiness reports it), rather than queueing and stalling every request.
 */
export function createApiRedis(redisUrl: string, logger?: Logger): Redis {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: REDIS_CONNECT_TIMEOUT_MS })
  // Without a listener ioredis prints every reconnect failure; /readyz reports Redis being down.
  redis.on('error', (error: Error) => logger?.debug({ err: error }, 'api redis error'))
  return redis
}

function waitUntilReady(redis: Redis, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      redis.off('ready', done)
      resolve()
    }
    const timer = setTimeout(done, timeoutMs)
    redis.once('ready', done)
  })
}

/**
 * The HTTP API: typed routes validated with zod, an OpenAPI 3.1 document at `/openapi.json`
 * and docs at `/docs`, every error as `{"error":{"code","message"}}`, rate limits per client shared
 * through Redis, `/healthz`, `/readyz`, `/metrics`, the dashboard at `/`, and the BullMQ dashboard at
 * `/admin/queues` when `config.adminUi`, behind `config.adminToken` (without a token no admin route is served).
 *
 * @example
 * const api = await createApi({ config, chainId, redis: createApiRedis(config.redisUrl), rpc, logger })
 * await api.listen()
 */
export async function createApi({
  config,
  chainId,
  chainIds = [chainId],
  store: givenStore,
  redis,
  rpc,
  endpointsOf,
  logger,
  metrics = createMetrics(),
  queues: givenQueues,
  rateLimit: maxPerMinute = API_DEFAULTS.rateLimit,
  statementTimeoutMs = API_DEFAULTS.statementTimeoutMs,
  dbPoolSize = API_DEFAULTS.dbPoolSize,
  dbAcquireTimeoutMs = DB_ACQUIRE_TIMEOUT_MS,
  webhookQueue: givenWebhookQueue,
  host = '0.0.0.0',
  trustProxy = false,
  corsOrigins = [],
  registrationRateLimit = API_DEFAULTS.registrationRateLimit,
  edges: givenEdges,
}: CreateApiParameters): Promise<Api> {
  const edges = { ...EDGE_DEFAULTS, ...givenEdges }
  // Commands fail fast while Redis is down (no offline queue), so give a new connection its chance first.
  if (redis && redis.status !== 'ready') await waitUntilReady(redis, REDIS_CONNECT_TIMEOUT_MS)
  const owned: (() => Promise<void>)[] = []
  const store =
    givenStore ??
    createStore({
      databaseUrl: config.databaseUrl,
      max: dbPoolSize,
      applicationName: 'codetrail-api',
      statementTimeoutMs,
      acquireTimeoutMs: dbAcquireTimeoutMs,
      genericPlans: true,
      utcSessions: true,
    })
  if (!givenStore) owned.push(() => store.close())
  let replica: ReadRouting | undefined
  if (config.databaseReadUrl) {
    replica = createReadRouting({
      primary: store.pool,
      replicaUrl: config.databaseReadUrl,
      maxLagMs: config.readMaxLagMs ?? API_DEFAULTS.readMaxLagMs,
      logger,
    })
    owned.push(() => replica!.close())
    // Serve from the replica from the first request when it is current.
    await replica.check()
  }

  const closeOwned = async () => {
    for (const close of owned.reverse()) await close()
  }
  let app: Awaited<ReturnType<typeof buildApp>>
  try {
    app = await buildApp()
  } catch (error) {
    await closeOwned()
    throw error
  }
  return {
    app,
    listen: () => app.listen({ port: config.port, host }),
    async close() {
      await app.close()
      await closeOwned()
    },
  }

  async function buildApp() {
    const dashboard = config.adminUi && config.adminToken !== undefined
    if (config.adminUi && !dashboard) logger.warn('ADMIN_UI=1 without ADMIN_TOKEN: the queue dashboard is not served')
    const handleError = createErrorHandler(logger)
    const app = Fastify({
      // pino's Logger carries more than Fastify's base logger type; Fastify only uses the base methods.
      loggerInstance: logger.child({ component: 'api' }) as FastifyBaseLogger,
      // Per-request lines would drown the indexer's logs; the duration histogram covers requests.
      logController: new LogController({ disableRequestLogging: true }),
      bodyLimit: BODY_LIMIT_BYTES,
      trustProxy: toTrustProxy(trustProxy),
      requestTimeout: edges.requestTimeoutMs,
      keepAliveTimeout: edges.keepAliveTimeoutMs,
      http: { headersTimeout: edges.headersTimeoutMs, connectionsCheckingInterval: edges.checkIntervalMs },
      // Malformed URLs and over-long path parameters are answered before routing; give them the envelope too.
      frameworkErrors: (error, request, reply) => handleError(error, request, reply),
      clientErrorHandler: handleClientError,
    }).withTypeProvider<ZodTypeProvider>()
    // Beyond this, Node closes new sockets at once instead of letting them pile up.
    app.server.maxConnections = edges.maxConnections
    app.setValidatorCompiler(validatorCompiler)
    app.setSerializerCompiler(serializerCompiler)
    app.setErrorHandler(handleError)
    // JSON only: a text/plain body gets 415 instead of reaching a route as a string.
    app.removeContentTypeParser('text/plain')

    app.addHook('onResponse', async (request, reply) => {
      metrics.httpRequestDuration.observe(
        { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: reply.statusCode },
        reply.elapsedTime / 1000,
      )
    })

    addSecurityHeaders(app, {
      // JSON answers load nothing; the dashboard and /docs set their own policy.
      contentSecurityPolicy: {
        useDefaults: false,
        directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"], baseUri: ["'none'"] },
      },
      crossOriginResourcePolicy: { policy: corsOrigins.length > 0 ? 'cross-origin' : 'same-origin' },
      frameguard: { action: 'deny' },
    })
    if (corsOrigins.length > 0)
      await app.register(cors, {
        origin: [...corsOrigins],
        methods: ['GET', 'HEAD', 'POST'],
        allowedHeaders: ['content-type', 'last-event-id'],
        exposedHeaders: ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'],
        maxAge: 600,
      })

    await app.register(rateLimit, {
      global: true,
      max: maxPerMinute,
      timeWindow: RATE_LIMIT_WINDOW_MS,
      // One subscriber usually holds a whole IPv6 /64.
      ipv6Subnet: 64,
      // Counted in Redis, shared by every API process; in memory while Redis is away.
      ...(redis ? { store: fallbackStore(redis, `${config.redisPrefix}:rate-limit:`) } : {}),
      // Only if both stores fail: then the API serves rather than refuses.
      skipOnError: true,
      errorResponseBuilder: (_request, context) =>
        new ApiError(429, 'rate_limited', `Too many requests: at most ${context.max} per minute per client; retry in ${context.after}.`),
    })

    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'codetrail',
          version: '1',
          description: 'EVM log index with pre-confirmed state and ERC-8021 builder-code attribution.',
          license: { name: 'UNLICENSED', identifier: 'LicenseRef-proprietary' },
        },
        // Relative: the API answers on whatever host and port this document was fetched from.
        servers: [{ url: '/', description: 'The server that serves this document.' }],
        // Public routes need nothing; admin operations name the bearer scheme themselves.
        security: [],
        ...((dashboard || config.adminToken) && {
          components: {
            securitySchemes: {
              [ADMIN_SECURITY_SCHEME]: {
                type: 'http',
                scheme: 'bearer',
                description: 'ADMIN_TOKEN, sent as Authorization: Bearer <token>.',
              },
            },
          },
        }),
        tags: [
          { name: 'builder codes', description: 'Register agent wallets and look up their codes.' },
          { name: 'attributions', description: 'Transactions attributed to builder codes.' },
          { name: 'logs', description: 'The raw log index.' },
          { name: 'webhooks', description: 'Signed webhook subscriptions; served only with ADMIN_TOKEN, to its bearer.' },
          { name: 'operations', description: 'Health, readiness and metrics.' },
        ],
      },
      transform: withAdminDocs(jsonSchemaTransform),
      transformObject: (document) => withoutUnusedSchemas(jsonSchemaTransformObject(document)),
    })
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      // Its own policy with hashes for its inline code; never framed.
      staticCSP: true,
      transformStaticCSP: (policy) =>
        policy.replace("frame-ancestors 'self'", "frame-ancestors 'none'").replace(' upgrade-insecure-requests;', ''),
    })
    app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger())

    const context: ApiContext = {
      db: replica?.db ?? store.db,
      primaryDb: store.db,
      replica: replica?.status,
      chainId,
      chainIds: chainIds.includes(chainId) ? chainIds : [chainId, ...chainIds],
      logger,
      rpc,
      endpointsOf,
      registrar: createBuilderCodeRegistrar({ db: store.db, chainId, builderApiUrl: config.builderApiUrl }),
      registrationRateLimit: { max: registrationRateLimit, timeWindow: RATE_LIMIT_WINDOW_MS },
    }
    const queues = [...(givenQueues ?? [])]
    if (dashboard && queues.length === 0) {
      const rangeQueue = createRangeQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
      queues.push(rangeQueue.queue)
      owned.push(() => rangeQueue.close())
    }

    await app.register(healthRoutes, { ...context, redis, metrics, queues, retentionLogsDays: config.retentionLogsDays })
    await app.register(builderCodeRoutes, context)
    await app.register(attributionRoutes, context)
    await app.register(transactionRoutes, context)
    await app.register(logRoutes, context)
    // Notifications come from the primary only: a standby cannot LISTEN.
    const stream = createEventStream({
      pool: replica?.pool ?? store.pool,
      notifyPool: store.pool,
      logger,
      maxClients: config.streamMaxClients,
    })
    // Streams never end by themselves: end them before the server waits for its requests.
    app.addHook('preClose', () => stream.close())
    await app.register(streamRoutes, { stream })
    await app.register(dashboardRoutes, { dir: config.dashboardDir ?? DEFAULT_DASHBOARD_DIR })

    if (config.adminToken) {
      let webhookQueue = givenWebhookQueue
      if (!webhookQueue) {
        const queue = createWebhookQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
        owned.push(() => queue.close())
        webhookQueue = queue
      }
      await app.register(webhookRoutes, {
        pool: store.pool,
        adminToken: config.adminToken,
        queue: webhookQueue,
        allowPrivate: config.webhookAllowPrivate,
        secretsKey: config.secretsKey,
      })
    }

    if (config.adminToken) await app.register(adminRoutes, { token: config.adminToken, queues: dashboard ? queues : [] })

    app.setNotFoundHandler({ preHandler: app.rateLimit() }, (request) => {
      throw new ApiError(404, 'not_found', `There is no route ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.`)
    })

    await app.ready()
    return app
  }
}

/**
 * Fastify's `trustProxy` for `TRUST_PROXY`. Fastify now treats a bare hop count as trusting nothing;
 * an operator who gives one says every request comes through that many proxies, so trust them.
 */
function toTrustProxy(trustProxy: NonNullable<CreateApiParameters['trustProxy']>): FastifyServerOptions['trustProxy'] {
  if (typeof trustProxy === 'number') return (_address: string, hop: number) => hop < trustProxy
  return typeof trustProxy === 'object' ? [...trustProxy] : trustProxy
}

/**
 * The document without the component schemas nothing refers to: the zod provider writes an input and an
 * output variant of every named schema, and responses use only the outputs.
 */
function withoutUnusedSchemas<T extends object>(document: T): T {
  const { components = {} } = document as { components?: { schemas?: Record<string, unknown> } }
  const schemas = { ...components.schemas }
  for (let removed = true; removed; ) {
    removed = false
    const text = JSON.stringify({ ...document, components: { ...components, schemas } })
    for (const name of Object.keys(schemas)) {
      if (text.includes(`"#/components/schemas/${name}"`)) continue
      delete schemas[name]
      removed = true
    }
  }
  return { ...document, components: { ...components, schemas } }
}
