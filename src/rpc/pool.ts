import type { Logger } from '../internal/logger.js'
import { redactUrl } from '../utils/redact.js'
import { sleep } from '../utils/loop.js'
import type { RpcCall, RpcClient, RpcRequestOptions } from './client.js'
import { classifyRpcError } from './errors.js'
import { getChainId } from './actions/getChainId.js'

/** An endpoint this many blocks behind the best one is out of rotation until it catches up. */
const DEFAULT_MAX_LAG_BLOCKS = 3
/** How often every endpoint's head is read, to find laggards and bring recovered endpoints back. */
const DEFAULT_PROBE_EVERY_MS = 2_000
/** A failing endpoint rests this long after its first failure, doubling per failure in a row up to the cap. */
const REST_MS = 1_000
const MAX_REST_MS = 30_000
/** The first request waits at most this long for the first look at every endpoint's head. */
const FIRST_PROBE_WAIT_MS = 2_000

export type PoolEndpoint = { url: string; weight: number; maxRequestsPerSecond?: number | undefined }

/** One endpoint as the pool sees it, for logs and the status. */
export type EndpointState = {
  /** Scheme, host and port: never a key. */
  url: string
  weight: number
  head: number | null
  state: 'serving' | 'resting' | 'lagging' | 'refused' | 'wrong_chain'
  /** The chain id it last answered `eth_chainId` with; null before it answered since its last failure. */
  chainId: number | null
  lastError: string | null
}

type Member = {
  client: RpcClient
  shown: string
  weight: number
  /** Requests allowed per second; tokens refill continuously. */
  cap: number | undefined
  tokens: number
  refilledAt: number
  restUntil: number
  failures: number
  head: number | null
  refused: boolean
  /** Its answer to `eth_chainId` since its last failure; null: to be asked before it serves again. */
  chainId: number | null
  lastError: string | null
}

export type CreateRpcPoolParameters = {
  endpoints: readonly PoolEndpoint[]
  /** The client of one endpoint (timeouts, batch size and metrics as for a single node). */
  clientOf: (url: string) => RpcClient
  logger: Logger
  /**
   * The chain every endpoint must serve: each is asked `eth_chainId` before it serves, at start and
   * after any failure, and one that says another chain stays out of rotation. Unset: the first answer.
   */
  chainId?: number | undefined
  maxLagBlocks?: number
  probeEveryMs?: number
  /** The clock rate caps and rests are measured by (milliseconds); a test freezes or steps it. */
  now?: () => number
}

/**
 * Several endpoints of one chain as one client: each request goes to an endpoint drawn by weight among
 * those in rotation, under each endpoint's rate cap. An endpoint that fails transiently (network, 5xx,
 * 429, timeout) rests and the request goes to the next; one whose key is refused (401/403) leaves the
 * rotation, named in the log; one whose head is behind the best by more than `maxLagBlocks` waits until
 * it catches up. Answers that say the request is too big or invalid are the caller's (they would be the
 * same elsewhere). Heads are read every `probeEveryMs`, which also brings rested endpoints back.
 */
export function createRpcPool({
  endpoints,
  clientOf,
  logger,
  maxLagBlocks = DEFAULT_MAX_LAG_BLOCKS,
  probeEveryMs = DEFAULT_PROBE_EVERY_MS,
  now = Date.now,
  chainId: configuredChainId,
}: CreateRpcPoolParameters) {
  if (endpoints.length === 0) throw new RangeError('an RPC pool needs at least one endpoint')
  const members: Member[] = endpoints.map((endpoint) => ({
    client: clientOf(endpoint.url),
    shown: redactUrl(endpoint.url),
    weight: endpoint.weight,
    cap: endpoint.maxRequestsPerSecond,
    tokens: endpoint.maxRequestsPerSecond ?? 0,
    refilledAt: now(),
    restUntil: 0,
    failures: 0,
    head: null,
    refused: false,
    chainId: null,
    lastError: null,
  }))
  let expectedChainId = configuredChainId

  const wrongChain = (m: Member) => m.chainId !== null && expectedChainId !== undefined && m.chainId !== expectedChainId
  /** Out of rotation whatever else holds: a refused key, or another chain. */
  const excluded = (m: Member) => m.refused || wrongChain(m)
  const bestHead = () => Math.max(-1, ...members.filter((m) => !excluded(m) && m.restUntil <= now()).map((m) => m.head ?? -1))
  const lagging = (m: Member) => m.head !== null && m.head < bestHead() - maxLagBlocks
  const stateOf = (m: Member): EndpointState['state'] =>
    m.refused ? 'refused' : wrongChain(m) ? 'wrong_chain' : m.restUntil > now() ? 'resting' : lagging(m) ? 'lagging' : 'serving'

  /**
   * Asks `m` its chain id (once per failure): an endpoint that says another chain than the pool's leaves
   * the rotation, named in an error log; one that says the right chain again comes back.
   */
  async function checkChain(m: Member, timeoutMs?: number): Promise<number> {
    const answered = await getChainId({ request: (method, params) => m.client.request(method, params, timeoutMs ? { timeoutMs } : {}) })
    expectedChainId ??= answered
    const wasWrong = wrongChain(m)
    m.chainId = answered
    if (wrongChain(m)) {
      m.lastError = `serves chain ${answered}, expected chain ${expectedChainId}`
      if (!wasWrong)
        logger.error(
          { endpoint: m.shown, chain_id: expectedChainId, node_chain_id: answered },
          'rpc endpoint serves another chain: out of rotation',
        )
    } else if (wasWrong) logger.info({ endpoint: m.shown, chain_id: answered }, 'rpc endpoint serves its chain again: back in rotation')
    return answered
  }

  function hasToken(m: Member): boolean {
    if (m.cap === undefined) return true
    const at = now()
    m.tokens = Math.min(m.cap, m.tokens + ((at - m.refilledAt) / 1000) * m.cap)
    m.refilledAt = at
    return m.tokens >= 1
  }

  /** An endpoint by weight among those serving and under their cap; failing that, any not yet tried and not refused. */
  async function pick(tried: ReadonlySet<Member>): Promise<Member | undefined> {
    for (;;) {
      const open = members.filter((m) => !tried.has(m) && !excluded(m))
      if (open.length === 0) return undefined
      const serving = open.filter((m) => stateOf(m) === 'serving')
      // Nothing serving (every endpoint resting or behind): asking one beats failing without asking.
      const pool = (serving.length > 0 ? serving : open).filter(hasToken)
      if (pool.length > 0) {
        let draw = Math.random() * pool.reduce((sum, m) => sum + m.weight, 0)
        const chosen =
          pool.find((m) => {
            draw -= m.weight
            return draw < 0
          }) ?? pool.at(-1)!
        if (chosen.cap !== undefined) chosen.tokens -= 1
        return chosen
      }
      // Every candidate is at its rate cap: wait for the soonest token.
      await sleep(Math.ceil(1000 / Math.max(...open.map((m) => m.cap ?? 1_000))))
    }
  }

  function rest(m: Member, error: unknown) {
    m.failures++
    // A reconnect may reach another node: its chain id is asked again before it serves.
    m.chainId = null
    m.lastError = classifyRpcError(error).pattern
    m.restUntil = now() + Math.min(MAX_REST_MS, REST_MS * 2 ** (m.failures - 1))
    if (m.failures === 1) logger.warn({ endpoint: m.shown, reason: m.lastError }, 'rpc endpoint failing: out of rotation for a while')
  }

  const isRefusedKey = (error: unknown) => {
    const status =
      (error as { status?: unknown; cause?: { status?: unknown } })?.status ?? (error as { cause?: { status?: unknown } })?.cause?.status
    return status === 401 || status === 403
  }

  async function call<T>(send: (client: RpcClient) => Promise<T>): Promise<T> {
    await firstProbe
    const tried = new Set<Member>()
    let lastError: unknown = new Error('no RPC endpoint in rotation')
    for (let m = await pick(tried); m; m = await pick(tried)) {
      tried.add(m)
      try {
        if (m.chainId === null && expectedChainId !== undefined && (await checkChain(m)) !== expectedChainId) continue
        const result = await send(m.client)
        m.failures = 0
        return result
      } catch (error) {
        lastError = error
        const action = classifyRpcError(error)
        if (isRefusedKey(error)) {
          m.refused = true
          m.lastError = `refused (${action.pattern})`
          logger.error({ endpoint: m.shown }, 'rpc endpoint refuses its key: out of rotation')
          continue
        }
        if (action.kind === 'retry' || action.kind === 'backoff') {
          rest(m, error)
          continue
        }
        throw error
      }
    }
    throw lastError
  }

  async function probe(): Promise<void> {
    await Promise.all(
      members
        .filter((m) => !m.refused)
        .map(async (m) => {
          try {
            const timeoutMs = Math.max(1_000, probeEveryMs)
            // One that said another chain is asked again each round; it serves nothing meanwhile.
            if ((m.chainId === null || wrongChain(m)) && (await checkChain(m, timeoutMs)) !== expectedChainId) return
            m.head = Number(await m.client.request<string>('eth_blockNumber', [], { timeoutMs }))
            if (m.restUntil > now() && m.failures > 0) logger.info({ endpoint: m.shown }, 'rpc endpoint answers again: back in rotation')
            m.restUntil = 0
            m.failures = 0
          } catch (error) {
            if (isRefusedKey(error)) {
              m.refused = true
              m.lastError = 'refused'
              logger.error({ endpoint: m.shown }, 'rpc endpoint refuses its key: out of rotation')
            } else rest(m, error)
          }
        }),
    )
  }

  const firstProbe = members.length > 1 ? Promise.race([probe(), sleep(FIRST_PROBE_WAIT_MS)]) : Promise.resolve()
  const timer = members.length > 1 ? setInterval(() => void probe(), probeEveryMs) : undefined
  timer?.unref()

  const client: RpcClient = {
    url: members[0]!.client.url,
    logger,
    request: <T>(method: string, params?: readonly unknown[], options?: RpcRequestOptions) =>
      call((c) => c.request<T>(method, params, options)),
    batch: <T>(calls: readonly RpcCall[], options?: RpcRequestOptions) => call((c) => c.batch<T>(calls, options)),
  }
  return {
    ...client,
    /** Each endpoint's state, in configuration order. */
    endpoints: (): EndpointState[] =>
      members.map((m) => ({ url: m.shown, weight: m.weight, head: m.head, state: stateOf(m), chainId: m.chainId, lastError: m.lastError })),
    /**
     * Asks every endpoint not refused its chain id (each leaves or rejoins the rotation by its answer).
     * Resolves to the pool's chain while at least one endpoint serves it; to another chain's id when
     * every endpoint that answered serves another (nothing of this chain can be read); throws when none answered.
     */
    async chainId(): Promise<number> {
      const answers = await Promise.allSettled(members.filter((m) => !m.refused).map((m) => checkChain(m)))
      const answered = answers.flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []))
      if (answered.length === 0) {
        const failed = answers.find((answer) => answer.status === 'rejected')
        throw failed ? failed.reason : new Error('no RPC endpoint in rotation')
      }
      return answered.includes(expectedChainId!) ? expectedChainId! : answered[0]!
    },
    close: () => clearInterval(timer),
  }
}
