import { Queue, QueueEvents, UnrecoverableError, Worker, type Job, type JobsOptions } from 'bullmq'
import { Redis } from 'ioredis'
import type { Logger } from '../internal/logger.js'
import { FatalError, toKindedError } from '../rpc/index.js'
import { briefly } from '../internal/errors.js'

export const RANGE_QUEUE = 'ranges'
const RANGE_ATTEMPTS = 10
const RANGE_BACKOFF_MS = 1_000
// Job states asked of Redis at once when enqueueing many chunks.
const STATE_LOOKUPS_AT_ONCE = 500
// A worker SIGKILLed mid-job leaves its job stalled; it may be picked up again this many times.
const MAX_STALLED_COUNT = 20

/** One historical range job: every log of `[fromBlock, toBlock]` that matches the filter. */
export type RangeJobData = {
  chainId: number
  filterId: string
  addresses: string[]
  topics: string[]
  fromBlock: number
  toBlock: number
}

export type RangeJobResult = { logs: number; inserted: number; stored: boolean }

/** Deterministic job id: the same chunk is one job however many times it is planned. */
export function rangeJobId({ chainId, filterId, fromBlock, toBlock }: Pick<RangeJobData, 'chainId' | 'filterId' | 'fromBlock' | 'toBlock'>): string {
  return `range-${chainId}-${filterId}-${fromBlock}-${toBlock}`
}

export const RANGE_JOB_OPTIONS: JobsOptions = {
  attempts: RANGE_ATTEMPTS,
  backoff: { type: 'exponential', delay: RANGE_BACKOFF_MS },
  removeOnComplete: true,
  removeOnFail: false,
}

export type QueueContext = { redisUrl: string; prefix: string }

/** A Redis connection as BullMQ wants it for blocking commands. */
export function createRedis(redisUrl: string): Redis {
  return new Redis(redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false })
}

/** Fails fast, with the address in the message, when Redis does not answer a PING. */
export async function checkRedis(redisUrl: string, timeoutMs = 3_000): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 0, connectTimeout: timeoutMs, lazyConnect: true, retryStrategy: () => null })
  redis.on('error', () => {})
  try {
    await redis.connect()
    await redis.ping()
  } catch (error) {
    const { hostname, port } = new URL(redisUrl)
    throw new Error(`Redis is not reachable at ${hostname}:${port || 6379} (${(error as Error).message}): start it, or set REDIS_URL`)
  } finally {
    redis.disconnect()
  }
}

/** Deletes every key under `prefix:` (a fresh start for the demo, cleanup for tests and benches). */
export async function clearRedisPrefix(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  let deleted = 0
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1_000)
      cursor = next
      if (keys.length > 0) deleted += await redis.del(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
  return deleted
}

export function createRangeQueue({ redisUrl, prefix }: QueueContext) {
  const connection = createRedis(redisUrl)
  const queue = new Queue<RangeJobData, RangeJobResult>(RANGE_QUEUE, { connection, prefix, defaultJobOptions: RANGE_JOB_OPTIONS })

  /** The jobs among `ids` that failed for good, asked per id: the failed set grows with history, these ids do not. */
  async function failedJobs(ids: readonly string[]): Promise<Job<RangeJobData, RangeJobResult>[]> {
    const failed: Job<RangeJobData, RangeJobResult>[] = []
    for (let from = 0; from < ids.length; from += STATE_LOOKUPS_AT_ONCE) {
      const slice = ids.slice(from, from + STATE_LOOKUPS_AT_ONCE)
      const states = await Promise.all(slice.map((id) => queue.getJobState(id)))
      const jobs = await Promise.all(slice.filter((_, i) => states[i] === 'failed').map((id) => queue.getJob(id)))
      for (const job of jobs) if (job) failed.push(job)
    }
    return failed
  }

  return {
    queue,
    /**
     * Adds the chunks as jobs. A chunk whose job already waits or runs is left alone; one whose job
     * failed for good is retried, so re-planning a range never leaves a gap behind a failed job.
     */
    async enqueue(chunks: readonly RangeJobData[]): Promise<{ added: number; retried: number }> {
      const failed = await failedJobs(chunks.map(rangeJobId))
      // A new run of the chunk gets all its attempts again.
      for (const job of failed) await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true })
      await queue.addBulk(chunks.map((data) => ({ name: 'range', data, opts: { jobId: rangeJobId(data) } })))
      return { added: chunks.length - failed.length, retried: failed.length }
    },
    failedJobs,
    async close() {
      await queue.close()
      connection.disconnect()
    },
  }
}

export type RangeQueue = ReturnType<typeof createRangeQueue>

export type CreateRangeWorkerParameters = QueueContext & {
  concurrency: number
  lockDurationMs: number
  logger: Logger
  process: (data: RangeJobData) => Promise<RangeJobResult>
}

/** The prefix of a job's failed reason when it failed at once, without retries. */
export const FATAL_REASON_PREFIX = 'fatal: '

/** Runs a range job; a fatal error fails it at once (BullMQ's `UnrecoverableError`), a retryable one retries with backoff. */
async function runRangeJob(process: (data: RangeJobData) => Promise<RangeJobResult>, data: RangeJobData): Promise<RangeJobResult> {
  try {
    return await process(data)
  } catch (error) {
    const kinded = toKindedError(error)
    if (kinded instanceof FatalError) throw new UnrecoverableError(`${FATAL_REASON_PREFIX}${kinded.message}`)
    throw error
  }
}

/** A BullMQ worker for range jobs; fatal errors fail a job at once, others retry with backoff. */
export function createRangeWorker({ redisUrl, prefix, concurrency, lockDurationMs, logger, process }: CreateRangeWorkerParameters) {
  const connection = createRedis(redisUrl)
  const worker = new Worker<RangeJobData, RangeJobResult>(RANGE_QUEUE, (job) => runRangeJob(process, job.data), {
    connection,
    prefix,
    concurrency,
    lockDuration: lockDurationMs,
    stalledInterval: Math.max(1_000, Math.floor(lockDurationMs / 2)),
    maxStalledCount: MAX_STALLED_COUNT,
  })
  worker.on('failed', (job, error) => {
    const data = job?.data
    logger.warn(
      { job_id: job?.id, from_block: data?.fromBlock, to_block: data?.toBlock, attempts: job?.attemptsMade, reason: briefly(error) },
      'range job failed',
    )
  })
  worker.on('error', (error) => logger.error({ err: error }, 'range worker error'))
  return {
    worker,
    /** Stops taking jobs and waits for those running to finish. */
    async close() {
      await worker.close()
      connection.disconnect()
    },
  }
}

export type RangeWorker = ReturnType<typeof createRangeWorker>

/** Queue events (completed/failed) of range jobs from every worker sharing the Redis. */
export function createRangeEvents({ redisUrl, prefix }: QueueContext) {
  const connection = createRedis(redisUrl)
  const events = new QueueEvents(RANGE_QUEUE, { connection, prefix })
  return {
    events,
    async close() {
      await events.close()
      connection.disconnect()
    },
  }
}
export * from './webhooks.js'
