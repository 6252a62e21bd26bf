import http from 'node:http'
import https from 'node:https'
import type { Job } from 'bullmq'
import type pg from 'pg'
import type { Logger } from '../internal/logger.js'
import { retryJob, type DrainJob, type WebhookJobData } from '../queue/index.js'
import {
  claimDrain,
  isOwed,
  owedEvents,
  recordAttempts,
  recordFailure,
  releaseDrain,
  renewDrain,
  type DeliveryAttempt,
  type WebhookEvent,
  type WebhookSubscription,
} from '../store/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import { briefly } from '../internal/errors.js'
import { backoffDelay } from '../utils/backoff.js'
import { toPayload } from './events.js'
import { openSecret } from './secrets.js'
import { signedHeaders } from './signature.js'
import { refusedUrl, webhookTargets, type TargetPolicy, type WebhookTargets } from './targets.js'

/** Longest wait between attempts of a failing subscription. */
const MAX_BACKOFF_MS = 24 * 3_600_000
/** Deliveries in flight per subscription: a drain sends its owed events in windows of this many. */
export const DRAIN_WINDOW = 32
const ERROR_LENGTH = 300

export type DeliveryContext = {
  pool: pg.Pool
  logger: Logger
  /** `WEBHOOK_TIMEOUT_MS`: a 2xx must arrive within it. */
  timeoutMs: number
  /** `WEBHOOK_MAX_FAILURES`: consecutive failed rounds that disable a subscription. */
  maxFailures: number
  /** First backoff step; doubles with each consecutive failure, up to 24 h. */
  backoffMs: number
  /** How long a drain's lease lasts unrenewed: a killed worker's subscription is drained again after it. */
  leaseMs: number
  /** Queues drain jobs (a failing subscription's next try). */
  enqueue: (jobs: readonly DrainJob[]) => Promise<void>
  /** `SECRETS_KEY`: opens secrets sealed at rest. */
  secretsKey?: Buffer | undefined
  /** `WEBHOOK_ALLOW_PRIVATE`: receivers on loopback and private addresses are reached too. */
  allowPrivate?: boolean
}

export type DrainOutcome = 'drained' | 'failed' | 'disabled' | 'backoff' | 'busy' | 'gone'

/**
 * The delivery job: drains what a subscription is owed, oldest first, under its lease (one drain per
 * subscription at a time). A window of owed events goes out at once, one transaction's events one after
 * the other; a failure ends the drain and sets the subscription's backoff, and one delayed job tries again
 * then, with one event (a probe); after a success the backlog goes at full speed.
 */
export function createDeliveryProcessor(context: DeliveryContext) {
  const { pool, logger, timeoutMs, maxFailures, leaseMs } = context
  const policy = { allowPrivate: context.allowPrivate ?? false }
  const reach: Reach = { policy, targets: webhookTargets(policy) }

  async function drainHeld(
    subscription: WebhookSubscription,
  ): Promise<{ outcome: 'drained' | 'disabled' } | { outcome: 'failed'; retryAt: Date }> {
    const id = subscription.id
    const renewal = setInterval(
      () =>
        void renewDrain(pool, id, leaseMs).catch((error: unknown) =>
          logger.warn({ subscription_id: id, reason: briefly(error) }, 'webhook drain lease not renewed'),
        ),
      Math.max(100, Math.floor(leaseMs / 3)),
    )
    try {
      const secrets = [subscription.secret, ...(subscription.previousSecret ? [subscription.previousSecret] : [])].map((s) =>
        openSecret(context.secretsKey, s),
      )
      let probing = subscription.consecutiveFailures > 0
      for (;;) {
        const events = await owedEvents(pool, id, probing ? 1 : DRAIN_WINDOW)
        if (events.length === 0) return { outcome: 'drained' }
        const attempts = await sendWindow(reach, subscription, secrets, events, timeoutMs)
        // Received but not recorded: the events go out again under the same ids.
        if (attempts.some((a) => a.ok)) crashPoint('delivery-sent')
        const { recovered } = await recordAttempts(pool, attempts)
        if (recovered) logger.info({ subscription_id: id }, 'webhook receiver answers again')
        const failed = attempts.find((a) => !a.ok)
        if (failed) {
          const lastError = failed.error ?? `HTTP ${failed.httpStatus}`
          const result = await recordFailure(pool, id, lastError, {
            maxFailures,
            backoffMs: (failures) => backoffDelay(failures, { baseDelayMs: context.backoffMs, maxDelayMs: MAX_BACKOFF_MS }),
          })
          if (result.disabled || !result.retryAt) {
            logger.warn({ subscription_id: id, event_id: failed.eventId, reason: lastError }, 'webhook subscription disabled')
            return { outcome: 'disabled' }
          }
          return { outcome: 'failed', retryAt: result.retryAt }
        }
        probing = false
      }
    } finally {
      clearInterval(renewal)
      await releaseDrain(pool, id)
    }
  }

  return async (job: Job<WebhookJobData>): Promise<DrainOutcome> => {
    const { subscriptionId } = job.data
    for (;;) {
      const claim = await claimDrain(pool, subscriptionId, leaseMs)
      if (claim.state === 'backoff') {
        await context.enqueue([retryJob(subscriptionId, claim.retryAt)])
        return 'backoff'
      }
      // Busy: the holder looks again after releasing, so what this job was queued for is not left behind.
      if (claim.state !== 'claimed') return claim.state
      const result = await drainHeld(claim.subscription)
      if (result.outcome === 'failed') {
        await context.enqueue([retryJob(subscriptionId, result.retryAt)])
        return 'failed'
      }
      if (result.outcome === 'disabled') return 'disabled'
      if (!(await isOwed(pool, subscriptionId))) return 'drained'
    }
  }
}

/** Where deliveries may go (`targets.ts`): the policy, and the agents that connect only to allowed addresses. */
type Reach = { policy: TargetPolicy; targets: WebhookTargets }

/** Sends a window of owed events: transactions side by side, each one's events in order, stopping at its first failure. */
async function sendWindow(
  reach: Reach,
  subscription: WebhookSubscription,
  secrets: readonly string[],
  events: readonly WebhookEvent[],
  timeoutMs: number,
): Promise<DeliveryAttempt[]> {
  const byTransaction = new Map<string, WebhookEvent[]>()
  for (const event of events) byTransaction.set(event.txHash, [...(byTransaction.get(event.txHash) ?? []), event])
  const attempts: DeliveryAttempt[] = []
  await Promise.all(
    [...byTransaction.values()].map(async (sequence) => {
      for (const event of sequence) {
        const attempt = await deliverOne(reach, subscription, secrets, event, timeoutMs)
        attempts.push(attempt)
        if (!attempt.ok) return
      }
    }),
  )
  return attempts
}

async function deliverOne(
  reach: Reach,
  subscription: WebhookSubscription,
  secrets: readonly string[],
  event: WebhookEvent,
  timeoutMs: number,
): Promise<DeliveryAttempt> {
  const body = JSON.stringify(toPayload(event))
  const started = performance.now()
  const refusal = refusedUrl(subscription.url, reach.policy)
  const answer = refusal
    ? { ok: false, httpStatus: null, error: `refused: ${refusal}` }
    : await post(reach.targets, subscription.url, body, signedHeaders(secrets, String(event.id), body), timeoutMs)
  return { subscriptionId: subscription.id, eventId: event.id, durationMs: Math.round(performance.now() - started), ...answer }
}

type PostAnswer = { ok: boolean; httpStatus: number | null; error: string | null }

/** One POST (node:http, cheaper per request than fetch): ok on a 2xx whose body ends within the timeout. */
function post(targets: WebhookTargets, url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer> {
  return new Promise((resolve) => {
    const target = new URL(url)
    const send = target.protocol === 'https:' ? https.request : http.request
    const fail = (error: string) => resolve({ ok: false, httpStatus: null, error: error.slice(0, ERROR_LENGTH) })
    const request = send(target, {
      method: 'POST',
      // Keep-alive (a handshake per event would cost more than the event), connecting only to allowed addresses.
      agent: targets.agents[target.protocol as keyof WebhookTargets['agents']],
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
        'User-Agent': 'codetrail-webhooks',
        ...headers,
      },
      signal: AbortSignal.timeout(timeoutMs),
    })
    request.on('response', (response) => {
      const status = response.statusCode ?? 0
      response.on('error', (error) => fail(error.name === 'AbortError' ? `no answer within ${timeoutMs} ms` : briefly(error)))
      response.on('end', () => {
        const ok = status >= 200 && status < 300
        resolve({
          ok,
          httpStatus: status,
          error: ok ? null : `HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
        })
      })
      response.resume()
    })
    request.on('error', (error) => fail(error.name === 'AbortError' ? `no answer within ${timeoutMs} ms` : briefly(error)))
    request.end(body)
  })
}
