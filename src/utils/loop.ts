import type { Logger } from '../internal/logger.js'

/**
 * Runs `task` every `every` ms (read again after each run when a function; or as soon as `wake` resolves) until `signal` aborts, never overlapping: a slow answer delays the
 * next run instead of piling up concurrent ones. Errors are reported and the loop goes on.
 */
export async function runEvery(
  every: number | (() => number),
  task: () => Promise<unknown>,
  { signal, logger, name, wake }: { signal: AbortSignal; logger: Logger; name: string; wake?: (given: AbortSignal) => Promise<void> },
): Promise<void> {
  let failures = 0
  while (!signal.aborted) {
    const started = performance.now()
    try {
      await task()
      failures = 0
    } catch (error) {
      failures++
      logger.warn({ loop: name, failures, err: error }, 'loop step failed')
    }
    const intervalMs = typeof every === 'number' ? every : every()
    const backoff = failures > 0 ? Math.min(30_000, intervalMs * 2 ** Math.min(failures, 8)) : 0
    const wait = Math.max(backoff, intervalMs - (performance.now() - started))
    // `wake` cuts the wait short when something says there is work now (never after a failure). The
    // wait it was given up when the sleep wins, so a notification during the next run is not spent on it.
    if (wake && failures === 0) {
      const waited = new AbortController()
      await Promise.race([sleep(wait, signal), wake(waited.signal)])
      waited.abort()
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
 * since the last wait (a notification during a step is not lost). A wait whose `given` signal aborts
 * (its caller stopped waiting) no longer takes notifications: the next one is kept for the next wait.
 */
export function createWakeUp() {
  let notified = false
  let waiter: (() => void) | undefined
  return {
    notify() {
      if (!waiter) {
        notified = true
        return
      }
      const woken = waiter
      waiter = undefined
      woken()
    },
    wait(given?: AbortSignal): Promise<void> {
      if (notified) {
        notified = false
        return Promise.resolve()
      }
      return new Promise<void>((done) => {
        if (given?.aborted) return done()
        waiter = done
        given?.addEventListener(
          'abort',
          () => {
            if (waiter === done) waiter = undefined
            done()
          },
          { once: true },
        )
      })
    },
  }
}
