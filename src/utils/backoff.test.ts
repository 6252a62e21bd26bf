import { describe, expect, it } from 'vitest'
import { backoffDelay } from './backoff.js'

const policy = { baseDelayMs: 100, maxDelayMs: 1000 }

describe('backoffDelay', () => {
  it('doubles the ceiling per attempt and keeps at least half of it', () => {
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, policy, () => 1))).toEqual([100, 200, 400, 800])
    expect([1, 2, 3, 4].map((n) => backoffDelay(n, policy, () => 0))).toEqual([50, 100, 200, 400])
  })

  it('never exceeds the maximum', () => {
    expect(backoffDelay(30, policy, () => 1)).toBe(1000)
    expect(backoffDelay(30, policy, () => 0)).toBe(500)
  })

  it('stays at the maximum however many attempts', () => {
    const day = { baseDelayMs: 5_000, maxDelayMs: 24 * 3_600_000 }
    expect(backoffDelay(1_000, day, () => 1)).toBe(day.maxDelayMs)
    expect(backoffDelay(5_000, day, () => 0)).toBe(day.maxDelayMs / 2)
  })
})
