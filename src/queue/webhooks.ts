import { Queue, Worker, type Job } from 'bullmq'
import type { Logger } from '../internal/logger.js'
import { briefly } from '../internal/errors.js'
import { createRedis, type QueueContext } from './redis.js'

export const WEBHOOK_QUEUE = 'webhooks'
/** Subscriptions drained at once per worker process: waiting on receivers, not on the CPU. */
const WEBHOOK_CONCURRENCY = 32
/** A drain that threw (a database error) runs again like any transient failure; the reconciler covers the rest. */
const DRAIN_ATTEMPTS = 10
const DRAIN_RETRY_MS = 500

/** One drain of the events a subscription is owed (the owed rows are in PostgreSQL; a job only says "look"). */
export type WebhookJobData = { subscriptionId: string }

/** A drain to queue: `jobId` dedupes it while it waits; `at` delays it (a failing subscription's next try). */
export type DrainJob = WebhookJobData & { jobId: string; at?: Date }

/** The job of a failing subscription's next try: one per retry time, however often it is asked for. */
export const retryJob = (subscriptionId: string, at: Date): DrainJob => ({
  subscriptionId,
  jobId: `retry.${subscriptionId}.${at.getTime()}`,
  at,
})

export function createWebhookQueue({ redisUrl, prefix }: QueueContext) {
  const connection = createRedis(redisUrl)
  const queue = new Queue<WebhookJobData>(WEBHOOK_QUEUE, {
    connection,
    prefix,
    // Finished jobs leave no id behind: PostgreSQL says what is owed, so a later drain must never be ignored as a duplicate.
    defaultJobOptions: {
      attempts: DRAIN_ATTEMPTS,
      backoff: { type: 'exponential', delay: DRAIN_RETRY_MS },
      removeOnComplete: true,
      removeOnFail: true,
    },
  })
  return {
    queue,
    /** Adds drain jobs; one whose id waits already is left alone. */
    async enqueue(jobs: readonly DrainJob[]): Promise<void> {
      if (jobs.length === 0) return
      await queue.addBulk(
        jobs.map(({ jobId, at, subscriptionId }) => ({
          name: 'drain',
          data: { subscriptionId },
          opts: { jobId, ...(at ? { delay: Math.max(0, at.getTime() - Date.now()) } : {}) },
        })),
      )
    },
    async close() {
      await queue.close()
      connection.disconnect()
    },
  }
}

export type WebhookQueue = ReturnType<typeof createWebhookQueue>

export type CreateWebhookWorkerParameters = QueueContext & {
  /** A SIGKILLed worker's deliveries are taken over once their lock lapses. */
  lockDurationMs: number
  logger: Logger
  /** Drains the subscription's owed events. */
  process: (job: Job<WebhookJobData>) => Promise<unknown>
}

export function createWebhookWorker({ redisUrl, prefix, lockDurationMs, logger, process }: CreateWebhookWorkerParameters) {
  const connection = createRedis(redisUrl)
  const worker = new Worker<WebhookJobData>(WEBHOOK_QUEUE, process, {
    connection,
    prefix,
    concurrency: WEBHOOK_CONCURRENCY,
    lockDuration: lockDurationMs,
    stalledInterval: Math.max(1_000, Math.floor(lockDurationMs / 2)),
    // A stalled drain runs again, however often its workers die (the lease keeps it single).
    maxStalledCount: Number.MAX_SAFE_INTEGER,
  })
  worker.on('failed', (job, error) => logger.warn({ job_id: job?.id, reason: briefly(error) }, 'webhook job failed'))
  worker.on('error', (error) => logger.error({ err: error }, 'webhook worker error'))
  return {
    worker,
    async close() {
      await worker.close()
      connection.disconnect()
    },
  }
}
