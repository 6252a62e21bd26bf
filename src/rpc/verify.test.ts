import { describe, expect, it } from 'vitest'
import { InconsistentAnswerError, verifyLogs } from './verify.js'

const HASH_A = `0x${'a'.repeat(64)}`
const HASH_B = `0x${'b'.repeat(64)}`
const TX = `0x${'1'.repeat(64)}`
const BLOOM = `0x${'0'.repeat(511)}1`
const EMPTY = `0x${'0'.repeat(512)}`

const log = (blockNumber: string | null, blockHash: string | null) => ({ blockNumber, blockHash, transactionHash: TX })

describe('verifyLogs', () => {
  it('accepts logs that agree with their headers', () => {
    const headers = new Map([
      [1, { hash: HASH_A, logsBloom: BLOOM }],
      [2, { hash: HASH_B, logsBloom: EMPTY }],
    ])
    expect(() => verifyLogs([log('0x1', HASH_A.toUpperCase().replace('0X', '0x'))], { headers, everyLog: true })).not.toThrow()
  })

  it('refuses a confirmed log without a block hash (never stored as the zero hash)', () => {
    expect(() => verifyLogs([log('0x1', null)], { headers: new Map(), everyLog: false })).toThrow(InconsistentAnswerError)
  })

  it('refuses a log whose block hash differs from the header read with it', () => {
    const headers = new Map([[1, { hash: HASH_A }]])
    expect(() => verifyLogs([log('0x1', HASH_B)], { headers, everyLog: false })).toThrow(/names block/)
  })

  it('refuses an unfiltered answer with no logs for a block whose bloom has some', () => {
    const headers = new Map([[5, { hash: HASH_A, logsBloom: BLOOM }]])
    expect(() => verifyLogs([], { headers, everyLog: true })).toThrow(/non-empty logs bloom/)
    // With a filter, a bloom hit may be another contract's log: no contradiction.
    expect(() => verifyLogs([], { headers, everyLog: false })).not.toThrow()
  })
})
