import type { Logger } from '../internal/logger.js'
import { FatalError, type RpcRequestEvent } from '../rpc/index.js'
import { redactUrl } from '../utils/redact.js'

/**
 * A node is asked its chain id again after this long even without a failure in between: a node restarted
 * quickly (or swapped behind a load balancer) may fail no request. One call per this long is nothing beside the tip's.
 */
const RECHECK_MS = 5_000
/** How often a role's watch looks whether the node came back from a failure (and so may be another node). */
export const CHAIN_ID_WATCH_MS = 1_000

/** The node says another chain than the one configured or asked for: nothing it serves may be stored. */
export class ChainMismatchError extends FatalError {
  override name = 'ChainMismatchError'
  constructor(
    readonly expected: number,
    readonly actual: number,
    where: string,
  ) {
    super(`${where} says chain ${actual}, expected chain ${expected}`)
  }
}

export type ChainIdentity = {
  /** The chain this node must serve: the configured id, else the node's first answer. */
  readonly chainId: number
  /**
   * Resolves when the node still says `chainId`, asked again after any failed request (a reconnect may
   * reach another node) and every few seconds, or at once with `ask` (what looks like a reorg may be
   * another node); throws a `ChainMismatchError` when it says another. Free when nothing calls for asking:
   * writers call it between reading the node and storing what it said.
   */
  verify(options?: { ask?: boolean }): Promise<void>
  /**
   * Feed every finished node request here: a transient failure (the node gone) or a refusal to serve for now
   * (a 503 or a rate limit: a balancer may be moving between nodes) makes the next `verify` ask again, once.
   */
  observe(event: Pick<RpcRequestEvent, 'ok' | 'errorKind'>): void
}

/**
 * Asks the node its `eth_chainId` and holds it to `expected` (the configured chain) or, without one, to
 * its first answer. Throws a `ChainMismatchError` at once when the first answer is another chain.
 */
export async function createChainIdentity({
  askChainId,
  expected,
  url,
  logger,
  nodeMayBeDown = false,
}: {
  askChainId: () => Promise<number>
  expected: number | undefined
  /**
   * With `expected` known, a node that does not answer at start is asked again by the first `verify`
   * instead of failing the start (several chains: one chain's node down must not keep the others from starting).
   */
  nodeMayBeDown?: boolean
  /** The node's URL, shown without its keys in a mismatch. */
  url: string
  logger: Logger
}): Promise<ChainIdentity> {
  const where = `the node at ${redactUrl(url)}`
  let first: number | undefined
  try {
    first = await askChainId()
  } catch (error) {
    if (!(nodeMayBeDown && expected !== undefined)) throw error
    logger.warn({ chain_id: expected, node: redactUrl(url), err: error }, 'node not reachable at start: its chain waits for it')
  }
  const chainId = expected ?? first!
  if (first !== undefined && first !== chainId) throw new ChainMismatchError(chainId, first, where)
  let askedAt = Date.now()
  let suspect = first === undefined
  let asking: Promise<void> | undefined

  async function ask(): Promise<void> {
    const actual = await askChainId()
    askedAt = Date.now()
    // A node that said another chain is asked again on every verify until it says the right one.
    suspect = actual !== chainId
    if (actual !== chainId) {
      logger.error({ chain_id: chainId, node_chain_id: actual, node: redactUrl(url) }, 'node serves another chain')
      throw new ChainMismatchError(chainId, actual, where)
    }
  }

  return {
    chainId,
    verify({ ask: askNow = false } = {}) {
      if (!askNow && !suspect && Date.now() - askedAt < RECHECK_MS) return Promise.resolve()
      asking ??= ask().finally(() => (asking = undefined))
      return asking
    },
    observe(event) {
      if (!event.ok && (event.errorKind === 'retry' || event.errorKind === 'backoff')) suspect = true
    },
  }
}
