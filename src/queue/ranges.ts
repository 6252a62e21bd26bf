import { Queue, QueueEvents, UnrecoverableError, Worker, type Job, type JobsOptions } from 'bullmq'
import type { Logger } from '../internal/logger.js'
import { briefly, FatalError } from '../internal/errors.js'
import type { FilterRange } from '../store/index.js'
import type { RangeJobResult } from '../sync/historical.js'
import { createRedis, type QueueContext } from './redis.js'

export const RANGE_QUEUE = 'ranges'

/** Where a chain's range jobs wait: the connection, and the queue's name (see {@link rangeQueueName}). */
export type RangeQueueContext = QueueContext & {
  /** @default RANGE_QUEUE */
  name?: string
}

/**
 * The range queue of a chain: `ranges` where one chain is configured (as it always was), `ranges-<chain id>`
 * where several are, so each chain's jobs wait in a queue of their own and a chain whose node hangs holds
 * only its own workers.
 */
export function rangeQueueName({ chains }: { chains: readonly unknown[] }, chainId: number | undefined): string {
  // Several chains come from a config file, where every chain has its id.
  return chains.length > 1 && chainId !== undefined ? `${RANGE_QUEUE}-${chainId}` : RANGE_QUEUE
}
const RANGE_ATTEMPTS = 10
const RANGE_BACKOFF_MS = 1_000
// Job states asked of Redis at once when enqueueing many chunks.
const STATE_LOOKUPS_AT_ONCE = 500
// A worker SIGKILLed mid-job leaves its job stalled; it may be picked up again this many times.
const MAX_STALLED_COUNT = 20

/** Deterministic job id: the same chunk is one job however many times it is planned. */
export function rangeJobId({
  chainId,
  filterId,
  fromBlock,
  toBlock,
}: Pick<FilterRange, 'chainId' | 'filterId' | 'fromBlock' | 'toBlock'>): string {
  return `range-${chainId}-${filterId}-${fromBlock}-${toBlock}`
}

export const RANGE_JOB_OPTIONS: JobsOptions = {
  attempts: RANGE_ATTEMPTS,
  backoff: { type: 'exponential', delay: RANGE_BACKOFF_MS },
  removeOnComplete: true,
  removeOnFail: false,
}

export function createRangeQueue({ redisUrl, prefix, name = RANGE_QUEUE }: RangeQueueContext) {
  const connection = createRedis(redisUrl)
  const queue = new Queue<FilterRange, RangeJobResult>(name, { connection, prefix, defaultJobOptions: RANGE_JOB_OPTIONS })

  /** The jobs among `ids` that failed for good, asked per id: the failed set grows with history, these ids do not. */
  async function failedJobs(ids: readonly string[]): Promise<Job<FilterRange, RangeJobResult>[]> {
    const failed: Job<FilterRange, RangeJobResult>[] = []
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
    async enqueue(chunks: readonly FilterRange[]): Promise<{ added: number; retried: number }> {
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

export type CreateRangeWorkerParameters = RangeQueueContext & {
  concurrency: number
  lockDurationMs: number
  logger: Logger
  process: (data: FilterRange) => Promise<RangeJobResult>
}

/** The prefix of a job's failed reason when it failed at once, without retries. */
export const FATAL_REASON_PREFIX = 'fatal: '

/** Runs a range job; a fatal error fails it at once (BullMQ's `UnrecoverableError`), a retryable one retries with backoff. */
async function runRangeJob(process: (data: FilterRange) => Promise<RangeJobResult>, data: FilterRange): Promise<RangeJobResult> {
  try {
    return await process(data)
  } catch (error) {
    if (error instanceof FatalError) throw new UnrecoverableError(`${FATAL_REASON_PREFIX}${error.message}`)
    throw error
  }
}

/** A BullMQ worker for range jobs; fatal errors fail a job at once, others retry with backoff. */
export function createRangeWorker({
  redisUrl,
  prefix,
  name = RANGE_QUEUE,
  concurrency,
  lockDurationMs,
  logger,
  process,
}: CreateRangeWorkerParameters) {
  const connection = createRedis(redisUrl)
  const worker = new Worker<FilterRange, RangeJobResult>(name, (job) => runRangeJob(process, job.data), {
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

/** Queue events (completed/failed) of range jobs from every worker sharing the Redis. */
export function createRangeEvents({ redisUrl, prefix, name = RANGE_QUEUE }: RangeQueueContext) {
  const connection = createRedis(redisUrl)
  const events = new QueueEvents(name, { connection, prefix })
  return {
    events,
    async close() {
      await events.close()
      connection.disconnect()
    },
  }
}
