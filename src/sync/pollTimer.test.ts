import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createPollTimer } from './pollTimer.js'

const T0 = 1_800_000_000_000
const block = (number: number, timestampMs: number | null = T0 + number * 200) => ({
  number,
  hash: `0x${number}`,
  parentHash: `0x${number - 1}`,
  timestamp: 0,
  timestampMs,
})

describe('createPollTimer', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['Date'] }))
  afterEach(() => vi.useRealTimers())

  it('aims each poll at the next block’s timestampMs, moving earlier while polls find their block at once', () => {
    const timer = createPollTimer()
    expect(timer.nextInMs(200)).toBeUndefined()
    vi.setSystemTime(T0 + 1 * 200 + 5)
    timer.polled(block(1))
    // Block 2 is stamped 200 ms after block 1: 195 ms from now.
    expect(timer.nextInMs(200)).toBe(195)
    vi.setSystemTime(T0 + 2 * 200 + 1)
    timer.polled(block(2))
    expect(timer.nextInMs(200)).toBe(200 - 1 - 2)
  })

  it('tries once more a quarter block after a poll that found nothing new, later by a step from then on; then the plain interval', () => {
    const timer = createPollTimer()
    vi.setSystemTime(T0 + 1 * 200)
    timer.polled(block(1))
    vi.setSystemTime(T0 + 2 * 200)
    timer.polled(block(1))
    expect(timer.nextInMs(200)).toBe(50)
    timer.polled(block(1))
    expect(timer.nextInMs(200)).toBeUndefined()
    vi.setSystemTime(T0 + 2 * 200 + 60)
    timer.polled(block(2))
    expect(timer.nextInMs(200)).toBe(200 - 60 + 10)
  })

  it('leaves chains without millisecond timestamps to the plain interval', () => {
    const timer = createPollTimer()
    timer.polled(block(1, null))
    timer.polled(block(2, null))
    expect(timer.nextInMs(200)).toBeUndefined()
  })
})
