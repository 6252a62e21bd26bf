import type { Queue } from 'bullmq'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import type { Redis } from 'ioredis'
import { z } from 'zod'
import type { ApiContext } from '../context.js'
import type { Metrics } from '../../metrics.js'
import { getIndexedHead } from '../queries/health.js'
import { getSyncStatus, PENDING_RATE_WINDOW_SECONDS } from '../queries/status.js'
import { errorResponses, isoTime } from '../schemas.js'

/** How long readiness and scrapes wait for one dependency before calling it down. */
const CHECK_TIMEOUT_MS = 2_000
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const

export type HealthContext = ApiContext & { redis?: Redis; metrics: Metrics; queues: readonly Queue[] }

const check = z.object({
  status: z.enum(['ok', 'down', 'not_configured']),
  latencyMs: z.number().nullable(),
  error: z.string().nullable().meta({ description: 'Why the check failed: an error code or "timeout".' }),
})

const chainFacts = {
  blockTimeMs: z.number().int().nullable().meta({ description: 'Milliseconds between blocks, as last measured from the node (null before the first probe).' }),
  preconfirmations: z
    .object({ enabled: z.boolean(), source: z.enum(['probe', 'config']) })
    .nullable()
    .meta({ description: "Whether the chain pre-confirms through `pending` (the node's probe, or PRECONFIRMATIONS); when not, no pending rows are written." }),
}

const readiness = z
  .object({
    ready: z.boolean(),
    error: z.object({ code: z.string(), message: z.string() }).optional().meta({ description: 'Present when not ready (503).' }),
    checks: z.object({ database: check, redis: check, node: check }),
    sync: z.object({
      chainId: z.number().int(),
      headBlock: z.number().int().nullable().meta({ description: "The node's latest block." }),
      indexedBlock: z.number().int().nullable().meta({ description: 'The last block the live follower stored.' }),
      lagBlocks: z.number().int().nullable(),
      lagSeconds: z.number().nullable().meta({ description: 'Head block time minus indexed block time.' }),
      ...chainFacts,
    }),
  })
  .meta({ id: 'Readiness' })

const status = z
  .object({
    chainId: z.number().int(),
    headBlock: z.number().int().nullable().meta({ description: "The node's latest block (as the follower last saw it when the node does not answer)." }),
    indexedBlock: z.number().int().nullable().meta({ description: 'The last block the live follower stored.' }),
    indexedAt: isoTime.nullable().meta({ description: 'Block time of indexedBlock.' }),
    finalizedBlock: z.number().int().nullable(),
    lagBlocks: z.number().int().nullable(),
    lagSeconds: z.number().nullable().meta({ description: 'Head block time minus indexed block time.' }),
    pendingLogsPerSecond: z
      .number()
      .nullable()
      .meta({ description: `Pre-confirmed logs first stored in the last ${PENDING_RATE_WINDOW_SECONDS} s, per second; null on a chain without pre-confirmations.` }),
    reorgsLastHour: z.number().int(),
    ...chainFacts,
  })
  .meta({ id: 'SyncStatus' })

type Check = z.output<typeof check>
type Head = { block: number; timestamp: number }

/** How far the index trails the node, when both are known. */
function lag(head: Head | null, indexed: { block: number | null; timestamp: Date | null }) {
  return {
    lagBlocks: head && indexed.block != null ? Math.max(0, head.block - indexed.block) : null,
    lagSeconds: head && indexed.timestamp ? Math.max(0, head.timestamp - indexed.timestamp.getTime() / 1000) : null,
  }
}

async function probe<T>(run: () => Promise<T>): Promise<{ check: Check; value: T | null }> {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'timeout' })), CHECK_TIMEOUT_MS)
    })
    const value = await Promise.race([run(), timeout])
    return { check: { status: 'ok', latencyMs: Math.round(performance.now() - started), error: null }, value }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    return { check: { status: 'down', latencyMs: null, error: typeof code === 'string' || typeof code === 'number' ? String(code) : 'error' }, value: null }
  } finally {
    clearTimeout(timer)
  }
}

const NOT_CONFIGURED: { check: Check; value: null } = { check: { status: 'not_configured', latencyMs: null, error: null }, value: null }

/** `GET /healthz`, `GET /readyz`, `GET /metrics`: exempt from rate limiting. */
export const healthRoutes: FastifyPluginAsyncZod<HealthContext> = async (app, { db, chainId, rpc, redis, metrics, queues }) => {
  const exempt = { rateLimit: false } as const
  const probeHead = async (): Promise<{ check: Check; value: Head | null }> => {
    if (!rpc) return NOT_CONFIGURED
    const node = await probe(() =>
      rpc.request<{ number: string; timestamp: string } | null>('eth_getBlockByNumber', ['latest', false], { timeoutMs: CHECK_TIMEOUT_MS }),
    )
    return { check: node.check, value: node.value ? { block: Number(node.value.number), timestamp: Number(node.value.timestamp) } : null }
  }

  app.get(
    '/healthz',
    {
      config: exempt,
      schema: {
        operationId: 'getHealth',
        tags: ['operations'],
        summary: 'The process is up',
        response: { 200: z.object({ status: z.literal('ok') }), ...errorResponses(400) },
      },
    },
    async () => ({ status: 'ok' as const }),
  )

  app.get(
    '/readyz',
    {
      config: exempt,
      schema: {
        tags: ['operations'],
        operationId: 'getReadiness',
        summary: 'Database, Redis and node reachable, and how far indexing lags the node',
        description: 'Answers 503 with the same body when the database, Redis or the node is down.',
        querystring: z.strictObject({}),
        response: { 200: readiness, 503: readiness, ...errorResponses(400) },
      },
    },
    async (_request, reply) => {
      const [database, cache, node] = await Promise.all([
        probe(() => getIndexedHead(db, chainId)),
        redis ? probe(() => redis.ping()) : NOT_CONFIGURED,
        probeHead(),
      ])
      const head = node.value
      const indexed = database.value
      const down = Object.entries({ database, redis: cache, node }).filter(([, result]) => result.check.status === 'down')
      const ready = down.length === 0
      reply.status(ready ? 200 : 503)
      return {
        ready,
        ...(ready
          ? {}
          : { error: { code: 'not_ready', message: `Not ready: ${down.map(([name]) => name).join(', ')} ${down.length > 1 ? 'are' : 'is'} not reachable.` } }),
        checks: { database: database.check, redis: cache.check, node: node.check },
        sync: {
          chainId,
          headBlock: head?.block ?? null,
          indexedBlock: indexed?.block ?? null,
          ...lag(head, indexed ?? { block: null, timestamp: null }),
          blockTimeMs: indexed?.chain.blockTimeMs ?? null,
          preconfirmations: indexed?.chain.preconfirmations ?? null,
        },
      }
    },
  )

  app.get(
    '/v1/status',
    {
      schema: {
        operationId: 'getStatus',
        tags: ['operations'],
        summary: "The chain head, the index's position and finality, sync lag, pending log rate and recent reorgs",
        description: 'Cheap enough to poll: what the dashboard overview shows.',
        querystring: z.strictObject({}),
        response: { 200: status, ...errorResponses(429, 503) },
      },
    },
    async () => {
      const [sync, node] = await Promise.all([getSyncStatus(db, chainId), probeHead()])
      const indexed = { block: sync.indexedBlock, timestamp: sync.indexedTimestamp }
      return {
        chainId,
        headBlock: node.value?.block ?? sync.headBlock,
        indexedBlock: sync.indexedBlock,
        indexedAt: sync.indexedTimestamp?.toISOString() ?? null,
        finalizedBlock: sync.finalizedBlock,
        ...lag(node.value, indexed),
        pendingLogsPerSecond: sync.chain.preconfirmations?.enabled === false ? null : sync.pendingLogsPerSecond,
        reorgsLastHour: sync.reorgsLastHour,
        ...sync.chain,
      }
    },
  )

  app.get(
    '/metrics',
    {
      config: exempt,
      schema: {
        operationId: 'getMetrics',
        tags: ['operations'],
        summary: 'Prometheus metrics',
        description: "This process's series in the Prometheus text format (roles without the API serve them on METRICS_PORT).",
        produces: ['text/plain'],
        response: {
          200: { description: 'Prometheus text exposition format.', content: { 'text/plain': { schema: z.string() } } },
          ...errorResponses(400),
        },
      },
    },
    async (_request, reply) => {
      await Promise.all(queues.map((queue) => probe(() => recordQueueDepth(metrics, queue))))
      reply.header('content-type', metrics.registry.contentType)
      return metrics.registry.metrics()
    },
  )
}

async function recordQueueDepth(metrics: Metrics, queue: Queue): Promise<void> {
  const counts = await queue.getJobCounts(...QUEUE_STATES, 'failed')
  for (const state of QUEUE_STATES) metrics.queueDepth.set({ queue: queue.name, state }, counts[state] ?? 0)
  metrics.failedJobs.set({ queue: queue.name }, counts.failed ?? 0)
}
