import { HttpRequestError } from 'viem'
import { describe, expect, it } from 'vitest'
import { withRetry } from './retry.js'

const policy = { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 }

describe('withRetry', () => {
  it('retries rate limits and transient errors until the request succeeds', async () => {
    let calls = 0
    const result = await withRetry(async () => {
      calls++
      if (calls === 1) throw new HttpRequestError({ url: 'http://node', status: 429, details: 'Too Many Requests' })
      if (calls === 2) throw new Error('socket hang up')
      return 'ok'
    }, policy)
    expect(result).toBe('ok')
    expect(calls).toBe(3)
  })

  it('gives up after the last attempt with the last error', async () => {
    let calls = 0
    await expect(
      withRetry(async () => {
        calls++
        throw new Error(`down ${calls}`)
      }, policy),
    ).rejects.toThrow('down 3')
    expect(calls).toBe(3)
  })

  it('does not retry an abort', async () => {
    let calls = 0
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' })
    await expect(
      withRetry(async () => {
        calls++
        throw abort
      }, policy),
    ).rejects.toBe(abort)
    expect(calls).toBe(1)
  })
})
