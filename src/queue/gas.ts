import { Queue, Worker } from 'bullmq'
import type { Logger } from '../internal/logger.js'
import { briefly } from '../internal/errors.js'
import type { GasJobData, GasJobResult } from '../sync/gasFill.js'
import { createRedis, type QueueContext } from './redis.js'

export const GAS_QUEUE = 'gas'
const GAS_ATTEMPTS = 10
const GAS_BACKOFF_MS = 1_000
/** Gas fills at once per worker process: they follow the range jobs, never race them for the node. */
const GAS_CONCURRENCY = 1

export function createGasQueue({ redisUrl, prefix }: QueueContext) {
  const connection = createRedis(redisUrl)
  // No job id: a range stored again (a repair) while its fill runs must get a fill of its own; a fill that finds nothing owed is one index read.
  const queue = new Queue<GasJobData, GasJobResult>(GAS_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: {
      attempts: GAS_ATTEMPTS,
      backoff: { type: 'exponential', delay: GAS_BACKOFF_MS },
      removeOnComplete: true,
      removeOnFail: true,
    },
  })
  return {
    queue,
    async enqueue(data: GasJobData): Promise<void> {
      await queue.add('gas', data)
    },
    /** Fills waiting, running or waiting to retry. */
    async pending(): Promise<number> {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children')
      return Object.values(counts).reduce((sum, n) => sum + n, 0)
    },
    async close() {
      await queue.close()
      connection.disconnect()
    },
  }
}

export function createGasWorker({
  redisUrl,
  prefix,
  lockDurationMs,
  logger,
  process,
}: QueueContext & { lockDurationMs: number; logger: Logger; process: (data: GasJobData) => Promise<GasJobResult> }) {
  const connection = createRedis(redisUrl)
  const worker = new Worker<GasJobData, GasJobResult>(GAS_QUEUE, (job) => process(job.data), {
    connection,
    prefix,
    concurrency: GAS_CONCURRENCY,
    lockDuration: lockDurationMs,
    stalledInterval: Math.max(1_000, Math.floor(lockDurationMs / 2)),
  })
  worker.on('failed', (job, error) =>
    logger.warn(
      { job_id: job?.id, from_block: job?.data.fromBlock, to_block: job?.data.toBlock, reason: briefly(error) },
      'gas fill failed',
    ),
  )
  worker.on('error', (error) => logger.error({ err: error }, 'gas worker error'))
  return {
    worker,
    async close() {
      await worker.close()
      connection.disconnect()
    },
  }
}
