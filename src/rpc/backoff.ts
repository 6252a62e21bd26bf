export type BackoffPolicy = {
  /** The first wait's ceiling. */
  baseDelayMs: number
  /** No wait is longer. */
  maxDelayMs: number
}

/**
 * Exponential backoff with equal jitter: the `attempt`-th wait (1-based) lies between half and all of
 * `min(maxDelayMs, baseDelayMs · 2^(attempt-1))`, so clients that failed together spread out.
 */
export function backoffDelay(attempt: number, { baseDelayMs, maxDelayMs }: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, attempt - 1))
  return Math.round(ceiling / 2 + (random() * ceiling) / 2)
}
