/** What a loop reports a failed step to: the process logger, or anything shaped like its `warn`. */
type StepLog = { warn: (fields: Record<string, unknown>, message: string) => void }

/**
 * Runs `task` every `every` ms (read again each round when a function; or as soon as `wake` resolves) until `signal` aborts, never overlapping: a slow answer delays the
 * next run instead of piling up concurrent ones. Errors are reported and the loop goes on.
 */
export async function runEvery(
  every: number | (() => number),
  task: () => Promise<unknown>,
  { signal, logger, name, wake }: { signal: AbortSignal; logger: StepLog; name: string; wake?: () => Promise<void> },
): Promise<void> {
  let failures = 0
  while (!signal.aborted) {
    const intervalMs = typeof every === 'number' ? every : every()
    const started = performance.now()
    try {
      await task()
      failures = 0
    } catch (error) {
      failures++
      logger.warn({ loop: name, failures, err: error }, 'loop step failed')
    }
    const backoff = failures > 0 ? Math.min(30_000, intervalMs * 2 ** Math.min(failures, 8)) : 0
    const wait = Math.max(backoff, intervalMs - (performance.now() - started))
    // `wake` cuts the wait short when something says there is work now (never after a failure).
    await (wake && failures === 0 ? Promise.race([sleep(wait, signal), wake()]) : sleep(wait, signal))
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}

/**
 * A latch for `runEvery`'s `wake`: `wait()` resolves at the next `notify()`, or at once when one came
 * since the last wait (a notification during a step is not lost).
 */
export function createWakeUp() {
  let notified = false
  let resolve: (() => void) | undefined
  return {
    notify() {
      notified = true
      resolve?.()
    },
    wait(): Promise<void> {
      if (notified) {
        notified = false
        return Promise.resolve()
      }
      return new Promise<void>((done) => {
        resolve = () => {
          notified = false
          resolve = undefined
          done()
        }
      })
    },
  }
}
