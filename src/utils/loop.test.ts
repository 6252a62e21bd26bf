import { describe, expect, it } from 'vitest'
import { silentLogger } from '../internal/logger.js'
import { createWakeUp, runEvery } from './loop.js'

/** Lets every pending promise callback and I/O turn run. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

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

  it('keeps a notify that came after a wait was given up', async () => {
    const wakeUp = createWakeUp()
    const gaveUp = new AbortController()
    const abandoned = wakeUp.wait(gaveUp.signal)
    gaveUp.abort()
    await abandoned
    wakeUp.notify()
    let woken = false
    void wakeUp.wait().then(() => (woken = true))
    await settle()
    expect(woken).toBe(true)
  })
})

describe('runEvery with a wake-up', () => {
  it('runs again at once for a wake-up that arrives during a step after a wait the timer ended', async () => {
    const wakeUp = createWakeUp()
    const stop = new AbortController()
    let steps = 0
    let thirdStep: () => void
    const reachedThird = new Promise<void>((resolve) => (thirdStep = resolve))
    // The first wait is ended by its timer; every later one would last an hour unless woken.
    const every = () => (steps === 0 ? 0 : 3_600_000)
    const loop = runEvery(
      every,
      async () => {
        steps++
        if (steps === 2) wakeUp.notify()
        if (steps === 3) {
          thirdStep()
          stop.abort()
        }
      },
      { signal: stop.signal, logger: silentLogger, name: 'test', wake: wakeUp.wait },
    )
    await reachedThird
    await loop
    expect(steps).toBe(3)
  })
})
