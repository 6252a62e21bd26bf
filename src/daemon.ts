/** The daemon's roles: which parts run in this process, and how they stop. */
import { forChain, migratesOnStart, type Config, type Role } from './config/index.js'
import { createIndexer, createNodeClient, type Indexer } from './indexer.js'
import { NONCE_WALLETS_PER_MINUTE } from './attribution/coverage.js'
import { createRegistryResolver } from './attribution/registryResolver.js'
import type { Logger } from './internal/logger.js'
import { stopServices, type Service } from './internal/shutdown.js'
import { createApi, createApiRedis } from './api/index.js'
import { createMetrics, serveMetrics, type Metrics } from './internal/metrics.js'
import { UnrecoverableError } from 'bullmq'
import {
  checkRedis,
  createGasWorker,
  createRangeQueue,
  createRangeWorker,
  createRedis,
  createWebhookQueue,
  createWebhookWorker,
  FATAL_REASON_PREFIX,
  rangeJobId,
  rangeQueueName,
} from './queue/index.js'
import { createDeliveryProcessor, createDispatcher } from './delivery/index.js'
import { toRpcFilter } from './sync/filter.js'
import type { FollowEvent } from './sync/realtime.js'
import { planBackfill } from './sync/historical.js'
import { sweepOwedGas } from './sync/gasFill.js'
import { createRepairRunner } from './reorg/index.js'
import { startScheduler } from './sync/scheduler.js'
import { whileLeaseHeld } from './sync/lease.js'
import { followNewHeads, followPendingLogs } from './sync/subscription.js'
import { CHAIN_ID_WATCH_MS, ChainMismatchError, whilePreconfirming, type ChainIdentity } from './chains/index.js'
import { runEvery, sleep } from './utils/loop.js'
import {
  createDeliveryLeaseFence,
  createStore,
  ensureMonthPartitions,
  MONTH_PARTITIONS_CHECK_MS,
  indexedChainIds,
  pruneRawHistory,
  runMigrations,
} from './store/index.js'
import { getChainId, type EndpointState, type RpcClient } from './rpc/index.js'
import { briefly } from './internal/errors.js'
import { redactUrl } from './utils/redact.js'

/** How often the scheduler reads registered wallets' nonces for `analytics.wallet_coverage`. */
const COVERAGE_REFRESH_MS = 15_000
/** How often the leader plans what is missing of the BuilderCodes registry's range (planning is idempotent). */
const REGISTRY_BACKFILL_CHECK_MS = 60_000
/**
 * How often the leader looks for attributed rows whose gas used no fill is on its way to: a fill lost
 * with Redis, or never queued because its range job died between its commit and the queueing.
 */
const GAS_SWEEP_MS = 15_000
/** How often the leader deletes raw history older than RETENTION_LOGS_DAYS (each pass in short batches). */
const RETENTION_CHECK_MS = 10 * 60_000
/** Longest drain lease of a webhook subscription: a killed worker's subscription is drained again after it. */
const DRAIN_LEASE_MS = 10_000
/** Connections of the webhook deliveries (each holds one per query, two queries per window of events). */
const WEBHOOK_POOL_SIZE = 8
/** Connections of the webhook dispatcher: its outbox listener, a dispatch round, the reconciler and pruning. */
const DISPATCH_POOL_SIZE = 4
/** How long a dead dispatcher's delivery lease blocks the next one; renewed every third of it. */
const DELIVERY_LEASE_MS = 5_000

/** What the daemon does when a part finds it must not go on (the node serves another chain): stop every role. */
export type DaemonHooks = { onFatal?: (error: Error) => void }

export async function startDaemon(config: Config, role: Role, logger: Logger, { onFatal }: DaemonHooks = {}): Promise<Service[]> {
  const migrate = migratesOnStart(config, role)
  if (role === 'api') return startApiRole(config, logger, { migrate })
  await checkRedis(config.redisUrl)
  const metrics = createMetrics()
  const services: Service[] = []
  const indexers: Indexer[] = []
  /** Each indexer's configuration: the shared settings with its chain's fields. */
  const configOf = new Map<Indexer, Config>()
  const runs = (part: Role) => role === 'all' || role === part
  // One for every chain: a schema-1 suffix on one chain may name a registry on another.
  const registries = createRegistryResolver()
  try {
    // One indexer per chain: its own node client, pool, filters, profile, follower and poller.
    for (const [i, chain] of config.chains.entries()) {
      // With several chains, one whose node is down at start waits for it; the others start.
      const chainConfig = forChain(config, chain)
      const several = config.chains.length > 1
      const indexer = await createIndexer(chainConfig, logger, metrics, {
        migrate: migrate && i === 0,
        nodeMayBeDown: several,
        labelChainInMetrics: several,
        registries,
      })
      indexers.push(indexer)
      configOf.set(indexer, chainConfig)
      services.push({ name: config.chains.length > 1 ? `store-${chain.chainName}` : 'store', stop: () => indexer.close() })
      services.push(watchChainId(indexer.identity, logger, onFatal))
    }
    const queueName = (indexer: Indexer) => rangeQueueName(config, indexer.chainId)
    if (runs('worker')) {
      // A worker per chain and queue: a chain whose node hangs holds only its own jobs' slots.
      for (const indexer of indexers) {
        const chain = { chain_id: String(indexer.chainId) }
        const worker = createRangeWorker({
          redisUrl: config.redisUrl,
          prefix: config.redisPrefix,
          name: queueName(indexer),
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
              metrics.rangeJobs.inc({ chain_id: String(data.chainId), outcome: error instanceof ChainMismatchError ? 'refused' : 'failed' })
              throw error
            }
          },
        })
        services.push({ name: indexers.length > 1 ? `worker-${configOf.get(indexer)!.chainName}` : 'worker', stop: () => worker.close() })
      }
      // Gas fills of every chain share one queue: each job goes to its chain's indexer (another chain's is refused).
      const indexerOf = new Map(indexers.map((indexer) => [indexer.chainId, indexer]))
      const gasWorker = createGasWorker({
        redisUrl: config.redisUrl,
        prefix: config.redisPrefix,
        lockDurationMs: config.jobLockMs,
        logger,
        process: (data) => {
          const indexer = indexerOf.get(data.chainId)
          if (!indexer)
            throw new UnrecoverableError(`${FATAL_REASON_PREFIX}gas fill for chain ${data.chainId}, which this process does not index`)
          return indexer.fillGas(data)
        },
      })
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
      const deliveryQueue = createWebhookQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
      services.push({ name: 'delivery-queue', stop: () => deliveryQueue.close() })
      // The outbox is one for every chain: its dispatcher runs under a lease of its own, so no chain's node or leader holds it up.
      const dispatchStore = createStore({ databaseUrl: config.databaseUrl, max: DISPATCH_POOL_SIZE, applicationName: 'codetrail-dispatch' })
      services.push({ name: 'dispatch-store', stop: () => dispatchStore.close() })
      const dispatchFence = createDeliveryLeaseFence(dispatchStore.pool)
      const dispatcher = createDispatcher({
        pool: dispatchStore.pool,
        logger,
        enqueue: deliveryQueue.enqueue,
        retentionDays: config.webhookRetentionDays,
        fence: dispatchFence.check,
      })
      const delivery = whileLeaseHeld({
        redis,
        key: `${config.redisPrefix}:delivery`,
        ttlMs: DELIVERY_LEASE_MS,
        logger,
        fields: { lease: 'delivery' },
        name: 'delivery',
        fence: dispatchFence,
        lead: (term) => dispatcher.run(term.signal),
      })
      services.push({ name: 'dispatcher', stop: () => delivery.stop() })
      // Side by side: a chain whose node is slow to answer its first probe holds up no other chain.
      const started = await Promise.allSettled(
        indexers.map((indexer) =>
          startChainScheduler({
            config,
            chainConfig: configOf.get(indexer)!,
            indexer,
            queueName: queueName(indexer),
            redis,
            logger,
            metrics,
          }),
        ),
      )
      for (const result of started) if (result.status === 'fulfilled') services.push(...result.value)
      const failed = started.find((result) => result.status === 'rejected')
      if (failed) throw failed.reason
    }
    if (runs('api'))
      services.push(
        await startApi(config, logger, metrics, {
          chainId: indexers[0]!.chainId,
          chainIds: indexers.map((indexer) => indexer.chainId),
          rpc: indexers[0]!.rpc,
          endpointsOf: (chainId) => indexers.find((indexer) => indexer.chainId === chainId)?.rpc.endpoints() ?? null,
        }),
      )
    if (!runs('api') && config.metricsPort !== undefined) {
      const server = await serveMetrics({ metrics, port: config.metricsPort })
      logger.info({ address: server.address }, 'metrics listening')
      services.push({ name: 'metrics', stop: () => server.close() })
    }
  } catch (error) {
    await stopServices(services, logger)
    throw error
  }
  logger.info(
    {
      role,
      chain_id: indexers.length === 1 ? indexers[0]!.chainId : indexers.map((indexer) => indexer.chainId),
      services: services.map((s) => s.name),
    },
    'codetrail started',
  )
  return services
}

/**
 * One chain's single-instance parts under its own scheduler lease: the head follower, the pending poller
 * and subscription, repairs, finality, the registry's backfill and wallet coverage. Nothing here waits on
 * another chain's node.
 */
async function startChainScheduler({
  config,
  chainConfig,
  indexer,
  queueName,
  redis,
  logger,
  metrics,
}: {
  config: Config
  /** `config` with this chain's fields. */
  chainConfig: Config
  indexer: Indexer
  queueName: string
  redis: ReturnType<typeof createRedis>
  logger: Logger
  metrics: Metrics
}): Promise<Service[]> {
  const suffix = config.chains.length > 1 ? `-${chainConfig.chainName}` : ''
  const chain = { chain_id: String(indexer.chainId) }
  const services: Service[] = []
  const repairQueue = createRangeQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix, name: queueName })
  services.push({ name: `repair-queue${suffix}`, stop: () => repairQueue.close() })
  const repairRunner = createRepairRunner({
    pool: indexer.store.pool,
    logger,
    chainId: indexer.chainId,
    followerFilterId: indexer.filterId,
    chunkBlocks: config.chunkBlocks,
    processRange: indexer.processRange,
    enqueue: repairQueue.enqueue,
    failedJobs: async (jobs) =>
      (await repairQueue.failedJobs(jobs.map(rangeJobId))).map((job) => ({ reason: job.failedReason, at: job.finishedOn ?? 0 })),
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
        const plan = await planBackfill(indexer.store.pool, {
          chainId: indexer.chainId,
          filter: registry.filter,
          range,
          chunkBlocks: config.chunkBlocks,
        })
        if (plan.jobs.length === 0) return
        await repairQueue.enqueue(plan.jobs)
        logger.info(
          { chain_id: indexer.chainId, from_block: range[0], to_block: range[1], jobs: plan.jobs.length },
          'builder codes registry backfill enqueued',
        )
      }
    : undefined
  const { profiler } = indexer
  await profiler
    .refresh()
    .catch((error: unknown) =>
      logger.warn(
        { chain_id: indexer.chainId, err: error },
        'chain probe failed: following as a pre-confirming chain of 2 s blocks until one answers',
      ),
    )
  const wsUrl = chainConfig.rpcWsUrl
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
    headPollMs: () =>
      wsUrl ? (chainConfig.headPollMs ?? Math.max(1_000, 5 * profiler.current().blockTimeMs)) : profiler.current().headPollMs,
    // Polled: each look aims just after the next block is due, where the chain stamps milliseconds.
    ...(wsUrl || chainConfig.headPollMs !== undefined
      ? {}
      : { nextHeadInMs: () => indexer.follower.nextPollInMs(profiler.current().blockTimeMs) }),
    pendingPollMs: chainConfig.pendingPollMs,
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
      const coverage = runEvery(COVERAGE_REFRESH_MS, () => indexer.refreshWalletNonces(perRefresh), {
        signal,
        logger,
        name: 'wallet-coverage',
      })
      const registryCheck =
        registryBackfill && runEvery(REGISTRY_BACKFILL_CHECK_MS, registryBackfill, { signal, logger, name: 'registry-backfill' })
      const gasSweep = runEvery(
        GAS_SWEEP_MS,
        () => sweepOwedGas({ pool: indexer.store.pool, chainId: indexer.chainId, gasQueue: indexer.gasQueue, logger }),
        { signal, logger, name: 'gas-sweep' },
      )
      const monthPartitions = runEvery(
        MONTH_PARTITIONS_CHECK_MS,
        async () => {
          const created = [
            ...(await ensureMonthPartitions(indexer.store.pool, 'logs')),
            ...(await ensureMonthPartitions(indexer.store.pool, 'attributions')),
            ...(await ensureMonthPartitions(indexer.store.pool, 'transactions')),
          ]
          if (created.length > 0) logger.info({ chain_id: indexer.chainId, partitions: created }, 'month partitions created')
        },
        { signal, logger, name: 'month-partitions' },
      )
      const retentionDays = config.retentionLogsDays
      const retention =
        retentionDays !== undefined &&
        runEvery(
          RETENTION_CHECK_MS,
          async () => {
            const pruned = await pruneRawHistory(indexer.store.pool, indexer.chainId, new Date(Date.now() - retentionDays * 86_400_000))
            if (pruned.logs > 0 || pruned.transactions > 0)
              logger.info({ chain_id: indexer.chainId, ...pruned, retention_days: retentionDays }, 'raw history pruned')
          },
          { signal, logger, name: 'retention' },
        )
      const reprobe = profiler.run(signal)
      const subscription =
        wsUrl && chainConfig.pendingPollMs > 0
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
      await Promise.all([coverage, registryCheck, gasSweep, monthPartitions, retention, reprobe, subscription])
    },
    onFollowEvent: (event) => {
      recordFollowEvent(metrics, chain, event)
      if (event.type !== 'idle') logger.info({ chain_id: indexer.chainId, ...event }, `head follower: ${event.type}`)
    },
  })
  services.push({ name: `scheduler${suffix}`, stop: () => scheduler.stop() })
  return services
}

/** The HTTP API on `config.port`, serving `chainId`'s rows; `rpc` answers wallet nonces and readiness. */
async function startApi(
  config: Config,
  logger: Logger,
  metrics: Metrics,
  {
    chainId,
    chainIds,
    rpc,
    endpointsOf,
  }: { chainId: number; chainIds: readonly number[]; rpc: RpcClient; endpointsOf?: (chainId: number) => EndpointState[] | null },
): Promise<Service> {
  const redis = createApiRedis(config.redisUrl, logger)
  // Every configured chain's range queue, for the queue dashboard and the queue metrics.
  const rangeQueues = config.chains.map((chain) =>
    createRangeQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix, name: rangeQueueName(config, chain.chainId) }),
  )
  const api = await createApi({
    config,
    chainId,
    chainIds,
    redis,
    rpc,
    ...(endpointsOf ? { endpointsOf } : {}),
    logger,
    metrics,
    queues: rangeQueues.map((rangeQueue) => rangeQueue.queue),
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
      for (const rangeQueue of rangeQueues) await rangeQueue.close()
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
      if (error.code !== '42P01')
        throw new Error(
          `PostgreSQL is not reachable at ${redactUrl(config.databaseUrl)} (${briefly(error)}): start it, or set DATABASE_URL`,
        )
      throw new Error(
        `the database at ${redactUrl(config.databaseUrl)} has no codetrail tables: run codetrail migrate, or set MIGRATE_ON_START=1`,
      )
    })
  } finally {
    await store.close()
  }
  const rpc = createNodeClient(config, logger, metrics)
  // A config file names its chains; the first is the one a request that names none reads.
  const configured = config.chains.flatMap((chain) => (chain.chainId === undefined ? [] : [chain.chainId]))
  if (configured.length > 0) {
    const api = await startApi(config, logger, metrics, { chainId: configured[0]!, chainIds: configured, rpc })
    logger.info({ role: 'api', chain_id: configured, services: [api.name] }, 'codetrail started')
    return [api]
  }
  const chainId =
    chainIds.length === 1
      ? chainIds[0]!
      : await getChainId(rpc).catch((error: unknown) => {
          throw new Error(
            `the database indexes ${chainIds.length === 0 ? 'no chain yet' : `chains ${chainIds.join(', ')}`} and the node is not reachable at ${redactUrl(config.rpcUrl)} (${briefly(error)}): start an indexing role first, or set RPC_URL`,
          )
        })
  const api = await startApi(config, logger, metrics, { chainId, chainIds: [chainId], rpc })
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
  if (event.type === 'idle' || event.type === 'blocks')
    metrics.blocksBehindHead.set(chain, event.type === 'idle' ? 0 : event.head - event.to)
}

/**
 * Asks the node its chain id again whenever it has failed (a reconnect may reach another node) and every
 * few seconds; a node that says another chain is fatal to every role of the process, never retried.
 */
function watchChainId(identity: ChainIdentity, logger: Logger, onFatal: DaemonHooks['onFatal']): Service {
  const stopped = new AbortController()
  const watching = (async () => {
    while (!stopped.signal.aborted) {
      try {
        await identity.verify()
      } catch (error) {
        if (error instanceof ChainMismatchError) {
          logger.fatal({ chain_id: error.expected, node_chain_id: error.actual }, 'node serves another chain: stopping')
          onFatal?.(error)
          return
        }
        // The node is down: the next look asks it again.
      }
      await sleep(CHAIN_ID_WATCH_MS, stopped.signal)
    }
  })()
  return {
    name: 'chain-id-watch',
    stop: async () => {
      stopped.abort()
      await watching
    },
  }
}
