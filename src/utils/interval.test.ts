import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { alignedChunks, intervalDifference, intervalSum, intervalUnion, type Interval } from './interval.js'

describe('intervalUnion', () => {
  it('merges overlapping and adjacent intervals', () => {
    expect(
      intervalUnion([
        [10, 20],
        [0, 5],
        [6, 8],
        [19, 30],
        [40, 40],
      ]),
    ).toEqual([
      [0, 8],
      [10, 30],
      [40, 40],
    ])
  })
  it('returns nothing for nothing', () => {
    expect(intervalUnion([])).toEqual([])
  })
})

describe('intervalDifference', () => {
  it('finds the gaps', () => {
    expect(
      intervalDifference(
        [0, 100],
        [
          [10, 20],
          [50, 60],
        ],
      ),
    ).toEqual([
      [0, 9],
      [21, 49],
      [61, 100],
    ])
    expect(intervalDifference([0, 100], [[0, 100]])).toEqual([])
    expect(
      intervalDifference(
        [5, 10],
        [
          [0, 6],
          [9, 20],
        ],
      ),
    ).toEqual([[7, 8]])
    expect(intervalDifference([5, 10], [])).toEqual([[5, 10]])
    expect(intervalDifference([5, 10], [[20, 30]])).toEqual([[5, 10]])
  })
})

const intervalArb = fc.tuple(fc.nat(500), fc.nat(60)).map(([from, length]): Interval => [from, from + length])

describe('alignedChunks', () => {
  it('aligns chunk edges to multiples of the size', () => {
    expect(alignedChunks([[995, 3001]], 1000)).toEqual([
      [995, 999],
      [1000, 1999],
      [2000, 2999],
      [3000, 3001],
    ])
    expect(alignedChunks([[7, 7]], 1000)).toEqual([[7, 7]])
  })

  it('covers exactly the input blocks, each once, never more than size per chunk', () => {
    fc.assert(
      fc.property(fc.array(intervalArb, { maxLength: 8 }), fc.integer({ min: 1, max: 70 }), (intervals, size) => {
        const chunks = alignedChunks(intervals, size)
        for (const [from, to] of chunks) {
          expect(to - from + 1).toBeLessThanOrEqual(size)
          expect(Math.floor(from / size)).toBe(Math.floor(to / size))
        }
        expect(intervalSum(chunks)).toBe(chunks.reduce((sum, [from, to]) => sum + to - from + 1, 0))
        expect(intervalUnion(chunks)).toEqual(intervalUnion(intervals))
      }),
    )
  })

  it('refuses a non-positive size', () => {
    expect(() => alignedChunks([[0, 1]], 0)).toThrow(RangeError)
  })
})

describe('difference and union agree', () => {
  it('gaps plus covered parts are the whole interval, with no overlap', () => {
    fc.assert(
      fc.property(intervalArb, fc.array(intervalArb, { maxLength: 8 }), (interval, covered) => {
        const gaps = intervalDifference(interval, covered)
        const inside = intervalUnion(covered)
          .map(([from, to]): Interval => [Math.max(from, interval[0]), Math.min(to, interval[1])])
          .filter(([from, to]) => from <= to)
        expect(intervalSum([...gaps, ...inside])).toBe(interval[1] - interval[0] + 1)
        expect(intervalSum(gaps) + intervalSum(inside)).toBe(interval[1] - interval[0] + 1)
      }),
    )
  })
})
