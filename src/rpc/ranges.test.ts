import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Interval } from '../utils/interval.js'
import { blockCount, halveInterval, narrowInterval } from './ranges.js'

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
