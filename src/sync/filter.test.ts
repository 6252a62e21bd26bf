import { describe, expect, it } from 'vitest'
import { filterIdOf, normalizeFilter, toRpcFilter } from './filter.js'

const A = '0x00000000000000000000000000000000000000aA'
const B = '0x00000000000000000000000000000000000000bb'
const T = `0x${'12'.repeat(32)}`

describe('filters', () => {
  it('gives equal ids to equal filters in any order or letter case', () => {
    expect(filterIdOf({ addresses: [], topics: [] })).toBe('all')
    expect(filterIdOf({ addresses: [A, B], topics: [T] })).toBe(
      filterIdOf({ addresses: [B, A.toLowerCase(), B], topics: [T.toUpperCase().replace('0X', '0x')] }),
    )
    expect(filterIdOf({ addresses: [A], topics: [] })).not.toBe(filterIdOf({ addresses: [B], topics: [] }))
    expect(filterIdOf({ addresses: [A], topics: [] })).not.toBe(filterIdOf({ addresses: [], topics: [A] }))
  })

  it('builds the eth_getLogs filter', () => {
    const filter = normalizeFilter({ addresses: [B, A], topics: [T] })
    expect(toRpcFilter(filter)).toEqual({ address: [A.toLowerCase(), B], topics: [[T]] })
    expect(toRpcFilter({ addresses: [], topics: [] })).toEqual({})
  })
})
