import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Interval } from '../utils/interval.js'
import { blockCount, blocksForTarget, halveInterval, logsJsonBytes, narrowInterval } from './ranges.js'

/** True when `parts` cover `interval` exactly, in order, without overlap. */
function tiles(parts: readonly Interval[], [from, to]: Interval): boolean {
  let next = from
  for (const [a, b] of parts) {
    if (a !== next || b < a) return false
    next = b + 1
  }
  return next === to + 1
}

const interval = fc
  .tuple(fc.integer({ min: 0, max: 50_000_000 }), fc.integer({ min: 0, max: 5000 }))
  .map(([from, width]): Interval => [from, from + width])

describe('halveInterval', () => {
  it('splits in two near-equal halves', () => {
    expect(halveInterval([10, 19])).toEqual([
      [10, 14],
      [15, 19],
    ])
    expect(halveInterval([10, 11])).toEqual([
      [10, 10],
      [11, 11],
    ])
    expect(halveInterval([7, 7])).toBeUndefined()
  })

  it('tiles the interval', () => {
    fc.assert(
      fc.property(interval, (i) => {
        const halves = halveInterval(i)
        if (blockCount(i) === 1) return halves === undefined
        return halves !== undefined && tiles(halves, i) && Math.abs(blockCount(halves[0]!) - blockCount(halves[1]!)) <= 1
      }),
    )
  })
})

describe('narrowInterval', () => {
  it('uses the width of a suggested range', () => {
    expect(narrowInterval([100, 399], { kind: 'suggested-range', fromBlock: 100, toBlock: 199, pattern: 'p' })).toEqual([
      [100, 199],
      [200, 299],
      [300, 399],
    ])
  })

  it('splits by a cap, aligned to its multiples', () => {
    expect(narrowInterval([95, 260], { kind: 'cap', maxBlocks: 100, pattern: 'p' })).toEqual([
      [95, 99],
      [100, 199],
      [200, 260],
    ])
  })

  it('halves on halve', () => {
    expect(narrowInterval([0, 9], { kind: 'halve', pattern: 'p' })).toEqual([
      [0, 4],
      [5, 9],
    ])
  })

  it('does not narrow with a cap or suggestion no narrower than the interval', () => {
    expect(narrowInterval([0, 99], { kind: 'cap', maxBlocks: 100, pattern: 'p' })).toBeUndefined()
    expect(narrowInterval([0, 99], { kind: 'suggested-range', fromBlock: 0, toBlock: 150, pattern: 'p' })).toBeUndefined()
    expect(narrowInterval([5, 5], { kind: 'halve', pattern: 'p' })).toBeUndefined()
  })

  it('does not narrow on errors that are not about size', () => {
    for (const kind of ['retry', 'fatal', 'backoff'] as const) expect(narrowInterval([0, 99], { kind, pattern: 'p' })).toBeUndefined()
  })

  it('always tiles the interval with narrower parts no wider than the cap', () => {
    fc.assert(
      fc.property(interval, fc.integer({ min: 1, max: 6000 }), (i, maxBlocks) => {
        const parts = narrowInterval(i, { kind: 'cap', maxBlocks, pattern: 'p' })
        if (maxBlocks >= blockCount(i)) return parts === undefined
        return parts !== undefined && parts.length > 1 && tiles(parts, i) && parts.every((p) => blockCount(p) <= maxBlocks)
      }),
    )
  })
})

describe('blocksForTarget', () => {
  const target = { logs: 2_500, bytes: 4 * 1024 * 1024 }

  it("aims at the logs target at the last answer's density, at least one block", () => {
    expect(blocksForTarget({ blocks: 100, logs: 10_000, bytes: 6_000_000 }, target)).toBe(25)
    expect(blocksForTarget({ blocks: 25, logs: 250, bytes: 150_000 }, target)).toBe(250)
    expect(blocksForTarget({ blocks: 1, logs: 50_000, bytes: 30_000_000 }, target)).toBe(1)
    expect(blocksForTarget({ blocks: 10, logs: 0, bytes: 0 }, target)).toBe(25_000)
  })

  it('aims lower when the logs are large: bytes bind before the count does', () => {
    const large = Array.from({ length: 500 }, () => ({ data: `0x${'ab'.repeat(4096)}`, topics: ['0x01'] }))
    const bytes = logsJsonBytes(large)
    expect(bytes).toBeGreaterThan(500 * 8192)
    // 500 logs of 4 KB data in 10 blocks: 2,500 logs would be 50 blocks and 20 MB; 4 MiB is 10 blocks.
    expect(blocksForTarget({ blocks: 10, logs: 500, bytes }, target)).toBe(Math.floor((target.bytes * 10) / bytes))
    expect(blocksForTarget({ blocks: 10, logs: 500, bytes }, target)).toBeLessThan(50)
  })
})
