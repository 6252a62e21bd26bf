import { Queue, Worker, type Job } from 'bullmq'
import type { Logger } from '../logger.js'
import { briefly } from '../utils/errors.js'
import { createRedis, type QueueContext } from './index.js'

export const WEBHOOK_QUEUE = 'webhooks'
/** Deliveries in flight per worker process: waiting on receivers, not on the CPU. */
const WEBHOOK_CONCURRENCY = 32
/** Finished jobs are kept a while so a re-dispatch after a crash finds their ids taken. */
const KEEP_COMPLETED_SECONDS = 3_600

/** One event for one subscription. */
export type WebhookJobData = { subscriptionId: string; eventId: number }

/** Deterministic: dispatching the same event to the same subscription again is the same job. */
export const webhookJobId = ({ subscriptionId, eventId }: WebhookJobData): string => `${subscriptionId}.${eventId}`

export function createWebhookQueue({ redisUrl, prefix }: QueueContext) {
  const connection = createRedis(redisUrl)
  const queue = new Queue<WebhookJobData>(WEBHOOK_QUEUE, {
    connection,
    prefix,
    // Retries are the delivery's own (per-subscription backoff), not BullMQ attempts.
    defaultJobOptions: { attempts: 1, removeOnComplete: { age: KEEP_COMPLETED_SECONDS }, removeOnFail: { age: 7 * 24 * 3_600 } },
  })
  return {
    queue,
    /** Adds delivery jobs; `jobId` defaults to {@link webhookJobId}. */
    async enqueue(jobs: readonly (WebhookJobData & { jobId?: string })[]): Promise<void> {
      if (jobs.length === 0) return
      await queue.addBulk(jobs.map(({ jobId, ...data }) => ({ name: 'deliver', data, opts: { jobId: jobId ?? webhookJobId(data) } })))
    },
    /** Runs these waiting (delayed) deliveries now: a receiver that answers again need not wait out its backoff. */
    async promote(jobIds: readonly string[]): Promise<void> {
      for (const id of jobIds) {
        const job = await queue.getJob(id)
        if (job && (await job.isDelayed())) await job.promote().catch(() => {})
      }
    },
    async close() {
      await queue.close()
      connection.disconnect()
    },
  }
}

export type WebhookQueue = ReturnType<typeof createWebhookQueue>

export type CreateWebhookWorkerParameters = QueueContext & {
  logger: Logger
  /** Delivers; may move the job to delayed itself (BullMQ `DelayedError`). */
  process: (job: Job<WebhookJobData>, token: string | undefined) => Promise<unknown>
}

export function createWebhookWorker({ redisUrl, prefix, logger, process }: CreateWebhookWorkerParameters) {
  const connection = createRedis(redisUrl)
  const worker = new Worker<WebhookJobData>(WEBHOOK_QUEUE, process, { connection, prefix, concurrency: WEBHOOK_CONCURRENCY })
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
