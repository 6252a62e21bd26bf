import type { Queue } from 'bullmq'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import type { Redis } from 'ioredis'
import { z } from 'zod'
import type { ReplicaStatus } from '../../store/index.js'
import { requestedChain, type ApiContext } from '../context.js'
import type { Metrics } from '../../internal/metrics.js'
import { getSyncStatus, listChainSummaries, PENDING_RATE_WINDOW_SECONDS } from '../../store/reads/index.js'
import { chainIdParam, errorResponses, isoTime } from '../schemas.js'
import { createHealthSnapshot, probe, type Head } from '../snapshot.js'

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const

export type HealthContext = ApiContext & {
  redis?: Redis
  metrics: Metrics
  queues: readonly Queue[]
  snapshotMaxAgeMs?: number
  /** `RETENTION_LOGS_DAYS`: what /v1/status says is kept of raw history. */
  retentionLogsDays?: number | undefined
}

const check = z.object({
  status: z.enum(['ok', 'down', 'not_configured']),
  latencyMs: z.number().nullable(),
  error: z.string().nullable().meta({ description: 'Why the check failed: an error code or "timeout".' }),
})

const chainFacts = {
  blockTimeMs: z
    .number()
    .int()
    .nullable()
    .meta({ description: 'Milliseconds between blocks, as last measured from the node (null before the first probe).' }),
  preconfirmations: z
    .object({ enabled: z.boolean(), source: z.enum(['probe', 'config']) })
    .nullable()
    .meta({
      description:
        "Whether the chain pre-confirms through `pending` (the node's probe, or PRECONFIRMATIONS); when not, no pending rows are written.",
    }),
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
    headBlock: z
      .number()
      .int()
      .nullable()
      .meta({ description: "The node's latest block (as the follower last saw it when the node does not answer)." }),
    indexedBlock: z.number().int().nullable().meta({ description: 'The last block the live follower stored.' }),
    indexedAt: isoTime.nullable().meta({ description: 'Block time of indexedBlock.' }),
    finalizedBlock: z.number().int().nullable(),
    lagBlocks: z.number().int().nullable(),
    lagSeconds: z.number().nullable().meta({ description: 'Head block time minus indexed block time.' }),
    pendingLogsPerSecond: z
      .number()
      .nullable()
      .meta({
        description: `Pre-confirmed logs first stored in the last ${PENDING_RATE_WINDOW_SECONDS} s, per second; null on a chain without pre-confirmations.`,
      }),
    reorgsLastHour: z.number().int(),
    gasUsedMissing: z.number().int().meta({
      description:
        "Attributed, confirmed transactions whose gas used is not filled yet: range jobs leave it to a follow-up job, so a backfill's tail shows here until its receipts are read.",
    }),
    retention: z
      .object({
        logsDays: z.number().int().nullable().meta({
          description:
            'RETENTION_LOGS_DAYS: finalized raw logs and unattributed transactions older than this are deleted; null keeps everything.',
        }),
        logsSince: isoTime.nullable().meta({ description: 'Block time of the oldest log kept; null while none is stored.' }),
      })
      .meta({
        description: 'What is kept of raw history. Attributions, their transactions, the rollups and the registry logs are always kept.',
      }),
    ...chainFacts,
    readReplica: z
      .object({
        state: z
          .enum(['serving', 'lagging', 'down'])
          .meta({ description: 'serving: reads go to the replica; lagging or down: to the primary until it catches up.' }),
        lagMs: z
          .number()
          .int()
          .nullable()
          .meta({ description: 'How far the replica trails the primary, in ms; null while it cannot be measured.' }),
        maxLagMs: z.number().int().meta({ description: 'READ_MAX_LAG_MS: beyond this the replica is bypassed.' }),
        checkedAt: isoTime.nullable(),
      })
      .nullable()
      .meta({ description: 'The read replica (DATABASE_READ_URL), measured every second; null when none is configured.' }),
    chains: z
      .array(
        z.object({
          chainId: z.number().int(),
          name: z
            .string()
            .nullable()
            .meta({ description: "The chain's name in the config file; null for a chain configured through the environment." }),
          headBlock: z.number().int().nullable(),
          indexedBlock: z.number().int().nullable(),
          finalizedBlock: z.number().int().nullable(),
          lagBlocks: z.number().int().nullable(),
          endpoints: z
            .array(
              z.object({
                url: z.string().meta({ description: 'Scheme, host and port: never a key.' }),
                weight: z.number(),
                head: z.number().int().nullable().meta({ description: 'Its latest block at the last look.' }),
                state: z.enum(['serving', 'resting', 'lagging', 'refused', 'wrong_chain']).meta({
                  description:
                    'serving: in rotation; resting: failed, probed back in; lagging: behind the best head; refused: its key was refused (401/403); wrong_chain: it says another chain id than the configured one.',
                }),
                chainId: z
                  .number()
                  .int()
                  .nullable()
                  .meta({ description: 'What it answered eth_chainId since its last failure; null until it answers.' }),
                lastError: z.string().nullable(),
              }),
            )
            .nullable()
            .meta({
              description:
                "The chain's RPC endpoints as this process's node client sees them (each asked eth_chainId at start, after a failure and every few seconds); null for a chain with one endpoint, or one this process runs no node client for.",
            }),
        }),
      )
      .meta({ description: 'Every chain this deployment indexes, as its head follower last saw it (analytics.chains).' }),
  })
  .meta({ id: 'SyncStatus' })

/** How far the index trails the node, when both are known. */
function lag(head: Head | null, indexed: { block: number | null; timestamp: Date | null }) {
  return {
    lagBlocks: head && indexed.block != null ? Math.max(0, head.block - indexed.block) : null,
    lagSeconds: head && indexed.timestamp ? Math.max(0, head.timestamp - indexed.timestamp.getTime() / 1000) : null,
  }
}

function readReplica({ state, lagMs, maxLagMs, checkedAt }: ReplicaStatus) {
  return { state, lagMs, maxLagMs, checkedAt: checkedAt?.toISOString() ?? null }
}

/** `GET /healthz`, `GET /readyz`, `GET /metrics`: exempt from rate limiting. */
export const healthRoutes: FastifyPluginAsyncZod<HealthContext> = async (
  app,
  { db, chainId, chainIds, rpc, endpointsOf, redis, metrics, queues, snapshotMaxAgeMs, replica, retentionLogsDays },
) => {
  const exempt = { rateLimit: false } as const
  const snapshot = createHealthSnapshot({ db, chainId, rpc, redis, maxAgeMs: snapshotMaxAgeMs })

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
        summary: 'Database reachable; Redis, node and how far indexing lags the node reported',
        description:
          'Ready (200) while the database answers: the API serves from it, so Redis or the node being down is reported in checks without taking the API out of a load balancer. ' +
          'Answers 503 with the same body when the database is down. Served from a snapshot at most a few seconds old.',
        querystring: z.strictObject({}),
        response: { 200: readiness, 503: readiness, ...errorResponses(400) },
      },
    },
    async (_request, reply) => {
      const [database, cache, node] = await Promise.all([snapshot.database(), snapshot.redis(), snapshot.node()])
      const head = node.value
      const indexed = database.value
      const ready = database.check.status !== 'down'
      reply.status(ready ? 200 : 503)
      return {
        ready,
        ...(ready ? {} : { error: { code: 'not_ready', message: 'Not ready: database is not reachable.' } }),
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
        description:
          'Cheap enough to poll: what the dashboard overview shows, from a snapshot at most a few seconds old. chainId picks another chain than the first configured one (its head as its follower last saw it); chains lists every chain.',
        querystring: z.strictObject({ chainId: chainIdParam.optional() }),
        response: { 200: status, ...errorResponses(429, 503) },
      },
    },
    async (request) => {
      const asked = requestedChain({ chainId, chainIds }, request.query.chainId)
      // The snapshot and the node are the default chain's; another chain is read from its follower's state.
      const [sync, node, chains] = await Promise.all([
        asked === chainId ? snapshot.sync() : getSyncStatus(db, asked),
        asked === chainId ? snapshot.node() : { value: null },
        listChainSummaries(db, chainIds),
      ])
      const indexed = { block: sync.indexedBlock, timestamp: sync.indexedTimestamp }
      return {
        chainId: asked,
        headBlock: node.value?.block ?? sync.headBlock,
        indexedBlock: sync.indexedBlock,
        indexedAt: sync.indexedTimestamp?.toISOString() ?? null,
        finalizedBlock: sync.finalizedBlock,
        ...lag(node.value, indexed),
        pendingLogsPerSecond: sync.chain.preconfirmations?.enabled === false ? null : sync.pendingLogsPerSecond,
        reorgsLastHour: sync.reorgsLastHour,
        gasUsedMissing: sync.gasUsedMissing,
        retention: { logsDays: retentionLogsDays ?? null, logsSince: sync.oldestLogTimestamp?.toISOString() ?? null },
        ...sync.chain,
        readReplica: replica ? readReplica(replica()) : null,
        chains: chains.map((chain) => ({ ...chain, endpoints: endpointsOf?.(chain.chainId) ?? null })),
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
