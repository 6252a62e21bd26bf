import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Hex } from 'viem'
import { WebSocketServer, type WebSocket } from 'ws'
import type { Logger } from '../../src/internal/logger.js'
import { STAMPED_METHODS, type DenimChain, type Replacement } from './denim.js'
import type { HeadBlock, PendingState } from './pendingState.js'
import { matchesFilter, mergeCanonicalAndPending, shuffled, takeNewLogs, type LogFilter, type PreconfLog } from './preconf.js'
import {
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  PARSE_ERROR,
  toJsonRpcError,
  UpstreamError,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type UpstreamClient,
} from './rpc.js'

/** The devnet's own method: `anvil_dropTransaction` through the pre-confirmed layer. */
export const DROP_TRANSACTION_METHOD = 'devnet_dropTransaction'

/** Proxied methods that change the chain or the pool: they invalidate the pending simulation. */
const CHAIN_CHANGING_METHODS = new Set([
  'evm_mine',
  'anvil_mine',
  'anvil_reorg',
  'anvil_rollback',
  'evm_revert',
  'anvil_reset',
  'anvil_loadState',
  'anvil_dropTransaction',
  'anvil_dropAllTransactions',
  'anvil_removePoolTransactions',
])

/**
 * Reads that must not see the blocks anvil sealed above the node's canonical head when the canonical chain
 * lags: those blocks are pending (zero hash, no receipt) until the node has them.
 */
const CANONICAL_READS = new Set([
  'eth_blockNumber',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getLogs',
  'eth_getTransactionByHash',
  'eth_getTransactionReceipt',
])

/** Transaction submissions: on the `base` profile none may straddle a mine, so the queued deposits lead each block. */
const SUBMISSIONS = new Set(['eth_sendRawTransaction', 'eth_sendTransaction'])

/** Answered by the `base` layer for its deposits: anvil 1.7 panics encoding a mined deposit transaction. */
const RAW_TRANSACTION_METHOD = 'eth_getRawTransactionByHash'

/** geth's answer for a block hash it does not have. */
const UNKNOWN_BLOCK = { code: -32000, message: 'unknown block' }

/** A subscriber this far behind misses deltas, as on a Base node. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024

type LogsFilter = LogFilter & { fromBlock?: string; toBlock?: string; blockHash?: Hex }

type Subscription = { socket: WebSocket; kind: 'pendingLogs'; filter: LogFilter } | { socket: WebSocket; kind: 'newHeads' }

export type DevnetServerParameters = {
  upstream: UpstreamClient
  /** The pre-confirmed state (`op` profile). */
  pending?: PendingState
  /** The Denim chain (`base` profile): `pending` reads as `latest`, answers carry milliseconds. */
  denim?: DenimChain
  logger: Logger
  /** Omitted: a free port. */
  port?: number
  /** Answer pending logs in no particular order, as older Base builds do. */
  shuffle?: boolean
  /** The canonical chain lags anvil's head (the pending state's `canonicalLag` > 0): canonical reads are clamped. */
  lagging?: boolean
}

/** What clients asked of the endpoint: HTTP requests and WebSocket messages, and JSON-RPC calls by method. */
export type DevnetCalls = { requests: number; calls: Record<string, number> }

export type DevnetServer = {
  url: string
  wsUrl: string
  port: number
  calls: () => DevnetCalls
  close: () => Promise<void>
}

const isRequest = (value: unknown): value is JsonRpcRequest =>
  typeof value === 'object' && value !== null && typeof (value as { method?: unknown }).method === 'string'

const pendingLogsFilter = (request: JsonRpcRequest): LogsFilter | undefined => {
  if (request.method !== 'eth_getLogs' || !Array.isArray(request.params)) return undefined
  const filter = request.params[0] as LogsFilter | undefined
  return filter && typeof filter === 'object' && filter.toBlock === 'pending' ? filter : undefined
}

const hex = (n: bigint): Hex => `0x${n.toString(16)}`

/** The params of a call with `pending` read as `latest`, as a node that pre-confirms nothing answers. */
const pendingAsLatest = (method: string, params: unknown[]): unknown[] => {
  if (method === 'eth_getBlockByNumber' && params[0] === 'pending') return ['latest', ...params.slice(1)]
  const filter = params[0] as LogsFilter | undefined
  if (method !== 'eth_getLogs' || !filter || typeof filter !== 'object') return params
  if (filter.fromBlock !== 'pending' && filter.toBlock !== 'pending') return params
  const tag = (block: string | undefined) => (block === 'pending' ? 'latest' : block)
  return [{ ...filter, fromBlock: tag(filter.fromBlock), toBlock: tag(filter.toBlock) }, ...params.slice(1)]
}

/** `anvil_reorg`'s replacement list (`[[transaction, blockOffset], …]`) as the devnet takes it. */
const replacementsOf = (value: unknown): Replacement[] =>
  Array.isArray(value)
    ? value.map((pair) => ({ transaction: (pair as [Replacement['transaction'], number])[0], blockOffset: Number((pair as unknown[])[1]) }))
    : []

const errorResponse = (id: JsonRpcId, code: number, message: string): JsonRpcResponse => ({
  jsonrpc: '2.0',
  id,
  error: { code, message },
})

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * The devnet's JSON-RPC endpoint (HTTP and WebSocket on one port). `op`: pending `eth_getLogs` from the
 * simulation, `eth_subscribe` for `pendingLogs` and `newHeads`. `base`: `pending` read as `latest`, answers
 * stamped with milliseconds, `newHeads` only. Every other call is proxied to anvil verbatim.
 */
export async function startDevnetServer(parameters: DevnetServerParameters): Promise<DevnetServer> {
  const { upstream, pending, denim, logger } = parameters
  if (!pending === !denim) throw new Error('the devnet server serves either pre-confirmed state (op) or a Denim chain (base)')
  const counted: DevnetCalls = { requests: 0, calls: {} }
  const count = (requests: unknown[]) => {
    counted.requests++
    for (const request of requests) if (isRequest(request)) counted.calls[request.method] = (counted.calls[request.method] ?? 0) + 1
  }
  const subscriptions = new Map<string, Subscription>()
  // Keys of the pending logs already published, pruned as their blocks become canonical.
  const notified = new Set<string>()

  const isIntercepted = (value: unknown): boolean =>
    isRequest(value) &&
    (pendingLogsFilter(value) !== undefined ||
      value.method === DROP_TRANSACTION_METHOD ||
      CHAIN_CHANGING_METHODS.has(value.method) ||
      (parameters.lagging === true && CANONICAL_READS.has(value.method)))

  /** A block parameter as a number at the node, whose head is `latest`; `pending` reads as `latest`, as on a node without pending state. */
  const resolveBlock = async (block: unknown, latest: bigint): Promise<bigint> => {
    if (typeof block === 'string' && block.startsWith('0x')) return BigInt(block)
    if (block === 'earliest') return 0n
    if (block === 'safe' || block === 'finalized') {
      const tagged = await upstream.call<{ number: Hex } | null>('eth_getBlockByNumber', [block, false])
      return tagged && BigInt(tagged.number) < latest ? BigInt(tagged.number) : latest
    }
    return latest
  }

  const getPendingLogs = async (filter: LogsFilter): Promise<unknown[]> => {
    const snapshot = await pending!.snapshot()
    const from = filter.fromBlock === 'pending' ? snapshot.latest + 1n : await resolveBlock(filter.fromBlock, snapshot.latest)
    const pendingLogs = snapshot.logs.filter((log) => BigInt(log.blockNumber) >= from && matchesFilter(log, filter))
    const historical =
      from <= snapshot.latest
        ? await upstream.call<PreconfLog[]>('eth_getLogs', [{ ...filter, fromBlock: hex(from), toBlock: hex(snapshot.latest) }])
        : []
    const logs = mergeCanonicalAndPending(historical, pendingLogs)
    return parameters.shuffle ? shuffled(logs) : logs
  }

  /** A read of canonical data as the node answers it while its canonical head is `latest`, below anvil's. */
  const canonicalRead = async (method: string, params: unknown[]): Promise<unknown> => {
    const { latest } = await pending!.snapshot()
    const sealedAbove = (block: { blockNumber?: Hex | null; number?: Hex | null } | null) => {
      const number = block?.blockNumber ?? block?.number
      return typeof number === 'string' && BigInt(number) > latest
    }
    switch (method) {
      case 'eth_blockNumber':
        return hex(latest)
      case 'eth_getBlockByNumber': {
        if (params[0] === 'pending') return upstream.call(method, params)
        const number = await resolveBlock(params[0], latest)
        return number > latest ? null : upstream.call(method, [hex(number), ...params.slice(1)])
      }
      case 'eth_getBlockByHash':
      case 'eth_getTransactionReceipt': {
        const answer = await upstream.call<{ number?: Hex; blockNumber?: Hex } | null>(method, params)
        return sealedAbove(answer) ? null : answer
      }
      case 'eth_getTransactionByHash': {
        // A pre-confirmed transaction: known, but with no block hash yet.
        const answer = await upstream.call<{ blockNumber: Hex | null } | null>(method, params)
        return sealedAbove(answer) ? { ...answer, blockHash: null } : answer
      }
      default: {
        const filter = (params[0] ?? {}) as LogsFilter
        if (filter.blockHash) {
          const block = await upstream.call<{ number: Hex } | null>('eth_getBlockByHash', [filter.blockHash, false])
          if (!block || sealedAbove(block)) throw new UpstreamError(UNKNOWN_BLOCK)
          return upstream.call(method, params)
        }
        const from = await resolveBlock(filter.fromBlock ?? 'latest', latest)
        const to = await resolveBlock(filter.toBlock ?? 'latest', latest)
        // biome-ignore lint/complexity/useMathMinMax: bigint operands
        const clamped = to < latest ? to : latest
        return from > clamped ? [] : upstream.call(method, [{ ...filter, fromBlock: hex(from), toBlock: hex(clamped) }])
      }
    }
  }

  /** A call on the `base` profile: chain changes through the Denim chain, stamped reads, gated submissions. */
  const executeDenim = async (chain: DenimChain, method: string, params: unknown[]): Promise<unknown> => {
    if (method === 'evm_mine') return chain.mine().then(() => '0x0')
    if (method === 'anvil_mine') {
      for (let n = params[0] === undefined ? 1 : Number(params[0]); n > 0; n--) await chain.mine()
      return null
    }
    if (method === 'anvil_reorg') return chain.reorg(Number(params[0]), replacementsOf(params[1])).then(() => null)
    if (method === RAW_TRANSACTION_METHOD) return chain.rawDeposit(String(params[0]) as Hex) ?? upstream.call(method, params)
    if (method === DROP_TRANSACTION_METHOD) return chain.changeChain(() => upstream.call('anvil_dropTransaction', params))
    if (CHAIN_CHANGING_METHODS.has(method)) return chain.changeChain(() => upstream.call(method, params))
    if (STAMPED_METHODS.has(method)) return chain.decorate(method, await upstream.call(method, pendingAsLatest(method, params)))
    if (SUBMISSIONS.has(method)) return chain.submit(() => upstream.call(method, params))
    return upstream.call(method, params)
  }

  const execute = async (request: JsonRpcRequest): Promise<unknown> => {
    const params = Array.isArray(request.params) ? request.params : []
    if (denim) return executeDenim(denim, request.method, params)
    const filter = pendingLogsFilter(request)
    if (filter) return getPendingLogs(filter)
    if (parameters.lagging && CANONICAL_READS.has(request.method)) return canonicalRead(request.method, params)
    if (request.method === DROP_TRANSACTION_METHOD) {
      return pending!.changeChain(() => upstream.call('anvil_dropTransaction', params))
    }
    if (CHAIN_CHANGING_METHODS.has(request.method)) {
      return pending!.changeChain(() => upstream.call(request.method, params))
    }
    return upstream.call(request.method, params)
  }

  const handle = async (request: unknown): Promise<JsonRpcResponse> => {
    if (!isRequest(request)) return errorResponse(null, INVALID_REQUEST, 'Invalid request')
    const id = request.id ?? null
    try {
      return { jsonrpc: '2.0', id, result: await execute(request) }
    } catch (error) {
      if (!(error instanceof UpstreamError)) logger.warn({ err: error, method: request.method }, 'devnet call failed')
      return { jsonrpc: '2.0', id, error: toJsonRpcError(error) }
    }
  }

  const respond = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }

  const proxy = async (body: string, parsed: unknown, res: ServerResponse) => {
    try {
      const answer = await upstream.send(body)
      res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json' })
      answer.pipe(res)
      answer.once('error', () => res.destroy())
    } catch (error) {
      const rpcError = toJsonRpcError(error)
      const answerFor = (request: unknown) => ({ jsonrpc: '2.0', id: isRequest(request) ? (request.id ?? null) : null, error: rpcError })
      respond(res, 200, Array.isArray(parsed) ? parsed.map(answerFor) : answerFor(parsed))
    }
  }

  const serveDenim = async (chain: DenimChain, body: string, parsed: unknown, res: ServerResponse) => {
    const batch = Array.isArray(parsed) ? parsed : undefined
    const requests = (batch ?? [parsed]).filter(isRequest)
    const has = (methods: Set<string>) => requests.some((request) => methods.has(request.method))
    const own = (method: string) =>
      method === DROP_TRANSACTION_METHOD || method === RAW_TRANSACTION_METHOD || CHAIN_CHANGING_METHODS.has(method)
    if (requests.some((request) => own(request.method))) {
      if (!batch) return respond(res, 200, await handle(parsed))
      const answers = await Promise.all(batch.map(handle))
      return respond(
        res,
        200,
        answers.filter((_, i) => !isRequest(batch[i]) || batch[i].id !== undefined),
      )
    }
    const forward = async () => {
      // Plain traffic is piped to anvil untouched; answers with blocks, transactions or logs get their milliseconds.
      if (!has(STAMPED_METHODS)) return proxy(body, parsed, res)
      const methods = new Map(requests.map((request) => [request.id ?? null, request.method]))
      const rewritten = (batch ?? [parsed]).map((request) =>
        isRequest(request) && Array.isArray(request.params)
          ? { ...request, params: pendingAsLatest(request.method, request.params) }
          : request,
      )
      let answer: unknown
      try {
        answer = await upstream.exchange(JSON.stringify(batch ? rewritten : rewritten[0]))
      } catch (error) {
        const rpcError = toJsonRpcError(error)
        const answerFor = (request: JsonRpcRequest | undefined) => ({ jsonrpc: '2.0', id: request?.id ?? null, error: rpcError })
        return respond(res, 200, batch ? requests.map(answerFor) : answerFor(requests[0]))
      }
      const stamp = async (response: unknown) => {
        const r = response as { id?: JsonRpcId; result?: unknown } | null
        const method = r && 'result' in r ? methods.get(r.id ?? null) : undefined
        return method && STAMPED_METHODS.has(method) ? { ...r, result: await chain.decorate(method, r!.result) } : response
      }
      respond(res, 200, Array.isArray(answer) ? await Promise.all(answer.map(stamp)) : await stamp(answer))
    }
    return has(SUBMISSIONS) ? chain.submit(forward) : forward()
  }

  const serveHttp = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST') return respond(res, 405, errorResponse(null, INVALID_REQUEST, 'JSON-RPC takes POST'))
    const body = await readBody(req)
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch {
      return respond(res, 200, errorResponse(null, PARSE_ERROR, 'Parse error'))
    }
    const batch = Array.isArray(parsed) ? parsed : undefined
    count(batch ?? [parsed])
    if (denim) return serveDenim(denim, body, parsed, res)
    // Plain traffic is piped to anvil untouched: no parse of big historical answers, no added latency.
    if (!(batch ? batch.some(isIntercepted) : isIntercepted(parsed))) return proxy(body, parsed, res)
    if (!batch) return respond(res, 200, await handle(parsed))
    const answers = await Promise.all(batch.map(handle))
    // JSON-RPC notifications (no id) get no answer in a batch, as anvil does.
    respond(
      res,
      200,
      answers.filter((_, i) => !isRequest(batch[i]) || batch[i].id !== undefined),
    )
  }

  const httpServer = createServer((req, res) => {
    serveHttp(req, res).catch((error: unknown) => {
      logger.warn({ err: error }, 'devnet request failed')
      if (!res.headersSent) respond(res, 500, errorResponse(null, INTERNAL_ERROR, 'Internal error'))
      else res.destroy()
    })
  })

  const notify = (id: string, subscription: Subscription, result: unknown) => {
    const { socket } = subscription
    if (socket.readyState !== socket.OPEN || socket.bufferedAmount > MAX_BUFFERED_BYTES) return
    socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: id, result } }))
  }

  pending?.onSnapshot((snapshot) => {
    for (const key of notified) if (BigInt(key.slice(0, key.indexOf(':'))) <= snapshot.latest) notified.delete(key)
    const fresh = takeNewLogs(snapshot.logs, notified)
    for (const [id, subscription] of subscriptions) {
      if (subscription.kind !== 'pendingLogs') continue
      for (const log of fresh) if (matchesFilter(log, subscription.filter)) notify(id, subscription, log)
    }
  })

  const publishHead = (head: HeadBlock) => {
    const { transactions: _transactions, ...header } = head
    for (const [id, subscription] of subscriptions) if (subscription.kind === 'newHeads') notify(id, subscription, header)
  }
  pending?.onHead(publishHead)
  denim?.onHead(publishHead)

  const unsubscribe = (id: string, socket: WebSocket): boolean => {
    if (subscriptions.get(id)?.socket !== socket) return false
    subscriptions.delete(id)
    return true
  }

  const handleSocketRequest = async (request: unknown, socket: WebSocket): Promise<JsonRpcResponse> => {
    if (!isRequest(request)) return handle(request)
    const id = request.id ?? null
    const params = Array.isArray(request.params) ? request.params : []
    if (request.method === 'eth_unsubscribe') {
      return { jsonrpc: '2.0', id, result: unsubscribe(String(params[0]), socket) }
    }
    if (request.method !== 'eth_subscribe') return handle(request)
    const subscriptionId: Hex = `0x${randomBytes(16).toString('hex')}`
    const [kind, filter] = params as [unknown, LogFilter | undefined]
    if (kind === 'pendingLogs') {
      subscriptions.set(subscriptionId, { socket, kind, filter: filter ?? {} })
    } else if (kind === 'newHeads') {
      subscriptions.set(subscriptionId, { socket, kind })
    } else {
      return errorResponse(id, INVALID_PARAMS, `unsupported subscription ${String(kind)}: pendingLogs and newHeads are served`)
    }
    return { jsonrpc: '2.0', id, result: subscriptionId }
  }

  const wsServer = new WebSocketServer({ server: httpServer })
  wsServer.on('connection', (socket) => {
    socket.on('message', (data) => {
      let parsed: unknown
      try {
        parsed = JSON.parse(data.toString())
      } catch {
        socket.send(JSON.stringify(errorResponse(null, PARSE_ERROR, 'Parse error')))
        return
      }
      count(Array.isArray(parsed) ? parsed : [parsed])
      const answer = Array.isArray(parsed)
        ? Promise.all(parsed.map((request) => handleSocketRequest(request, socket)))
        : handleSocketRequest(parsed, socket)
      answer
        .then((response) => socket.readyState === socket.OPEN && socket.send(JSON.stringify(response)))
        .catch((error: unknown) => logger.warn({ err: error }, 'devnet websocket request failed'))
    })
    socket.on('close', () => {
      for (const id of [...subscriptions.keys()]) unsubscribe(id, socket)
    })
    socket.on('error', (error) => logger.debug({ err: error }, 'devnet websocket error'))
  })

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(parameters.port ?? 0, '127.0.0.1', () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
  const { port } = httpServer.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    calls: () => ({ requests: counted.requests, calls: { ...counted.calls } }),
    close: async () => {
      for (const client of wsServer.clients) client.terminate()
      await new Promise<void>((resolve) => wsServer.close(() => resolve()))
      httpServer.closeAllConnections()
      await new Promise<void>((resolve) => httpServer.close(() => resolve()))
    },
  }
}
