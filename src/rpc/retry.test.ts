import { HttpRequestError } from 'viem'
import { describe, expect, it } from 'vitest'
import { batchWithRetry, withRetry } from './retry.js'

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

describe('batchWithRetry', () => {
  const rateLimited = () => new HttpRequestError({ url: 'http://node', status: 429, details: 'Too Many Requests' })

  it('reads the rest of a refused batch in halves of the part refused, keeping the answers it has', async () => {
    // A provider that refuses any request of more than 3 calls, and call 7 the first time it is asked.
    const asked: number[][] = []
    let sevenRefused = false
    const answers = await batchWithRetry(
      Array.from({ length: 10 }, (_, i) => i),
      async (part) => {
        asked.push([...part])
        if (part.length > 3) throw rateLimited()
        if (part.includes(7) && !sevenRefused) {
          sevenRefused = true
          throw rateLimited()
        }
        return part.map((n) => n * 10)
      },
      { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    )
    expect(answers).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90])
    // Two refusals in a row, then parts of 3; after the third refusal (not in a row with the others), parts of 2.
    expect(asked).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      [0, 1, 2, 3, 4],
      [0, 1, 2],
      [3, 4, 5],
      [6, 7, 8],
      [6, 7],
      [8, 9],
    ])
  })

  it('gives up after the policy’s attempts in a row, with the last error', async () => {
    let requests = 0
    await expect(
      batchWithRetry(
        Array.from({ length: 64 }, (_, i) => i),
        async () => {
          requests++
          throw new Error(`down ${requests}`)
        },
        policy,
      ),
    ).rejects.toThrow('down 3')
    expect(requests).toBe(3)
  })

  it('neither splits nor asks again after a fatal error', async () => {
    let requests = 0
    const reverted = Object.assign(new Error('execution reverted'), { code: 3 })
    await expect(
      batchWithRetry([1, 2, 3, 4], async () => {
        requests++
        throw reverted
      }),
    ).rejects.toBe(reverted)
    expect(requests).toBe(1)
  })
})
