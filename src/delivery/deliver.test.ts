import { describe, expect, it } from 'vitest'
import { backoffDelay } from './deliver.js'

describe('backoffDelay', () => {
  it('doubles per consecutive failure, with jitter between half and all of the step', () => {
    expect(backoffDelay(1_000, 1, () => 0)).toBe(500)
    expect(backoffDelay(1_000, 1, () => 1)).toBe(1_000)
    expect(backoffDelay(1_000, 4, () => 0)).toBe(4_000)
    expect(backoffDelay(1_000, 4, () => 1)).toBe(8_000)
  })

  it('never waits more than 24 hours, however many failures', () => {
    const day = 24 * 3_600_000
    expect(backoffDelay(5_000, 30, () => 1)).toBe(day)
    expect(backoffDelay(5_000, 1_000, () => 0)).toBe(day / 2)
  })
})
