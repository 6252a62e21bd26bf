/** The daemon's roles: which parts run in this process, and how they stop. */
import { migratesOnStart, type Config, type Role } from './config/index.js'
import { createIndexer, createNodeClient } from './indexer.js'
import { NONCE_WALLETS_PER_MINUTE } from './attribution/coverage.js'
import type { Logger } from './internal/logger.js'
import { stopServices, type Service } from './internal/shutdown.js'
import { createApi, createApiRedis } from './api/index.js'
import { createMetrics, serveMetrics, type Metrics } from './internal/metrics.js'
import { checkRedis, createGasWorker, createRangeQueue, createRangeWorker, createRedis, createWebhookQueue, createWebhookWorker, rangeJobId } from './queue/index.js'
import { createDeliveryProcessor, createDispatcher } from './delivery/index.js'
import { toRpcFilter } from './sync/filter.js'
import type { FollowEvent } from './sync/realtime.js'
import { planBackfill } from './sync/historical.js'
import { createRepairRunner } from './reorg/index.js'
import { startScheduler } from './sync/scheduler.js'
import { followNewHeads, followPendingLogs } from './sync/subscription.js'
import { whilePreconfirming } from './chains/index.js'
import { runEvery } from './utils/loop.js'
import { createStore, indexedChainIds, pruneRawHistory, runMigrations } from './store/index.js'
import { getChainId, type RpcClient } from './rpc/index.js'
import { briefly } from './internal/errors.js'
import { redactUrl } from './utils/redact.js'

/** How often the scheduler reads registered wallets' nonces for `analytics.wallet_coverage`. */
const COVERAGE_REFRESH_MS = 15_000
/** How often the leader plans what is missing of the BuilderCodes registry's range (planning is idempotent). */
const REGISTRY_BACKFILL_CHECK_MS = 60_000
/** How often the leader deletes raw history older than RETENTION_LOGS_DAYS (each pass in short batches). */
const RETENTION_CHECK_MS = 10 * 60_000
/** Longest drain lease of a webhook subscription: a killed worker's subscription is drained again after it. */
const DRAIN_LEASE_MS = 10_000
/** Connections of the webhook deliveries (each holds one per query, two queries per window of events). */
const WEBHOOK_POOL_SIZE = 8


export async function startDaemon(config: Config, role: Role, logger: Logger): Promise<Service[]> {
  const migrate = migratesOnStart(config, role)
  if (role === 'api') return startApiRole(config, logger, { migrate })
  await checkRedis(config.redisUrl)
  const metrics = createMetrics()
  const indexer = await createIndexer(config, logger, metrics, { migrate })
  const chain = { chain_id: String(indexer.chainId) }
  const services: Service[] = [{ name: 'store', stop: () => indexer.close() }]
  const runs = (part: Role) => role === 'all' || role === part
  try {
    if (runs('worker')) {
      const worker = createRangeWorker({
        redisUrl: config.redisUrl,
        prefix: config.redisPrefix,
        concurrency: config.workerConcurrency,
        lockDurationMs: config.jobLockMs,
        logger,
        process: async (data) => {
          try {
            const result = await indexer.processRange(data)
            metrics.logsIngested.inc({ ...chain, status: 'confirmed' }, result.inserted)
            metrics.rangeJobs.inc({ ...chain, outcome: 'completed' })
            return result
          } catch (error) {
            metrics.rangeJobs.inc({ ...chain, outcome: 'failed' })
            throw error
          }
        },
      })
      services.push({ name: 'worker', stop: () => worker.close() })
      const gasWorker = createGasWorker({ redisUrl: config.redisUrl, prefix: config.redisPrefix, lockDurationMs: config.jobLockMs, logger, process: indexer.fillGas })
      services.push({ name: 'gas-worker', stop: () => gasWorker.close() })
      // Deliveries get connections of their own: a backfill holding the indexer's pool must not stall them.
      const deliveryStore = createStore({ databaseUrl: config.databaseUrl, max: WEBHOOK_POOL_SIZE, applicationName: 'codetrail-webhooks' })
      services.push({ name: 'webhook-store', stop: () => deliveryStore.close() })
      const webhookQueue = createWebhookQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
      services.push({ name: 'webhook-queue', stop: () => webhookQueue.close() })
      const webhookWorker = createWebhookWorker({
        redisUrl: config.redisUrl,
        prefix: config.redisPrefix,
        lockDurationMs: config.jobLockMs,
        logger,
        process: createDeliveryProcessor({
          pool: deliveryStore.pool,
          logger,
          timeoutMs: config.webhookTimeoutMs,
          maxFailures: config.webhookMaxFailures,
          backoffMs: config.webhookBackoffMs,
          allowPrivate: config.webhookAllowPrivate,
          leaseMs: Math.min(config.jobLockMs, DRAIN_LEASE_MS),
          enqueue: webhookQueue.enqueue,
          secretsKey: config.secretsKey,
        }),
      })
      services.push({ name: 'webhook-worker', stop: () => webhookWorker.close() })
    }
    if (runs('scheduler')) {
      const redis = createRedis(config.redisUrl)
      services.push({ name: 'redis', stop: async () => redis.disconnect() })
      const repairQueue = createRangeQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
      services.push({ name: 'repair-queue', stop: () => repairQueue.close() })
      const deliveryQueue = createWebhookQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
      services.push({ name: 'delivery-queue', stop: () => deliveryQueue.close() })
      const dispatcher = createDispatcher({ pool: indexer.store.pool, logger, enqueue: deliveryQueue.enqueue, retentionDays: config.webhookRetentionDays, fence: indexer.fence.check })
      const repairRunner = createRepairRunner({
        pool: indexer.store.pool,
        logger,
        chainId: indexer.chainId,
        followerFilterId: indexer.filterId,
        chunkBlocks: config.chunkBlocks,
        processRange: indexer.processRange,
        enqueue: repairQueue.enqueue,
        failedJobs: async (jobs) => (await repairQueue.failedJobs(jobs.map(rangeJobId))).map((job) => ({ reason: job.failedReason, at: job.finishedOn ?? 0 })),
      })
      const repairs = {
        run: async () => {
          const result = await repairRunner.run()
          metrics.repairsOpen.set(chain, result.open)
          metrics.repairsQuarantined.set(chain, result.quarantined)
          return result
        },
      }
      // The registry's history up to the head, for the workers (the head follower reads it from there on):
      // planned again by each leader and every minute, so jobs lost with Redis or failed for good come back.
      const registry = indexer.registry
      const registryBackfill = registry
        ? async () => {
            const head = await indexer.blockNumberAt('latest')
            if (head < registry.startBlock) return
            const range = [registry.startBlock, head] as const
            const plan = await planBackfill(indexer.store.pool, { chainId: indexer.chainId, filter: registry.filter, range, chunkBlocks: config.chunkBlocks })
            if (plan.jobs.length === 0) return
            await repairQueue.enqueue(plan.jobs)
            logger.info({ chain_id: indexer.chainId, from_block: range[0], to_block: range[1], jobs: plan.jobs.length }, 'builder codes registry backfill enqueued')
          }
        : undefined
      const { profiler } = indexer
      await profiler.refresh().catch((error: unknown) =>
        logger.warn({ chain_id: indexer.chainId, err: error }, 'chain probe failed: following as a pre-confirming chain of 2 s blocks until one answers'),
      )
      const wsUrl = config.rpcWsUrl
      const scheduler = startScheduler({
        redis,
        keyPrefix: config.redisPrefix,
        chainId: indexer.chainId,
        logger,
        follower: indexer.follower,
        fence: indexer.fence,
        repairs,
        poller: {
          ...indexer.poller,
          poll: async () => {
            const started = performance.now()
            const result = await indexer.poller.poll()
            if (result.changed > 0) {
              metrics.pendingLatency.observe(chain, (performance.now() - started) / 1000)
              metrics.logsIngested.inc({ ...chain, status: 'pending' }, result.changed)
            }
            return result
          },
        },
        // With newHeads announcing blocks, polling only backs the subscription up (and feeds its watchdog).
        headPollMs: () => (wsUrl ? (config.headPollMs ?? Math.max(1_000, 5 * profiler.current().blockTimeMs)) : profiler.current().headPollMs),
        pendingPollMs: config.pendingPollMs,
        profiler,
        ...(wsUrl
          ? {
              heads: (signal: AbortSignal, onHead: () => void) =>
                followNewHeads({
                  url: wsUrl,
                  logger,
                  signal,
                  onHead: (header) => {
                    indexer.follower.announce(header)
                    onHead()
                  },
                  silentAfterMs: () => Math.max(2_000, 10 * profiler.current().blockTimeMs),
                  httpHead: indexer.follower.lastHead,
                }),
            }
          : {}),
        whileLeader: async (signal: AbortSignal) => {
          const perRefresh = Math.ceil((NONCE_WALLETS_PER_MINUTE * COVERAGE_REFRESH_MS) / 60_000)
          const coverage = runEvery(COVERAGE_REFRESH_MS, () => indexer.refreshWalletNonces(perRefresh), { signal, logger, name: 'wallet-coverage' })
          const registryCheck = registryBackfill && runEvery(REGISTRY_BACKFILL_CHECK_MS, registryBackfill, { signal, logger, name: 'registry-backfill' })
          const retentionDays = config.retentionLogsDays
          const retention =
            retentionDays !== undefined &&
            runEvery(
              RETENTION_CHECK_MS,
              async () => {
                const pruned = await pruneRawHistory(indexer.store.pool, indexer.chainId, new Date(Date.now() - retentionDays * 86_400_000))
                if (pruned.logs > 0 || pruned.transactions > 0) logger.info({ chain_id: indexer.chainId, ...pruned, retention_days: retentionDays }, 'raw history pruned')
              },
              { signal, logger, name: 'retention' },
            )
          const reprobe = profiler.run(signal)
          const subscription =
            wsUrl && config.pendingPollMs > 0
              ? whilePreconfirming(profiler, signal, (subscribed) =>
                  followPendingLogs({
                    url: wsUrl,
                    filter: toRpcFilter(indexer.filter),
                    logger,
                    signal: subscribed,
                    onLogs: async (logs) => {
                      const changed = await indexer.poller.store(logs)
                      metrics.logsIngested.inc({ ...chain, status: 'pending' }, changed)
                      return changed
                    },
                  }),
                )
              : undefined
          await Promise.all([coverage, registryCheck, retention, reprobe, subscription, dispatcher.run(signal)])
        },
        onFollowEvent: (event) => {
          recordFollowEvent(metrics, chain, event)
          if (event.type !== 'idle') logger.info({ chain_id: indexer.chainId, ...event }, `head follower: ${event.type}`)
        },
      })
      services.push({ name: 'scheduler', stop: () => scheduler.stop() })
    }
    if (runs('api')) services.push(await startApi(config, logger, metrics, { chainId: indexer.chainId, rpc: indexer.rpc }))
    if (!runs('api') && config.metricsPort !== undefined) {
      const server = await serveMetrics({ metrics, port: config.metricsPort })
      logger.info({ address: server.address }, 'metrics listening')
      services.push({ name: 'metrics', stop: () => server.close() })
    }
  } catch (error) {
    await stopServices(services, logger)
    throw error
  }
  logger.info({ role, chain_id: indexer.chainId, services: services.map((s) => s.name) }, 'codetrail started')
  return services
}

/** The HTTP API on `config.port`, serving `chainId`'s rows; `rpc` answers wallet nonces and readiness. */
async function startApi(config: Config, logger: Logger, metrics: Metrics, { chainId, rpc }: { chainId: number; rpc: RpcClient }): Promise<Service> {
  const redis = createApiRedis(config.redisUrl, logger)
  const queue = createRangeQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
  const api = await createApi({
    config,
    chainId,
    redis,
    rpc,
    logger,
    metrics,
    queues: [queue.queue],
    rateLimit: config.apiRateLimit,
    statementTimeoutMs: config.apiStatementTimeoutMs,
    dbPoolSize: config.apiDbPoolSize,
    trustProxy: config.trustProxy,
    corsOrigins: config.corsOrigins,
    registrationRateLimit: config.registrationRateLimit,
  })
  const address = await api.listen()
  logger.info({ address }, 'api listening')
  return {
    name: 'api',
    stop: async () => {
      await api.close()
      await queue.close()
      redis.disconnect()
    },
  }
}

/**
 * The `api` role alone: needs only the database (Redis backs its rate limits when it is there). It
 * serves the one chain the database indexes, and asks the node only when the database holds none.
 */
async function startApiRole(config: Config, logger: Logger, { migrate }: { migrate: boolean }): Promise<Service[]> {
  const metrics = createMetrics()
  const store = createStore({ databaseUrl: config.databaseUrl, max: 1, applicationName: 'codetrail-api-start' })
  let chainIds: number[]
  try {
    if (migrate) await runMigrations(store.pool)
    chainIds = await indexedChainIds(store.pool).catch((error: Error & { code?: string }) => {
      // 42P01 undefined_table: reachable, never migrated.
      if (error.code !== '42P01') throw new Error(`PostgreSQL is not reachable at ${redactUrl(config.databaseUrl)} (${briefly(error)}): start it, or set DATABASE_URL`)
      throw new Error(`the database at ${redactUrl(config.databaseUrl)} has no codetrail tables: run codetrail migrate, or set MIGRATE_ON_START=1`)
    })
  } finally {
    await store.close()
  }
  const rpc = createNodeClient(config, logger, metrics)
  const chainId =
    chainIds.length === 1
      ? chainIds[0]!
      : await getChainId(rpc).catch((error: unknown) => {
          throw new Error(
            `the database indexes ${chainIds.length === 0 ? 'no chain yet' : `chains ${chainIds.join(', ')}`} and the node is not reachable at ${redactUrl(config.rpcUrl)} (${briefly(error)}): start an indexing role first, or set RPC_URL`,
          )
        })
  const api = await startApi(config, logger, metrics, { chainId, rpc })
  logger.info({ role: 'api', chain_id: chainId, services: [api.name] }, 'codetrail started')
  return [api]
}

function recordFollowEvent(metrics: Metrics, chain: { chain_id: string }, event: FollowEvent) {
  if (event.type === 'blocks') {
    metrics.logsIngested.inc({ ...chain, status: 'confirmed' }, event.logs)
    metrics.pendingLogsConfirmed.inc({ ...chain, content: 'changed' }, event.diverged)
    metrics.pendingLogsConfirmed.inc({ ...chain, content: 'unchanged' }, event.confirmed - event.diverged)
  }
  if (event.type === 'reorg') {
    metrics.reorgs.inc(chain)
    metrics.reorgDepth.observe(chain, event.depth)
  }
  if (event.type === 'idle' || event.type === 'blocks') metrics.blocksBehindHead.set(chain, event.type === 'idle' ? 0 : event.head - event.to)
}

