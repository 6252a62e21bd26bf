import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { classifyRpcError, createRpcClient } from '../src/rpc/index.js'

/**
 * The client's HTTP exchange against a node that misbehaves in ways anvil and the fault proxy do not:
 * each test sets how the next requests are answered.
 */
type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => void

let server: Server
let url: string
let handler: Handler
const seen: { headers: IncomingMessage['headers']; body: string }[] = []

const json = (response: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { 'content-type': 'application/json', ...headers })
  response.end(JSON.stringify(value))
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      seen.push({ headers: request.headers, body })
      handler(request, body, response)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe('createRpcClient over HTTP', () => {
  it('posts JSON-RPC 2.0 and sends credentials from the URL as basic authentication', async () => {
    handler = (_request, body, response) => json(response, 200, { jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x2105' })
    const withCredentials = url.replace('http://', 'http://user%40x:p%3Ass@')
    seen.length = 0
    expect(await createRpcClient({ url: withCredentials }).request('eth_chainId')).toBe('0x2105')
    expect(seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from('user@x:p:ss').toString('base64')}`)
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ jsonrpc: '2.0', method: 'eth_chainId', params: [] })
  })

  it('decodes answers beyond ASCII as UTF-8', async () => {
    handler = (_request, body, response) => json(response, 200, { jsonrpc: '2.0', id: JSON.parse(body).id, result: 'ünïcødé ✓ 🦊' })
    expect(await createRpcClient({ url }).request('web3_clientVersion')).toBe('ünïcødé ✓ 🦊')
  })

  it('keeps the connection alive between requests', async () => {
    const ports = new Set<number>()
    handler = (request, body, response) => {
      ports.add(request.socket.remotePort!)
      json(response, 200, { jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x1' })
    }
    const client = createRpcClient({ url })
    for (let i = 0; i < 5; i++) await client.request('eth_blockNumber')
    expect(ports.size).toBe(1)
  })

  it('answers a batch in call order whatever order the node answers in', async () => {
    handler = (_request, body, response) => {
      const calls = JSON.parse(body) as { id: number; params: [string] }[]
      json(response, 200, calls.map((call) => ({ jsonrpc: '2.0', id: call.id, result: call.params[0] })).reverse())
    }
    const answers = await createRpcClient({ url }).batch(['a', 'b', 'c'].map((value) => ({ method: 'echo', params: [value] })))
    expect(answers).toEqual(['a', 'b', 'c'])
  })

  it('slices a 1,999-header read into batches of at most RPC_BATCH_SIZE calls, answers in request order', async () => {
    const sizes: number[] = []
    handler = (_request, body, response) => {
      const calls = JSON.parse(body) as { id: number; params: [string, boolean] }[]
      sizes.push(calls.length)
      json(response, 200, calls.map((call) => ({ jsonrpc: '2.0', id: call.id, result: { number: call.params[0] } })).reverse())
    }
    const numbers = Array.from({ length: 1_999 }, (_, i) => `0x${(5_000 + i).toString(16)}`)
    const headers = await createRpcClient({ url }).batch<{ number: string }>(
      numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [n, false] })),
    )
    expect(headers.map((header) => header.number)).toEqual(numbers)
    expect(sizes).toEqual([...Array<number>(19).fill(100), 99])

    sizes.length = 0
    const answers = await createRpcClient({ url, batchSize: 7 }).batch<{ number: string }>(
      numbers.slice(0, 20).map((n) => ({ method: 'eth_getBlockByNumber', params: [n, false] })),
    )
    expect(answers.map((header) => header.number)).toEqual(numbers.slice(0, 20))
    expect(sizes).toEqual([7, 7, 6])
  })

  it('fails every call of a batch the node rejects with one bare error', async () => {
    handler = (_request, _body, response) =>
      json(response, 200, { jsonrpc: '2.0', id: null, error: { code: -32005, message: 'limit exceeded' } })
    const error = await createRpcClient({ url })
      .batch([{ method: 'eth_blockNumber' }, { method: 'eth_chainId' }])
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'RpcRequestError', code: -32005 })
  })

  it('reads a JSON-RPC error in a non-2xx answer as the RPC error, with the status and headers', async () => {
    handler = (_request, body, response) =>
      json(
        response,
        429,
        { jsonrpc: '2.0', id: JSON.parse(body).id, error: { code: -32005, message: 'rate limited' } },
        { 'retry-after': '7' },
      )
    const error = await createRpcClient({ url })
      .request('eth_blockNumber')
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'RpcRequestError', code: -32005, status: 429 })
    expect(classifyRpcError(error)).toMatchObject({ kind: 'backoff', retryAfterMs: 7_000 })
  })

  it('reads a non-JSON error answer as an HTTP error with the status', async () => {
    handler = (_request, _body, response) => {
      response.writeHead(502, { 'content-type': 'text/html' })
      response.end('<html>bad gateway</html>')
    }
    const error = await createRpcClient({ url })
      .request('eth_blockNumber')
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'HttpRequestError', status: 502 })
    expect(classifyRpcError(error).kind).toBe('retry')
  })

  it('reads broken JSON in a 200 answer as an HTTP error caused by the parse', async () => {
    handler = (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{"jsonrpc":"2.0","id":0,"result":[{"addr')
    }
    const error = await createRpcClient({ url })
      .request('eth_getLogs')
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'HttpRequestError', cause: expect.objectContaining({ name: 'SyntaxError' }) })
  })

  it('fails a request whose connection closes halfway through the answer', async () => {
    handler = (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' })
      response.write('{"jsonrpc":"2.0","id":0,"result":"0x')
      setTimeout(() => response.socket?.destroy(), 20)
    }
    const error = await createRpcClient({ url })
      .request('eth_blockNumber')
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'HttpRequestError' })
  })

  it('times out a request that stalls after its headers, then serves the next one', async () => {
    let calls = 0
    handler = (_request, body, response) => {
      if (calls++ === 0) {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.write('{"jsonrpc":"2.0",')
        return
      }
      json(response, 200, { jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x5' })
    }
    const client = createRpcClient({ url, timeoutMs: 200 })
    const error = await client.request('eth_blockNumber').catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'TimeoutError' })
    expect(classifyRpcError(error).kind).toBe('halve')
    expect(await client.request('eth_blockNumber')).toBe('0x5')
  })

  it('rejects with the signal’s reason when the caller aborts', async () => {
    handler = () => {}
    const controller = new AbortController()
    const pending = createRpcClient({ url }).request('eth_blockNumber', [], { signal: controller.signal })
    const reason = new Error('stop')
    setTimeout(() => controller.abort(reason), 50)
    await expect(pending).rejects.toBe(reason)
  })
})
