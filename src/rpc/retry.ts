import { backoffDelay, type BackoffPolicy } from '../utils/backoff.js'
import { classifyRpcError, type RpcErrorAction } from './errors.js'
import { sleep } from '../utils/loop.js'

export type RetryPolicy = BackoffPolicy & { attempts: number }

export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseDelayMs: 200, maxDelayMs: 5_000 }

/** The wait before the next attempt: the provider's `Retry-After` where a rate limit names one, else jittered backoff. */
function retryDelay(action: RpcErrorAction, attempt: number, policy: RetryPolicy): number {
  return action.kind === 'backoff' && action.retryAfterMs !== undefined
    ? Math.min(action.retryAfterMs, policy.maxDelayMs)
    : backoffDelay(attempt, policy)
}

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
      await sleep(retryDelay(action, attempt, policy))
    }
  }
}

/**
 * Reads `items` in one batch (`read` asks the node for a part and answers in its order) and, after a
 * transient failure or a rate limit, reads the rest in parts half the size of the one that failed,
 * keeping every answer it has; fatal errors are thrown, and so is the failure that makes `policy.attempts`
 * in a row (a node that is down fails the read after as many requests as {@link withRetry} makes).
 *
 * Written by hand: retry helpers ask a failed request again whole, and a batch is one request.
 * Providers weigh a batch by its calls and refuse the whole request when any of them is over the
 * limit, so a batch asked again whole fails again as likely: 17 calls each refused 15 % of the time
 * get through together 6 % of the time, 9 of them 23 %, 4 of them 52 %. The waits count the failures
 * in a row, so a read that goes on getting parts through waits no longer than after its first failure.
 */
export async function batchWithRetry<I, T>(
  items: readonly I[],
  read: (part: readonly I[]) => Promise<T[]>,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<T[]> {
  const answers: T[] = []
  let size = items.length
  let failures = 0
  while (answers.length < items.length) {
    const part = items.slice(answers.length, answers.length + size)
    try {
      answers.push(...(await read(part)))
      failures = 0
    } catch (error) {
      const action = classifyRpcError(error)
      if (action.kind === 'fatal' || ++failures >= policy.attempts) throw error
      await sleep(retryDelay(action, failures, policy))
      size = Math.ceil(part.length / 2)
    }
  }
  return answers
}
