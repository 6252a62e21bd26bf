import { isAscii } from 'node:buffer'
import http from 'node:http'
import https from 'node:https'
import { HttpRequestError, ResponseBodyTooLargeError, RpcRequestError, TimeoutError } from 'viem'
import { silentLogger, type Logger } from '../internal/logger.js'
import { createRedactor, redactUrl, secretsOfUrl } from '../utils/redact.js'
import { classifyRpcError, type RpcErrorActionKind } from './errors.js'
import { DEFAULT_MAX_RESPONSE_BYTES } from '../config/limits.js'

/** Long enough for a 1000-block `eth_getLogs` of ~50 MB from a busy provider. */
const DEFAULT_TIMEOUT_MS = 30_000
/** Providers refuse batches above roughly 100–1,000 calls; `RPC_BATCH_SIZE` sets it. */
const DEFAULT_BATCH_SIZE = 100

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
  /** Most calls in one JSON-RPC batch; larger batches are sent as several in turn. @default 100 */
  batchSize?: number
  /** A larger answer is cut off, unread, as viem's `ResponseBodyTooLargeError`. @default DEFAULT_MAX_RESPONSE_BYTES */
  maxResponseBytes?: number
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
   * Many calls in JSON-RPC batches of at most `batchSize` calls, one HTTP request each, sent in turn;
   * results in call order. Rejects with the first failed call's error, so the caller retries the batch
   * as a whole.
   */
  batch<T = unknown>(calls: readonly RpcCall[], options?: RpcRequestOptions): Promise<T[]>
}

type RpcResponse = { id: number; result?: unknown; error?: { code: number; message: string; data?: unknown } }
type RpcBody = { jsonrpc: '2.0'; id: number; method: string; params: readonly unknown[] }

const isRpcError = (data: unknown): data is { error: NonNullable<RpcResponse['error']> } => {
  const error = (data as { error?: { code?: unknown; message?: unknown } } | null)?.error
  return typeof error?.code === 'number' && typeof error.message === 'string'
}

/** How errors show the node: its URL without keys, and a mask for the keys in what it echoes. */
type Shown = { url: string; redact: (text: string) => string }

/**
 * JSON-RPC over HTTP with `node:http` and a keep-alive agent. viem's HTTP client rides on `fetch`,
 * whose web streams and text decoding cost twice the CPU per transaction batch (harness/bench/README.md); its
 * errors are kept: a non-2xx answer is an `RpcRequestError` (a JSON-RPC error body) or an
 * `HttpRequestError` with the status and headers, a network failure an `HttpRequestError` with the
 * cause, a stalled request a `TimeoutError`; an aborted one rejects with the signal's reason. The
 * errors name the node by scheme, host and port only, and what the node echoed has the URL's keys masked.
 */
function createHttpExchange(endpointUrl: string, defaultTimeoutMs: number, maxResponseBytes: number, { url, redact }: Shown) {
  const endpoint = new URL(endpointUrl)
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  // Credentials in the URL become basic authentication, as viem sends them.
  if (endpoint.username) {
    const credentials = `${decodeURIComponent(endpoint.username)}:${decodeURIComponent(endpoint.password)}`
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`
    endpoint.username = ''
    endpoint.password = ''
  }
  const transport = endpoint.protocol === 'https:' ? https : http
  const agent = new transport.Agent({ keepAlive: true })

  /** The parsed answer, or the error viem would throw for it. */
  function answer(body: RpcBody | RpcBody[], response: http.IncomingMessage, text: string): unknown {
    const status = response.statusCode ?? 0
    const ok = status >= 200 && status < 300
    let data: unknown
    try {
      data = JSON.parse(text || '{}')
    } catch (error) {
      if (ok) throw new HttpRequestError({ body, cause: error as Error, url })
      data = { error: redact(text) }
    }
    if (ok) return data
    const responseHeaders = new Headers()
    for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) responseHeaders.set(name, String(value))
    // A node that rejects a whole batch answers once, bare or in a one-element array.
    const error = Array.isArray(body) && Array.isArray(data) && data.length === 1 ? data[0] : data
    if (isRpcError(error))
      throw new RpcRequestError({
        body,
        error: { ...error.error, message: redact(error.error.message) },
        headers: responseHeaders,
        status,
        url,
      })
    throw new HttpRequestError({
      body,
      details: redact(JSON.stringify((data as { error?: unknown }).error) ?? '') || response.statusMessage,
      headers: responseHeaders,
      status,
      url,
    })
  }

  return function exchange(body: RpcBody | RpcBody[], { signal, timeoutMs = defaultTimeoutMs }: RpcRequestOptions): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const payload = JSON.stringify(body)
      let timer: NodeJS.Timeout | undefined
      const onAbort = () => fail(() => signal!.reason)
      /** Settles once; a request that did not end well gives up its socket. */
      const settle = (outcome: () => void, failed: boolean) => {
        if (!request) return
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (failed) request.destroy()
        request = undefined
        outcome()
      }
      // The error is made only when it is the outcome: viem's errors format the whole request body.
      const fail = (error: () => unknown) => settle(() => reject(error()), true)
      let request: http.ClientRequest | undefined = transport.request(
        endpoint,
        { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(payload) } },
        (response) => {
          const chunks: Buffer[] = []
          let received = 0
          // RPC_MAX_RESPONSE_BYTES: what is beyond it is not read; a log range asked for is then split (the `halve` action).
          const declared = Number(response.headers['content-length'] ?? 0)
          const tooLarge = () => new ResponseBodyTooLargeError({ maxSize: maxResponseBytes, size: Math.max(declared, received) })
          if (declared > maxResponseBytes) return fail(tooLarge)
          response.on('data', (chunk: Buffer) => {
            received += chunk.length
            if (received > maxResponseBytes) return fail(tooLarge)
            chunks.push(chunk)
          })
          response.on('end', () =>
            settle(() => {
              try {
                const bytes = Buffer.concat(chunks)
                // Nodes answer in ASCII (hex): read as Latin-1 it needs no UTF-8 decoding, at half the cost.
                resolve(answer(body, response, isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8')))
              } catch (error) {
                reject(error)
              }
            }, false),
          )
          response.on('error', (error) => fail(() => new HttpRequestError({ body, cause: error, url })))
          response.on('close', () =>
            fail(() => new HttpRequestError({ body, details: 'the connection closed before the answer was complete', url })),
          )
        },
      )
      request.on('error', (error) => fail(() => new HttpRequestError({ body, cause: error, url })))
      if (timeoutMs > 0) timer = setTimeout(() => fail(() => new TimeoutError({ body, url })), timeoutMs)
      signal?.addEventListener('abort', onAbort, { once: true })
      request.end(payload)
    })
  }
}

/**
 * A JSON-RPC client for one node: no retries of its own (callers retry by error class, see
 * {@link classifyRpcError}); answers above `maxResponseBytes` are cut off (a 1000-block `eth_getLogs` can be ~50 MB).
 * It moves raw answers: the typed, checked node calls are the actions in `./actions/`, which take it.
 *
 * @example
 * const client = createRpcClient({ url: 'http://127.0.0.1:8545', logger })
 * const head = await getBlockNumber(client)
 * const transactions = await getTransactions(client, hashes)
 */
export function createRpcClient({
  url,
  timeoutMs = DEFAULT_TIMEOUT_MS,
  batchSize = DEFAULT_BATCH_SIZE,
  maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES,
  logger = silentLogger,
  onRequest,
}: CreateRpcClientParameters): RpcClient {
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, not ${batchSize}`)
  const shown: Shown = { url: redactUrl(url), redact: createRedactor(secretsOfUrl(url)) }
  const post = createHttpExchange(url, timeoutMs, maxResponseBytes, shown)
  let nextId = 0

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
      logger.debug(
        {
          method: [...methods.keys()].join(','),
          calls: [...methods.values()].reduce((a, b) => a + b, 0),
          duration_ms: Math.round(durationMs),
          error_kind: action.kind,
          error_pattern: action.pattern,
        },
        'rpc request failed',
      )
      report({ ok: false, errorKind: action.kind, durationMs })
      throw error
    }
  }

  function toError(body: { method: string; params: readonly unknown[] }, error: NonNullable<RpcResponse['error']>) {
    return new RpcRequestError({ body, error: { ...error, message: shown.redact(error.message) }, url: shown.url })
  }

  async function request<T>(method: string, params: readonly unknown[] = [], options: RpcRequestOptions = {}): Promise<T> {
    const body: RpcBody = { jsonrpc: '2.0', id: nextId++, method, params }
    return send(new Map([[method, 1]]), async () => {
      const response = (await post(body, options)) as RpcResponse
      if (response.error) throw toError(body, response.error)
      return response.result as T
    })
  }

  async function batch<T>(calls: readonly RpcCall[], options: RpcRequestOptions = {}): Promise<T[]> {
    const results: T[] = []
    for (let start = 0; start < calls.length; start += batchSize)
      results.push(...(await batchOf<T>(calls.slice(start, start + batchSize), options)))
    return results
  }

  /** One JSON-RPC batch, one HTTP request. */
  async function batchOf<T>(calls: readonly RpcCall[], options: RpcRequestOptions): Promise<T[]> {
    const body = calls.map((call, id): RpcBody => ({ jsonrpc: '2.0', id, method: call.method, params: call.params ?? [] }))
    const methods = new Map<string, number>()
    for (const call of calls) methods.set(call.method, (methods.get(call.method) ?? 0) + 1)
    return send(methods, async () => {
      const answer = (await post(body, options)) as RpcResponse[] | RpcResponse
      // Batch answers may come in any order; a node that rejects the whole batch answers once, maybe bare.
      const responses = Array.isArray(answer) ? answer : [answer]
      const byId = new Map(responses.map((response) => [response.id, response]))
      return body.map((call) => {
        const response = byId.get(call.id) ?? responses.find((r) => r.error)
        if (!response) throw new Error(`batch response has no answer for call ${call.id} (${call.method})`)
        if (response.error) throw toError(call, response.error)
        return response.result as T
      })
    })
  }

  return { url, logger, request, batch }
}
