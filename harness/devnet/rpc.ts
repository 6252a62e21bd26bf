import { Agent, request, type IncomingMessage } from 'node:http'

export type JsonRpcId = string | number | null

export type JsonRpcRequest = {
  jsonrpc: '2.0'
  id?: JsonRpcId
  method: string
  params?: unknown
}

export type JsonRpcError = { code: number; message: string; data?: unknown }

export type JsonRpcResponse = { jsonrpc: '2.0'; id: JsonRpcId; result: unknown } | { jsonrpc: '2.0'; id: JsonRpcId; error: JsonRpcError }

export const INTERNAL_ERROR = -32603
export const INVALID_REQUEST = -32600
export const INVALID_PARAMS = -32602
export const PARSE_ERROR = -32700

/** A JSON-RPC error answered by anvil, or a failure to reach it (code -32603). */
export class UpstreamError extends Error {
  override name = 'UpstreamError'
  readonly code: number
  readonly data: unknown

  constructor(error: JsonRpcError, options?: { cause?: unknown }) {
    super(error.message, options)
    this.code = error.code
    this.data = error.data
  }
}

/** The JSON-RPC error object to answer for any thrown value. */
export function toJsonRpcError(error: unknown): JsonRpcError {
  if (error instanceof UpstreamError) {
    return error.data === undefined
      ? { code: error.code, message: error.message }
      : { code: error.code, message: error.message, data: error.data }
  }
  return { code: INTERNAL_ERROR, message: error instanceof Error ? error.message : String(error) }
}

export type RpcCall = { method: string; params: unknown[] }

export type UpstreamClient = {
  url: string
  /** One call; resolves the result, rejects with `UpstreamError`. */
  call: <T>(method: string, params?: unknown[]) => Promise<T>
  /** Several calls in one JSON-RPC batch; results in call order. */
  batch: (calls: RpcCall[]) => Promise<unknown[]>
  /** Sends a request body verbatim and resolves anvil's response stream. */
  send: (body: string) => Promise<IncomingMessage>
  /** Sends a request body verbatim and resolves anvil's parsed answer (a response or a batch of them). */
  exchange: (body: string) => Promise<unknown>
  close: () => void
}

/** A keep-alive JSON-RPC client for anvil (node:http: ~1 ms cheaper per call than fetch on these machines). */
export function createUpstreamClient(url: string): UpstreamClient {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 })
  const target = new URL(url)
  let nextId = 1

  const send = (body: string) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        {
          agent,
          hostname: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        resolve,
      )
      req.once('error', (cause) =>
        reject(new UpstreamError({ code: INTERNAL_ERROR, message: `anvil unreachable: ${cause.message}` }, { cause })),
      )
      req.end(body)
    })

  const post = async (body: string): Promise<unknown> => {
    const res = await send(body)
    const chunks: Buffer[] = []
    for await (const chunk of res) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    try {
      return JSON.parse(text)
    } catch (cause) {
      throw new UpstreamError(
        { code: INTERNAL_ERROR, message: `anvil answered HTTP ${res.statusCode} with a body that is not JSON` },
        { cause },
      )
    }
  }

  const unwrap = (response: unknown): unknown => {
    const r = response as Partial<{ result: unknown; error: JsonRpcError }> | null
    if (r && typeof r === 'object' && r.error) throw new UpstreamError(r.error)
    if (!r || typeof r !== 'object' || !('result' in r)) {
      throw new UpstreamError({ code: INTERNAL_ERROR, message: 'anvil answered without a result' })
    }
    return r.result
  }

  return {
    url,
    send,
    exchange: post,
    call: async <T>(method: string, params: unknown[] = []) =>
      unwrap(await post(JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }))) as T,
    batch: async (calls) => {
      const first = nextId
      nextId += calls.length
      const body = calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params }))
      const answer = await post(JSON.stringify(body))
      if (!Array.isArray(answer)) return calls.map(() => unwrap(answer))
      const byId = new Map(answer.map((r: { id?: unknown }) => [r.id, r]))
      return body.map((b) => unwrap(byId.get(b.id)))
    },
    close: () => agent.destroy(),
  }
}
