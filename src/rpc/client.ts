import { createPublicClient, custom, RpcRequestError, type PublicClient } from 'viem'
import { getHttpRpcClient } from 'viem/utils'
import { silentLogger, type Logger } from '../logger.js'
import { classifyRpcError, type RpcErrorActionKind } from './errors.js'

/** Long enough for a 1000-block `eth_getLogs` of ~50 MB from a busy provider. */
const DEFAULT_TIMEOUT_MS = 30_000

/** One finished HTTP request, for metrics. */
export type RpcRequestEvent = {
  /** The JSON-RPC method; a batch mixing methods reports one event per method. */
  method: string
  /** How many of the request's calls had this method (1 unless batched). */
  calls: number
  ok: boolean
  /** How {@link classifyRpcError} reads the failure. */
  errorKind?: RpcErrorActionKind
  durationMs: number
}

export type RpcCall = { method: string; params?: readonly unknown[] }

export type RpcRequestOptions = {
  signal?: AbortSignal
  /** Overrides the client's timeout for this request. */
  timeoutMs?: number
}

export type CreateRpcClientParameters = {
  url: string
  /** Per HTTP request, body included. @default 30_000 */
  timeoutMs?: number
  logger?: Logger
  /** Called after every HTTP request, batches included (wire prom-client here). */
  onRequest?: (event: RpcRequestEvent) => void
}

export type RpcClient = {
  url: string
  logger: Logger
  /** One JSON-RPC call; resolves to the node's raw `result` (hex strings, no viem formatting). */
  request<T = unknown>(method: string, params?: readonly unknown[], options?: RpcRequestOptions): Promise<T>
  /**
   * Many calls in one HTTP request (a JSON-RPC batch); results in call order. Rejects with the first
   * failed call's error, so the caller retries the batch as a whole.
   */
  batch<T = unknown>(calls: readonly RpcCall[], options?: RpcRequestOptions): Promise<T[]>
  /** `eth_chainId`, asked once. */
  chainId(): Promise<number>
  /** A viem public client over the same requests, for typed actions off the hot path. */
  viem: PublicClient
}

type RpcResponse = { id: number; result?: unknown; error?: { code: number; message: string; data?: unknown } }

/**
 * A JSON-RPC client for one node: no retries of its own (callers retry by error class, see
 * {@link classifyRpcError}) and no response size limit (a 1000-block `eth_getLogs` can be ~50 MB).
 *
 * @example
 * const client = createRpcClient({ url: 'http://127.0.0.1:8545', logger })
 * const head = await client.request<Hex>('eth_blockNumber')
 * const txs = await client.batch(hashes.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })))
 */
export function createRpcClient({ url, timeoutMs = DEFAULT_TIMEOUT_MS, logger = silentLogger, onRequest }: CreateRpcClientParameters): RpcClient {
  const http = getHttpRpcClient(url, { timeout: timeoutMs, maxResponseBodySize: false })

  /** `methods`: the request's calls counted by method; a mixed batch reports each method's share. */
  async function send<R>(methods: ReadonlyMap<string, number>, exchange: () => Promise<R>): Promise<R> {
    const started = performance.now()
    const report = (event: Omit<RpcRequestEvent, 'method' | 'calls'>) => {
      for (const [method, calls] of methods) onRequest?.({ method, calls, ...event })
    }
    try {
      const result = await exchange()
      report({ ok: true, durationMs: performance.now() - started })
      return result
    } catch (error) {
      const durationMs = performance.now() - started
      const action = classifyRpcError(error)
      logger.debug({ method: [...methods.keys()].join(','), calls: [...methods.values()].reduce((a, b) => a + b, 0), duration_ms: Math.round(durationMs), error_kind: action.kind, error_pattern: action.pattern }, 'rpc request failed')
      report({ ok: false, errorKind: action.kind, durationMs })
      throw error
    }
  }

  function toError(body: { method: string; params: readonly unknown[] }, error: NonNullable<RpcResponse['error']>) {
    return new RpcRequestError({ body, error, url })
  }

  async function request<T>(method: string, params: readonly unknown[] = [], options: RpcRequestOptions = {}): Promise<T> {
    const body = { method, params }
    return send(new Map([[method, 1]]), async () => {
      const response = (await http.request({
        body,
        fetchOptions: options.signal ? { signal: options.signal } : undefined,
        timeout: options.timeoutMs,
      })) as RpcResponse
      if (response.error) throw toError(body, response.error)
      return response.result as T
    })
  }

  async function batch<T>(calls: readonly RpcCall[], options: RpcRequestOptions = {}): Promise<T[]> {
    if (calls.length === 0) return []
    const body = calls.map((call, id) => ({ id, method: call.method, params: call.params ?? [] }))
    const methods = new Map<string, number>()
    for (const call of calls) methods.set(call.method, (methods.get(call.method) ?? 0) + 1)
    return send(methods, async () => {
      const responses = (await http.request({
        body,
        fetchOptions: options.signal ? { signal: options.signal } : undefined,
        timeout: options.timeoutMs,
      })) as RpcResponse[]
      // Batch answers may come in any order; a node that rejects the whole batch answers once.
      const byId = new Map(responses.map((response) => [response.id, response]))
      return body.map((call) => {
        const response = byId.get(call.id) ?? responses.find((r) => r.error)
        if (!response) throw new Error(`batch response has no answer for call ${call.id} (${call.method})`)
        if (response.error) throw toError(call, response.error)
        return response.result as T
      })
    })
  }

  let chainId: Promise<number> | undefined
  function getChainId(): Promise<number> {
    chainId ??= request<string>('eth_chainId').then(Number, (error: unknown) => {
      chainId = undefined
      throw error
    })
    return chainId
  }

  const viem = createPublicClient({
    transport: custom({ request: ({ method, params }: { method: string; params?: unknown[] }) => request(method, params) }, { retryCount: 0 }),
  })

  return { url, logger, request, batch, chainId: getChainId, viem }
}
