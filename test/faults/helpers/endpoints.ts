/**
 * Endpoints as providers run them, in front of anvil: a load balancer over several nodes, a node that
 * lags behind another, an edge that fails a share of HTTP requests, and a gate that makes the node
 * unreachable (connections refused) for a while.
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, connect, type AddressInfo, type Server, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { seededRandom } from './faultChain.js'

type Call = { jsonrpc?: string; id?: unknown; method: string; params?: unknown[] }
type Answer = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } }
type Block = { number: string } & Record<string, unknown>

export type JsonRpcServer = { url: string; stop: () => Promise<void> }

async function readBody(stream: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function createPoster(upstream: string) {
  const url = new URL(upstream)
  const agent = new Agent({ keepAlive: true })
  return {
    post(body: string): Promise<{ status: number; text: string }> {
      return new Promise((resolve, reject) => {
        const req = httpRequest(
          url,
          { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => readBody(res).then((text) => resolve({ status: res.statusCode ?? 502, text }), reject),
        )
        req.on('error', reject)
        req.end(body)
      })
    },
    close: () => agent.destroy(),
  }
}

async function listen(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return res.destroy()
      res.writeHead(502, { 'content-type': 'text/plain' })
      res.end(`upstream failed: ${String(error)}`)
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

export type LoadBalancer = JsonRpcServer & {
  /** HTTP requests sent to each upstream, in `upstreams` order. */
  requests: number[]
}

/**
 * Forwards each HTTP request (a single call or a whole batch) to one upstream picked at random (seeded),
 * as a balancer spreading load does: a client's consecutive requests may reach different nodes.
 */
export async function startLoadBalancer(upstreams: readonly string[], { seed = 1 }: { seed?: number } = {}): Promise<LoadBalancer> {
  const posters = upstreams.map(createPoster)
  const requests = upstreams.map(() => 0)
  const random = seededRandom(seed)
  const server = await listen(async (req, res) => {
    const body = await readBody(req)
    const index = Math.floor(random() * posters.length)
    requests[index]!++
    const { status, text } = await posters[index]!.post(body)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  })
  return {
    url: server.url,
    requests,
    stop: async () => {
      await server.stop()
      for (const poster of posters) poster.close()
    },
  }
}

export type LaggingNode = JsonRpcServer & {
  /** Sets how many blocks it is behind from now on (0: caught up). */
  setLag: (blocks: number) => void
  /** `eth_getLogs` calls answered for a range reaching above this node's head (answered only up to its head, or `[]`). */
  logsBeyondHead: number
  /** Calls answered `null` because what they asked for is above this node's head. */
  nullsBeyondHead: number
}

const hex = (n: number) => `0x${n.toString(16)}`
const isNumber = (tag: unknown): tag is string => typeof tag === 'string' && /^0x[0-9a-f]+$/i.test(tag)

/**
 * A node that is `lagBlocks` behind `upstream` (same chain, fewer blocks): its head, `latest`, blocks,
 * transactions and receipts stop there. Like nodes that answer a range past their head without an
 * error, `eth_getLogs` returns the logs up to its head only, and `[]` for a range wholly above it.
 */
export async function startLaggingNode({ upstream, lagBlocks }: { upstream: string; lagBlocks: number }): Promise<LaggingNode> {
  let lag = lagBlocks
  const poster = createPoster(upstream)
  let id = 0
  async function call<T>(method: string, params: unknown[]): Promise<T> {
    const { text } = await poster.post(JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }))
    const answer = JSON.parse(text) as Answer
    if (answer.error) throw new Error(`${method}: ${answer.error.message}`)
    return answer.result as T
  }
  const counters = { logsBeyondHead: 0, nullsBeyondHead: 0 }

  async function answer(request: Call, head: number): Promise<Answer> {
    const params = request.params ?? []
    const reply = (result: unknown): Answer => ({ jsonrpc: '2.0', id: request.id, result })
    const beyond = (): Answer => {
      counters.nullsBeyondHead++
      return reply(null)
    }
    const forward = async (): Promise<Answer> => {
      const { text } = await poster.post(JSON.stringify({ ...request, jsonrpc: '2.0' }))
      return JSON.parse(text) as Answer
    }
    switch (request.method) {
      case 'eth_blockNumber':
        return reply(hex(head))
      case 'eth_getBlockByNumber': {
        const [tag, full] = params
        if (tag === 'latest' || tag === 'pending') return reply(await call('eth_getBlockByNumber', [hex(head), full]))
        if (isNumber(tag) && Number(tag) > head) return beyond()
        const answered = await forward()
        const block = answered.result as Block | null
        // A tag such as `safe` resolves against this node's shorter chain.
        if (block && Number(block.number) > head) return reply(await call('eth_getBlockByNumber', [hex(head), full]))
        return answered
      }
      case 'eth_getBlockByHash':
      case 'eth_getTransactionByHash':
      case 'eth_getTransactionReceipt': {
        const answered = await forward()
        const found = answered.result as { number?: string; blockNumber?: string } | null
        const at = found?.blockNumber ?? found?.number
        return at !== undefined && at !== null && Number(at) > head ? beyond() : answered
      }
      case 'eth_getBlockReceipts': {
        const answered = await forward()
        const receipts = answered.result as { blockNumber: string }[] | null
        return receipts?.length && Number(receipts[0]!.blockNumber) > head ? beyond() : answered
      }
      case 'eth_getLogs': {
        const filter = (params[0] ?? {}) as { fromBlock?: string; toBlock?: string; blockHash?: string }
        if (filter.blockHash !== undefined || filter.fromBlock === 'pending') return forward()
        const resolve = (tag: string | undefined) => (isNumber(tag) ? Number(tag) : head)
        const from = resolve(filter.fromBlock)
        const to = resolve(filter.toBlock)
        if (to <= head) return forward()
        counters.logsBeyondHead++
        if (from > head) return reply([])
        return { ...(await forwardLogs({ ...filter, toBlock: hex(head) })), id: request.id }
      }
      default:
        return forward()
    }
  }

  async function forwardLogs(filter: Record<string, unknown>): Promise<Answer> {
    const { text } = await poster.post(JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'eth_getLogs', params: [filter] }))
    return JSON.parse(text) as Answer
  }

  const server = await listen(async (req, res) => {
    const payload = JSON.parse(await readBody(req)) as Call | Call[]
    const head = Math.max(0, Number(await call<string>('eth_blockNumber', [])) - lag)
    const answers = await Promise.all((Array.isArray(payload) ? payload : [payload]).map((request) => answer(request, head)))
    const text = JSON.stringify(Array.isArray(payload) ? answers : answers[0])
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  })
  return {
    url: server.url,
    setLag: (blocks) => (lag = blocks),
    get logsBeyondHead() {
      return counters.logsBeyondHead
    },
    get nullsBeyondHead() {
      return counters.nullsBeyondHead
    },
    stop: async () => {
      await server.stop()
      poster.close()
    },
  }
}

export type EdgeFaults = {
  /** Share of HTTP requests answered 429 Too Many Requests. */
  rateLimit?: number
  /** Share of HTTP requests answered 200 with the upstream's JSON cut in half. */
  malformed?: number
  /** Share of HTTP requests answered only after `delayMs` (set it beyond the client's timeout). */
  slow?: { probability: number; delayMs: number }
}

export type FlakyEdge = JsonRpcServer & {
  /** HTTP requests received. */
  requests: () => number
  /** Faults injected, by kind. */
  injected: Record<keyof EdgeFaults, number>
}

/**
 * A provider's edge that fails a share of whole HTTP requests, a batch counting once (the fault proxy
 * of `harness/fixtures` draws per JSON-RPC call, so a batch of 30 calls meets a 10 % fault 96 % of the time).
 */
export async function startFlakyEdge({
  upstream,
  faults,
  seed = 1,
}: {
  upstream: string
  faults: EdgeFaults
  seed?: number
}): Promise<FlakyEdge> {
  const poster = createPoster(upstream)
  const random = seededRandom(seed)
  const injected: FlakyEdge['injected'] = { rateLimit: 0, malformed: 0, slow: 0 }
  const closing = new AbortController()
  let requests = 0
  const server = await listen(async (req, res) => {
    const body = await readBody(req)
    requests++
    const draw = random()
    const rateLimit = faults.rateLimit ?? 0
    const malformed = faults.malformed ?? 0
    const slow = faults.slow?.probability ?? 0
    if (draw < rateLimit) {
      injected.rateLimit++
      res.writeHead(429, { 'content-type': 'text/plain' })
      return void res.end('Too Many Requests')
    }
    if (draw >= rateLimit + malformed && draw < rateLimit + malformed + slow) {
      injected.slow++
      const gone = new AbortController()
      res.once('close', () => gone.abort())
      await sleep(faults.slow!.delayMs, undefined, { signal: AbortSignal.any([gone.signal, closing.signal]) }).catch(() => undefined)
      if (res.destroyed || closing.signal.aborted) return
    }
    const { status, text } = await poster.post(body)
    const cut = draw >= rateLimit && draw < rateLimit + malformed
    if (cut) injected.malformed++
    const answer = cut ? text.slice(0, Math.floor(text.length / 2)) : text
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) })
    res.end(answer)
  })
  return {
    url: server.url,
    requests: () => requests,
    injected,
    stop: async () => {
      closing.abort()
      await server.stop()
      poster.close()
    },
  }
}

export type NodeGate = {
  url: string
  /** Closes the port and cuts open connections: the node is unreachable (connection refused). */
  cut: () => Promise<void>
  /** Listens on the same port again. */
  restore: () => Promise<void>
  stop: () => Promise<void>
}

/** A TCP pass-through to `upstream` (host:port of an HTTP node) on a port of its own, which can be cut. */
export async function startNodeGate(upstream: string): Promise<NodeGate> {
  const target = new URL(upstream)
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0

  async function open() {
    const listening = createTcpServer((client) => {
      const node = connect(Number(target.port), target.hostname)
      sockets.add(client).add(node)
      const drop = () => {
        client.destroy()
        node.destroy()
        sockets.delete(client)
        sockets.delete(node)
      }
      client.on('error', drop).on('close', drop)
      node.on('error', drop).on('close', drop)
      client.pipe(node).pipe(client)
    })
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject)
      listening.listen(port, '127.0.0.1', resolve)
    })
    port = (listening.address() as AddressInfo).port
    server = listening
  }

  async function close() {
    const closing = server
    server = undefined
    for (const socket of sockets) socket.destroy()
    sockets.clear()
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()))
  }

  await open()
  return { url: `http://127.0.0.1:${port}`, cut: close, restore: open, stop: close }
}
