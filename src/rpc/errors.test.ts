import { HttpRequestError, ResponseBodyTooLargeError, RpcRequestError, TimeoutError } from 'viem'
import { buildRequest } from 'viem/utils'
import { describe, expect, it } from 'vitest'
import { createRpcClient } from './client.js'
import { GetLogsError } from './actions/getLogs.js'
import { InconsistentAnswerError } from './verify.js'
import {
  classifyRpcError,
  FatalError,
  isRevert,
  parseBlockCount,
  parseRetryAfter,
  RetryableError,
  rpcErrorPatterns,
  toKindedError,
  type RpcErrorAction,
} from './errors.js'

const url = 'http://node.invalid'
const body = { method: 'eth_getLogs', params: [{ fromBlock: '0x0', toBlock: '0x3e7' }] }

/** A JSON-RPC error as viem's request layer hands it out (wrapped by code, like a real client call). */
async function rpcError(code: number, message: string, extra: { data?: unknown; status?: number; headers?: HeadersInit } = {}) {
  const headers = extra.headers ? new Headers(extra.headers) : undefined
  return throughViem(new RpcRequestError({ body, error: { code, message, data: extra.data }, status: extra.status, headers, url }))
}

function httpError(status: number, details: string, headers?: HeadersInit) {
  return throughViem(new HttpRequestError({ body, status, details, headers: headers ? new Headers(headers) : undefined, url }))
}

async function throughViem(error: Error): Promise<unknown> {
  const request = buildRequest(async () => Promise.reject(error), { retryCount: 0 })
  return request({ method: 'eth_getLogs', params: [] } as never).then(
    () => expect.unreachable('request resolved'),
    (thrown: unknown) => thrown,
  )
}

/** A closed local port: connecting fails at once with ECONNREFUSED. */
async function networkError() {
  return createRpcClient({ url: 'http://127.0.0.1:1' })
    .request('eth_chainId')
    .then(
      () => expect.unreachable('request resolved'),
      (thrown: unknown) => thrown,
    )
}

/** An action without its pattern name (the table key is the name). */
type Expected = RpcErrorAction extends infer A ? (A extends unknown ? Omit<A, 'pattern'> : never) : never
type Sample = { error: () => Promise<unknown> | unknown; expected: Expected }

const samples: Record<string, Sample> = {
  aborted: {
    error: () => {
      const controller = new AbortController()
      controller.abort()
      return controller.signal.reason
    },
    expected: { kind: 'fatal' },
  },
  'alchemy-suggested-range': {
    error: () =>
      rpcError(
        -32602,
        'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range and no limit on the response size, or you can request any block range with a cap of 10K logs in the response. Based on your parameters, this block range should work: [0x10, 0x2f]',
      ),
    expected: { kind: 'suggested-range', fromBlock: 16, toBlock: 47 },
  },
  'infura-suggested-range': {
    error: () => rpcError(-32005, 'query returned more than 10000 results. Try with this block range [0x1, 0x20].'),
    expected: { kind: 'suggested-range', fromBlock: 1, toBlock: 32 },
  },
  'infura-data-range': {
    error: () => rpcError(-32005, 'query returned more than 10000 results', { data: { from: '0x5', to: '0x9' } }),
    expected: { kind: 'suggested-range', fromBlock: 5, toBlock: 9 },
  },
  'limited-to': {
    error: () => rpcError(-32614, 'eth_getLogs is limited to a 10,000 range'),
    expected: { kind: 'cap', maxBlocks: 10_000 },
  },
  'max-is': {
    error: () => rpcError(-32000, 'block range is too large, max is 500'),
    expected: { kind: 'cap', maxBlocks: 500 },
  },
  'range-exceeds': {
    error: () => rpcError(-32000, 'eth_getLogs range exceeds 2000 blocks'),
    expected: { kind: 'cap', maxBlocks: 2000 },
  },
  'at-most-blocks': {
    error: () => rpcError(-32000, 'please limit the query to at most 1000 blocks'),
    expected: { kind: 'cap', maxBlocks: 1000 },
  },
  'max-block-range': {
    error: () => rpcError(-32000, 'query exceeds max block range 100000'),
    expected: { kind: 'cap', maxBlocks: 100_000 },
  },
  'max-range': {
    error: () => rpcError(-32047, 'Invalid eth_getLogs request. Max range: 800'),
    expected: { kind: 'cap', maxBlocks: 800 },
  },
  'allowed-number-of-blocks': {
    error: () => rpcError(-32602, 'Maximum allowed number of requested blocks is 5000'),
    expected: { kind: 'cap', maxBlocks: 5000 },
  },
  'plan-range': {
    error: () => rpcError(-32000, 'eth_getLogs range exceeds the range allowed for your plan (5000 > 500).'),
    expected: { kind: 'cap', maxBlocks: 500 },
  },
  'too-wide-maximum': {
    error: () => rpcError(-32000, 'block range is too wide (maximum 1024)'),
    expected: { kind: 'cap', maxBlocks: 1024 },
  },
  'up-to-block-range': {
    error: () => rpcError(-32600, 'You can make eth_getLogs requests with up to a 2K block range.'),
    expected: { kind: 'cap', maxBlocks: 2000 },
  },
  'blocks-distance': {
    error: () => rpcError(-32062, 'maximum [from, to] blocks distance: 100'),
    expected: { kind: 'cap', maxBlocks: 100 },
  },
  'block-not-found': {
    error: () => rpcError(-32000, 'One of the blocks specified in filter (fromBlock, toBlock or blockHash) cannot be found.'),
    expected: { kind: 'retry' },
  },
  'rate-limit-message': {
    error: () =>
      rpcError(429, 'Your app has exceeded its compute units per second capacity.', { status: 429, headers: { 'retry-after': '2' } }),
    expected: { kind: 'backoff', retryAfterMs: 2000 },
  },
  'rate-limit-code': {
    error: () => rpcError(-32007, 'slow down'),
    expected: { kind: 'backoff' },
  },
  'http-429': {
    error: () => httpError(429, 'slow down', { 'Retry-After': '3' }),
    expected: { kind: 'backoff', retryAfterMs: 3000 },
  },
  'more-than-results': {
    error: () => rpcError(-32005, 'query returned more than 10000 results'),
    expected: { kind: 'halve' },
  },
  'response-size': {
    error: () => rpcError(-32000, 'Log response size exceeded.'),
    expected: { kind: 'halve' },
  },
  'block-range-too-large': {
    error: () => rpcError(-32000, 'block range too large'),
    expected: { kind: 'halve' },
  },
  'invalid-params-range': {
    error: () => rpcError(-32602, 'invalid block range params'),
    expected: { kind: 'halve' },
  },
  'limit-exceeded': {
    error: () => rpcError(-32005, 'limit exceeded'),
    expected: { kind: 'halve' },
  },
  'no-healthy-backend': {
    error: () => rpcError(-32011, 'no backend is currently healthy to serve traffic'),
    expected: { kind: 'halve' },
  },
  'http-413': {
    error: () => httpError(413, 'Payload Too Large'),
    expected: { kind: 'halve' },
  },
  'response-body-too-large': {
    error: () => throughViem(new ResponseBodyTooLargeError({ maxSize: 10_485_760, size: 52_000_000 })),
    expected: { kind: 'halve' },
  },
  timeout: {
    error: () => throughViem(new TimeoutError({ body, url })),
    expected: { kind: 'halve' },
  },
  'http-503': {
    error: () => httpError(503, 'Service Unavailable', { 'retry-after': '1' }),
    expected: { kind: 'backoff', retryAfterMs: 1000 },
  },
  'malformed-json': {
    error: () => throughViem(new HttpRequestError({ body, cause: new SyntaxError('Unexpected end of JSON input'), url })),
    expected: { kind: 'retry' },
  },
  'inconsistent-answer': {
    error: () => new InconsistentAnswerError('a log of 0xcdcd… in block 0x7 was not asked for (address)'),
    expected: { kind: 'retry' },
  },
  network: { error: networkError, expected: { kind: 'retry' } },
  'http-5xx': {
    error: () => httpError(502, 'Bad Gateway'),
    expected: { kind: 'retry' },
  },
  'internal-error': {
    error: () => rpcError(-32603, 'internal error'),
    expected: { kind: 'retry' },
  },
  'execution-reverted': {
    error: () => rpcError(3, 'execution reverted', { data: '0x08c379a0' }),
    expected: { kind: 'fatal' },
  },
  'execution-reverted-message': {
    error: () => rpcError(-32000, 'execution reverted: not registered', { data: '0x08c379a0' }),
    expected: { kind: 'fatal' },
  },
  'revert-data': {
    error: () => rpcError(-32015, 'VM execution error.', { data: `0x4e487b71${'0'.repeat(62)}11` }),
    expected: { kind: 'fatal' },
  },
  'invalid-params': {
    error: () => rpcError(-32602, 'invalid argument 0: hex string without 0x prefix'),
    expected: { kind: 'fatal' },
  },
  'invalid-request': {
    error: () => rpcError(-32601, 'the method eth_foo does not exist/is not available'),
    expected: { kind: 'fatal' },
  },
  'http-client-error': {
    error: () => httpError(401, 'Unauthorized'),
    expected: { kind: 'fatal' },
  },
}

describe('classifyRpcError', () => {
  it('has a sample for every catalogue entry', () => {
    expect(Object.keys(samples).sort()).toEqual(rpcErrorPatterns.map((p) => p.name).sort())
  })

  it.each(rpcErrorPatterns.map((p) => p.name))('%s', async (name) => {
    const sample = samples[name]!
    const action = classifyRpcError(await sample.error())
    expect(action).toEqual({ ...sample.expected, pattern: name })
  })

  it('retries what it does not know', async () => {
    expect(classifyRpcError(await rpcError(-32099, 'something odd'))).toEqual({ kind: 'retry', pattern: 'unknown' })
    expect(classifyRpcError(new Error('boom'))).toEqual({ kind: 'retry', pattern: 'unknown' })
    expect(classifyRpcError(undefined)).toEqual({ kind: 'retry', pattern: 'unknown' })
  })

  it('reads errors that are not wrapped by viem', () => {
    const raw = { code: -32005, message: 'query returned more than 10000 results. Try with this block range [0xa, 0xb].' }
    expect(classifyRpcError(raw)).toEqual({ kind: 'suggested-range', fromBlock: 10, toBlock: 11, pattern: 'infura-suggested-range' })
  })

  it('does not read block numbers from the request body viem puts in its message', async () => {
    const error = await rpcError(-32000, 'nope')
    expect(String((error as Error).message)).toContain('Request body')
    expect(classifyRpcError(error).pattern).toBe('unknown')
  })

  it('falls through when a hint cannot be read', () => {
    expect(classifyRpcError({ code: -32000, message: 'block range is too large, max is 0' }).pattern).toBe('block-range-too-large')
    expect(classifyRpcError({ code: -32005, message: 'Try with this block range [0x9, 0x2].' }).pattern).toBe('limit-exceeded')
  })
})

describe('parseRetryAfter', () => {
  it('reads delta seconds and HTTP dates', () => {
    const now = Date.parse('2025-01-01T00:00:00Z')
    expect(parseRetryAfter('0', now)).toBe(0)
    expect(parseRetryAfter(' 12 ', now)).toBe(12_000)
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5000)
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0)
    expect(parseRetryAfter('soon', now)).toBeUndefined()
    expect(parseRetryAfter(null, now)).toBeUndefined()
  })
})

describe('parseBlockCount', () => {
  it('reads separators and a k suffix', () => {
    expect(parseBlockCount('10,000')).toBe(10_000)
    expect(parseBlockCount('2K')).toBe(2000)
    expect(parseBlockCount('10k')).toBe(10_000)
    expect(parseBlockCount('1999')).toBe(1999)
  })
})

describe('toKindedError', () => {
  it('reads what the node says asking again cannot change as fatal', async () => {
    for (const error of [
      await rpcError(-32601, 'the method eth_getLogs does not exist/is not available'),
      await rpcError(-32602, 'invalid argument 0: hex string without 0x prefix'),
      await httpError(401, 'invalid API key'),
    ]) {
      const kinded = toKindedError(error)
      expect(kinded).toBeInstanceOf(FatalError)
      expect(kinded.cause).toBe(error)
    }
    const gaveUp = new GetLogsError({
      fromBlock: 0,
      toBlock: 9,
      attempts: 1,
      reason: { kind: 'fatal', pattern: 'invalid-request' },
      retryable: false,
      cause: await rpcError(-32601, 'method not found'),
    })
    expect(toKindedError(gaveUp)).toBeInstanceOf(FatalError)
  })

  it('reads everything else as retryable: limits, a node behind, an abort, malformed or unknown failures', async () => {
    const controller = new AbortController()
    controller.abort()
    for (const error of [
      await rpcError(-32602, 'invalid block range'),
      await rpcError(-32000, 'header not found'),
      await httpError(429, 'Too Many Requests'),
      controller.signal.reason,
      new Error('log 3 of block 7 has no transactionHash'),
      new GetLogsError({
        fromBlock: 0,
        toBlock: 0,
        attempts: 5,
        reason: { kind: 'retry', pattern: 'malformed-json' },
        retryable: true,
        cause: new SyntaxError('Unexpected end of JSON input'),
      }),
    ]) {
      expect(toKindedError(error)).toBeInstanceOf(RetryableError)
    }
  })

  it('keeps an error that already has a kind, also from its cause chain', () => {
    const fatal = new FatalError('no such filter')
    expect(toKindedError(fatal)).toBe(fatal)
    expect(toKindedError(new Error('range failed', { cause: fatal }))).toBe(fatal)
    const retryable = new RetryableError('the node is behind', { cause: { code: -32601 } })
    expect(toKindedError(new Error('wrapped', { cause: retryable }))).toBe(retryable)
  })
})

describe('isRevert', () => {
  it('is true for code 3, revert data and "execution reverted" only', async () => {
    expect(isRevert(await rpcError(3, 'execution reverted', { data: '0x' }))).toBe(true)
    expect(isRevert(await rpcError(-32000, 'execution reverted'))).toBe(true)
    expect(isRevert(await rpcError(-32015, 'VM execution error.', { data: '0x3a81d6fc' }))).toBe(true)
    expect(isRevert(await rpcError(-32000, 'header not found'))).toBe(false)
    expect(isRevert(await rpcError(-32000, 'missing trie node 5f3a… (path )'))).toBe(false)
    expect(isRevert(await rpcError(-32000, 'request timed out', { data: '0x' }))).toBe(false)
    expect(isRevert(await httpError(503, 'Service Unavailable'))).toBe(false)
  })
})
