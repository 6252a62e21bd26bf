import { backoffDelay, type BackoffPolicy } from '../utils/backoff.js'
import { classifyRpcError } from './errors.js'
import { sleep } from '../utils/loop.js'

export type RetryPolicy = BackoffPolicy & { attempts: number }

export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseDelayMs: 200, maxDelayMs: 5_000 }

/**
 * Runs a node request again after transient failures and rate limits (as {@link classifyRpcError}
 * reads them), waiting with jittered backoff or the provider's `Retry-After`; fatal errors and the
 * last failure are thrown. For calls that cannot be narrowed (batches, headers, `eth_call`).
 */
export async function withRetry<T>(request: () => Promise<T>, policy: RetryPolicy = DEFAULT_RETRY): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request()
    } catch (error) {
      const action = classifyRpcError(error)
      if (action.kind === 'fatal' || attempt >= policy.attempts) throw error
      const delay =
        action.kind === 'backoff' && action.retryAfterMs !== undefined
          ? Math.min(action.retryAfterMs, policy.maxDelayMs)
          : backoffDelay(attempt, policy)
      await sleep(delay)
    }
  }
}
