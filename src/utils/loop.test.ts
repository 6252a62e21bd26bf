import { describe, expect, it } from 'vitest'
import { silentLogger } from '../internal/logger.js'
import { createWakeUp, runEvery } from './loop.js'

describe('createWakeUp', () => {
  it('resolves a wait at the next notify', async () => {
    const wakeUp = createWakeUp()
    let woken = false
    const waiting = wakeUp.wait().then(() => (woken = true))
    await Promise.resolve()
    expect(woken).toBe(false)
    wakeUp.notify()
    await waiting
    expect(woken).toBe(true)
  })

  it('keeps a notify that came between waits, once', async () => {
    const wakeUp = createWakeUp()
    wakeUp.notify()
    wakeUp.notify()
    await wakeUp.wait()
    let woken = false
    void wakeUp.wait().then(() => (woken = true))
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(woken).toBe(false)
  })
})

describe('runEvery with a wake-up', () => {
  it('runs again at once for a notification that came during a run, after a wait the sleep ended', async () => {
    const wakeUp = createWakeUp()
    const stop = new AbortController()
    let runs = 0
    let third!: () => void
    const ranThird = new Promise<void>((resolve) => (third = resolve))
    const loop = runEvery(
      // Read after each run: the first wait ends by its sleep; after the second run only a notification starts the third.
      () => (runs < 2 ? 1 : 600_000),
      async () => {
        runs++
        if (runs === 2) wakeUp.notify()
        if (runs === 3) third()
      },
      { signal: stop.signal, logger: silentLogger, name: 'test', wake: wakeUp.wait },
    )
    await ranThird
    stop.abort()
    await loop
    expect(runs).toBe(3)
  })
})
