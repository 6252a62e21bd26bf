import { describe, expect, it } from 'vitest'
import { blockWeight, inSlices, readsWholeBlock } from './nodeReads.js'

describe('inSlices', () => {
  it('cuts slices by weight, a heavier item alone, results in order whatever finishes first', async () => {
    const seen: number[][] = []
    const results = await inSlices(
      [1, 2, 3, 250, 4, 5],
      100,
      3,
      async (slice) => {
        seen.push(slice)
        await new Promise((resolve) => setTimeout(resolve, 10 - slice.length))
        return slice.map((n) => n * 10)
      },
      (n) => (n === 250 ? 250 : 40),
    )
    expect(results).toEqual([10, 20, 30, 2500, 40, 50])
    expect(seen.sort((a, b) => a[0]! - b[0]!)).toEqual([[1, 2], [3], [4, 5], [250]].sort((a, b) => a[0]! - b[0]!))
  })
})

describe('readsWholeBlock', () => {
  it('reads a block whole from two needed transactions that are at least half of it', () => {
    expect(readsWholeBlock(1, 1)).toBe(false)
    expect(readsWholeBlock(2, 4)).toBe(true)
    expect(readsWholeBlock(2, 5)).toBe(false)
    expect(readsWholeBlock(100, 200)).toBe(true)
  })

  it('weighs a block of unknown size as a tenth of a batch', () => {
    expect(blockWeight(undefined)).toBe(10)
    expect(blockWeight(0)).toBe(1)
    expect(blockWeight(37)).toBe(37)
  })
})
