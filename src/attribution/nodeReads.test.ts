import { describe, expect, it } from 'vitest'
import { blockWeight, createReceiptReader, inSlices, readsWholeBlock } from './nodeReads.js'

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

  it('never reads a block whole without its real size', () => {
    expect(readsWholeBlock(2, undefined)).toBe(false)
    expect(readsWholeBlock(300, undefined)).toBe(false)
  })

  it('weighs a block of unknown size as a tenth of a batch', () => {
    expect(blockWeight(undefined)).toBe(10)
    expect(blockWeight(0)).toBe(1)
    expect(blockWeight(37)).toBe(37)
  })
})

describe('createReceiptReader', () => {
  it("reads a block's receipts whole only where the block's size is known", async () => {
    const methods: string[] = []
    // Hashes as a node writes them: 32 bytes, named by one repeated hex digit pair.
    const h = (pair: string) => `0x${pair.repeat(32)}`
    const receipt = (hash: string, blockHash: string) => ({ transactionHash: hash, blockHash, gasUsed: '0x5208' })
    const gasUsedOf = createReceiptReader({
      batch: async <T>(calls: { method: string; params: unknown[] }[]) => {
        methods.push(...calls.map((call) => call.method))
        return calls.map((call) =>
          call.method === 'eth_getBlockReceipts'
            ? [receipt(h('a1'), h('aa')), receipt(h('a2'), h('aa'))]
            : receipt(String(call.params[0]), h('bb')),
        ) as T[]
      },
    })
    const gas = await gasUsedOf([
      { hash: h('a1'), blockHash: h('aa'), blockTransactions: 2 },
      { hash: h('a2'), blockHash: h('aa'), blockTransactions: 2 },
      { hash: h('b1'), blockHash: h('bb'), blockTransactions: undefined },
      { hash: h('b2'), blockHash: h('bb'), blockTransactions: undefined },
    ])
    expect(methods.sort()).toEqual(['eth_getBlockReceipts', 'eth_getTransactionReceipt', 'eth_getTransactionReceipt'])
    expect([...gas.keys()].sort()).toEqual([h('a1'), h('a2'), h('b1'), h('b2')])
  })
})
