import { describe, expect, it } from 'vitest'
import { formatLocalTime, formatUtcTime } from './format.js'

describe('block times', () => {
  it('show milliseconds only where the node served them: five Base blocks share a second', () => {
    expect(formatUtcTime('2026-11-05T12:00:01.400Z', true)).toBe('2026-11-05 12:00:01.400 UTC')
    expect(formatUtcTime('2026-11-05T12:00:01.000Z')).toBe('2026-11-05 12:00:01 UTC')
    expect(formatLocalTime('2026-11-05T12:00:01.400Z', true)).toMatch(/01[.,]400/)
    expect(formatLocalTime('2026-11-05T12:00:01.400Z')).not.toMatch(/400/)
  })
})
