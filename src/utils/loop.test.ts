import { describe, expect, it } from 'vitest'
import { createWakeUp } from './loop.js'

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
