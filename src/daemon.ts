/** The daemon's roles: which parts run in this process, and how they stop. */
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig, ROLES, type Config, type Role } from './config/index.js'
import { createIndexer } from './indexer.js'
import { createLogger, type Logger } from './logger.js'
import { checkRedis, createRangeWorker, createRedis } from './queue/index.js'
import { toRpcFilter } from './sync/filter.js'
import { startScheduler } from './sync/scheduler.js'
import { followPendingLogs } from './sync/subscription.js'

/** A running part of the daemon; `stop` finishes or releases its in-flight work. */
export type Service = { name: string; stop: () => Promise<void> }

export function parseRole(argv: string[]): Role {
  const { values } = parseArgs({ args: argv, options: { role: { type: 'string', default: 'all' } }, strict: true })
  const role = values.role as Role
  if (!ROLES.includes(role)) throw new ConfigError(`invalid --role "${values.role}": expected ${ROLES.join(', ')}`)
  return role
}

export async function startDaemon(config: Config, role: Role, logger: Logger): Promise<Service[]> {
  await checkRedis(config.redisUrl)
  const indexer = await createIndexer(config, logger)
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
        process: indexer.processRange,
      })
      services.push({ name: 'worker', stop: () => worker.close() })
    }
    if (runs('scheduler')) {
      const redis = createRedis(config.redisUrl)
      services.push({ name: 'redis', stop: async () => redis.disconnect() })
      const scheduler = startScheduler({
        redis,
        keyPrefix: config.redisPrefix,
        chainId: indexer.chainId,
        logger,
        follower: indexer.follower,
        poller: indexer.poller,
        headPollMs: config.headPollMs,
        pendingPollMs: config.pendingPollMs,
        ...(config.rpcWsUrl && config.pendingPollMs > 0
          ? {
              whileLeader: (signal: AbortSignal) =>
                followPendingLogs({
                  url: config.rpcWsUrl!,
                  filter: toRpcFilter(indexer.filter),
                  logger,
                  signal,
                  onLogs: (logs) => indexer.poller.store(logs),
                }),
            }
          : {}),
        onFollowEvent: (event) => {
          if (event.type !== 'idle') logger.info({ chain_id: indexer.chainId, ...event }, `head follower: ${event.type}`)
        },
      })
      services.push({ name: 'scheduler', stop: () => scheduler.stop() })
    }
  } catch (error) {
    await stopServices(services, logger)
    throw error
  }
  logger.info({ role, chain_id: indexer.chainId, services: services.map((s) => s.name) }, 'codetrail started')
  return services
}

/** Stops services in reverse start order, so the store closes last. */
export async function stopServices(services: Service[], logger: Logger): Promise<void> {
  for (const service of [...services].reverse()) {
    try {
      await service.stop()
    } catch (error) {
      logger.warn({ service: service.name, err: error }, 'service did not stop cleanly')
    }
  }
}

