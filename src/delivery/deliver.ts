import http from 'node:http'
import https from 'node:https'
import { DelayedError, type Job } from 'bullmq'
import type pg from 'pg'
import type { Logger } from '../logger.js'
import type { WebhookJobData } from '../queue/index.js'
import {
  claimProbe,
  dropOutstanding,
  loadDelivery,
  outstandingEvents,
  recordDelivered,
  recordFailed,
  type DeliveryAttempt,
} from '../store/index.js'
import { briefly } from '../utils/errors.js'
import { toPayload } from './events.js'
import { signPayload } from './signature.js'
import { refusedUrl, webhookTargets, type WebhookTargets } from './targets.js'

/** Longest wait between attempts of a failing subscription. */
const MAX_BACKOFF_MS = 24 * 3_600_000
/** How soon an event asks again whether the earlier event of its transaction is delivered. */
const ORDER_WAIT_MS = 200
/** Waiting deliveries woken at once when a failing receiver answers again. */
const PROMOTE_ON_RECOVERY = 10_000
const ERROR_LENGTH = 300

export type DeliveryContext = {
  pool: pg.Pool
  logger: Logger
  /** `WEBHOOK_TIMEOUT_MS`: a 2xx must arrive within it. */
  timeoutMs: number
  /** `WEBHOOK_MAX_FAILURES`: consecutive failures that disable a subscription. */
  maxFailures: number
  /** First backoff step; doubles with each consecutive failure, up to 24 h. */
  backoffMs: number
  /** Wakes delayed deliveries of a subscription whose receiver recovered (job ids). */
  promote: (jobIds: readonly string[]) => Promise<void>
  jobIdOf: (data: WebhookJobData) => string
  /** `WEBHOOK_ALLOW_PRIVATE`: receivers on loopback and private addresses are reached too. */
  allowPrivate?: boolean
}

/** Exponential backoff with jitter: `base · 2^(failures−1)`, capped at 24 h, then a random half to all of it. */
export function backoffDelay(baseMs: number, failures: number, random = Math.random): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.min(failures - 1, 40))
  return Math.round(ceiling / 2 + (random() * ceiling) / 2)
}

export type DeliveryOutcome = 'delivered' | 'failed' | 'skipped'

/**
 * The delivery job: POSTs the event to the subscription's URL, signed. Events of one transaction go
 * out in order (a later one waits while an earlier one is outstanding); while a subscription is failing
 * only one delivery at a time probes it, after its backoff, and the others wait. A failed attempt waits
 * as a delayed job, never as a BullMQ failure, so the subscription's backoff is the only schedule.
 */
export function createDeliveryProcessor(context: DeliveryContext) {
  const { pool, logger, timeoutMs, maxFailures } = context
  const policy = { allowPrivate: context.allowPrivate ?? false }
  const targets = webhookTargets(policy)
  const later = async (job: Job<WebhookJobData>, token: string | undefined, delayMs: number): Promise<never> => {
    await job.moveToDelayed(Date.now() + Math.max(delayMs, 1), token)
    throw new DelayedError()
  }

  return async (job: Job<WebhookJobData>, token: string | undefined): Promise<DeliveryOutcome> => {
    const { subscriptionId, eventId } = job.data
    const { subscription, event, waiting } = await loadDelivery(pool, subscriptionId, eventId)
    if (!subscription || subscription.disabledAt || !event) {
      if (subscription) await dropOutstanding(pool, subscriptionId, eventId)
      return 'skipped'
    }
    if (waiting) return later(job, token, ORDER_WAIT_MS + waitForBackoff(subscription.retryAt))
    let probe = false
    if (subscription.consecutiveFailures > 0) {
      probe = await claimProbe(pool, subscriptionId, timeoutMs * 2)
      if (!probe) return later(job, token, waitForBackoff(subscription.retryAt) + Math.random() * context.backoffMs)
    }

    const body = JSON.stringify(toPayload(event))
    const started = performance.now()
    const refusal = refusedUrl(subscription.url, policy)
    const answer = refusal ? { ok: false, httpStatus: null, error: `refused: ${refusal}` } : await post(targets, subscription.url, body, {
      'X-Codetrail-Event-Id': String(event.id),
      'X-Codetrail-Signature': signPayload(subscription.secret, body),
    }, timeoutMs)
    const attempt: DeliveryAttempt = { subscriptionId, eventId, durationMs: Math.round(performance.now() - started), ...answer }
    if (attempt.ok) {
      const { recovered } = await recordDelivered(pool, attempt)
      if (recovered) {
        logger.info({ subscription_id: subscriptionId }, 'webhook receiver answers again')
        const waiting = await outstandingEvents(pool, subscriptionId, PROMOTE_ON_RECOVERY)
        await context.promote(waiting.map((id) => context.jobIdOf({ subscriptionId, eventId: id })))
      }
      return 'delivered'
    }
    const failed = await recordFailed(pool, attempt, { probe, maxFailures, backoffMs: (failures) => backoffDelay(context.backoffMs, failures) })
    if (failed.disabled) {
      logger.warn({ subscription_id: subscriptionId, event_id: eventId, reason: attempt.error }, 'webhook subscription disabled')
      await dropOutstanding(pool, subscriptionId, eventId)
      return 'failed'
    }
    return later(job, token, waitForBackoff(failed.retryAt) + (probe ? 0 : Math.random() * context.backoffMs))
  }
}

const waitForBackoff = (retryAt: Date | null) => (retryAt ? Math.max(0, retryAt.getTime() - Date.now()) : 0)

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
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'User-Agent': 'codetrail-webhooks', ...headers },
      signal: AbortSignal.timeout(timeoutMs),
    })
    request.on('response', (response) => {
      const status = response.statusCode ?? 0
      response.on('error', (error) => fail(error.name === 'AbortError' ? `no answer within ${timeoutMs} ms` : briefly(error)))
      response.on('end', () => {
        const ok = status >= 200 && status < 300
        resolve({ ok, httpStatus: status, error: ok ? null : `HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}` })
      })
      response.resume()
    })
    request.on('error', (error) => fail(error.name === 'AbortError' ? `no answer within ${timeoutMs} ms` : briefly(error)))
    request.end(body)
  })
}
