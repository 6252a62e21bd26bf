export type BackoffPolicy = {
  /** The first wait's ceiling. */
  baseDelayMs: number
  /** No wait is longer. */
  maxDelayMs: number
}

/**
 * Exponential backoff with equal jitter: the `attempt`-th wait (1-based) lies between half and all of
 * `min(maxDelayMs, baseDelayMs · 2^(attempt-1))`, so clients that failed together spread out (node
 * requests, webhook deliveries).
 */
export function backoffDelay(attempt: number, { baseDelayMs, maxDelayMs }: BackoffPolicy, random: () => number = Math.random): number {
  // The exponent is bounded so a long run of failures stays a finite number (2^1024 is Infinity).
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(Math.max(0, attempt - 1), 40))
  return Math.round(ceiling / 2 + (random() * ceiling) / 2)
}
