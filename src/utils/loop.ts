/** What a loop reports a failed step to: the process logger, or anything shaped like its `warn`. */
type StepLog = { warn: (fields: Record<string, unknown>, message: string) => void }

/**
 * Runs `task` every `every` ms (read again each round when a function; or as soon as `wake` resolves) until `signal` aborts, never overlapping: a slow answer delays the
 * next run instead of piling up concurrent ones. Errors are reported and the loop goes on.
 */
export async function runEvery(
  every: number | (() => number),
  task: () => Promise<unknown>,
  {
    signal,
    logger,
    name,
    wake,
  }: {
    signal: AbortSignal
    logger: StepLog
    name: string
    /** Resolves when there is work now; it must give up, keeping any later wake-up for the next wait, when its signal aborts. */
    wake?: (signal: AbortSignal) => Promise<void>
  },
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
    if (signal.aborted) break
    // `wake` cuts the wait short when something says there is work now (never after a failure).
    if (wake && failures === 0) {
      const waited = new AbortController()
      const stop = () => waited.abort()
      signal.addEventListener('abort', stop, { once: true })
      await Promise.race([sleep(wait, waited.signal), wake(waited.signal)])
      // The losing side is given up: its timer cleared, and a wake-up arriving during the next step kept for the next wait.
      waited.abort()
      signal.removeEventListener('abort', stop)
    } else await sleep(wait, signal)
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
 * since the last wait ended; a notification is never lost, whenever it comes (during a step too). A
 * wait given up through its `signal` (the loop's timer won the race) takes no notification with it.
 */
export function createWakeUp() {
  let notified = false
  const waiters = new Set<() => void>()
  return {
    notify() {
      if (waiters.size === 0) {
        notified = true
        return
      }
      for (const wake of waiters) wake()
      waiters.clear()
    },
    wait(signal?: AbortSignal): Promise<void> {
      if (notified) {
        notified = false
        return Promise.resolve()
      }
      return new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve()
        const done = () => {
          signal?.removeEventListener('abort', giveUp)
          resolve()
        }
        const giveUp = () => {
          waiters.delete(done)
          resolve()
        }
        waiters.add(done)
        signal?.addEventListener('abort', giveUp, { once: true })
      })
    },
  }
}
