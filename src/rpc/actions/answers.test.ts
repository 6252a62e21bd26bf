import { describe, expect, it } from 'vitest'
import { InconsistentAnswerError } from '../verify.js'
import { parseBlockHeader, parseBlockWithTransactions } from './getBlock.js'
import { parseBlockNumber } from './getBlockNumber.js'
import { parseLogs } from './getLogs.js'
import { parseTransaction } from './getTransactionByHash.js'
import { parseReceipt } from './getTransactionReceipt.js'

const hash = (pair: string) => `0x${pair.repeat(32)}`
const address = (pair: string) => `0x${pair.repeat(20)}`
const transaction = { hash: hash('11'), from: address('aa'), to: address('bb'), input: '0x', type: '0x2', nonce: '0x0' }
const block = {
  number: '0x10',
  hash: hash('AB'),
  parentHash: hash('cd'),
  timestamp: '0x5',
  timestampMs: '0x1388',
  transactions: [transaction],
}

describe('node answers', () => {
  it('decode into domain values: numbers, lowercase hashes, the node objects kept where they are passed on', () => {
    expect(parseBlockHeader(block)).toEqual({
      number: 16,
      hash: hash('ab'),
      parentHash: hash('cd'),
      timestamp: 5,
      timestampMs: 5_000,
      transactionCount: 1,
    })
    const full = parseBlockWithTransactions(block)!
    expect(full.transactions[0]).toBe(transaction)
    expect(parseReceipt({ transactionHash: hash('EE'), blockHash: hash('ab'), gasUsed: '0x5208' })).toEqual({
      transactionHash: hash('ee'),
      blockHash: hash('ab'),
      gasUsed: 21_000,
    })
    expect(parseBlockNumber('0x2a')).toBe(42)
  })

  it('keep null for what the node does not have', () => {
    expect(parseBlockHeader(null)).toBeNull()
    expect(parseTransaction(null)).toBeNull()
    expect(parseReceipt(null)).toBeNull()
  })

  it('are refused, retryable, when they are not what the method returns', () => {
    const refused = [
      () => parseBlockHeader({ ...block, hash: null }),
      () => parseBlockHeader({ ...block, number: 16 }),
      () => parseBlockHeader('0x10'),
      () => parseBlockWithTransactions({ ...block, transactions: undefined }),
      () => parseBlockWithTransactions({ ...block, transactions: [{ ...transaction, from: 'nobody' }] }),
      () => parseTransaction({ ...transaction, input: undefined }),
      () => parseReceipt({ transactionHash: hash('ee'), blockHash: hash('ab') }),
      () => parseBlockNumber(null),
      () => parseLogs({ logs: [] }, { fromBlock: 1, toBlock: 2 }),
      () => parseLogs([{ address: address('cc'), topics: [], blockNumber: '0x9' }], { fromBlock: 1, toBlock: 2 }),
    ]
    for (const parse of refused) expect(parse).toThrow(InconsistentAnswerError)
  })
})
