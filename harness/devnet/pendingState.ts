import type { Hex } from 'viem'
import type { Logger } from '../../src/internal/logger.js'
import {
  divergedLogs,
  firstCreationIndex,
  nextBlockTimestamp,
  preconfirmedLogs,
  simulationParams,
  type PendingBlock,
  type PendingTransaction,
  type PreconfLog,
  type SimulatedCall,
  ZERO_HASH,
} from './preconf.js'
import type { UpstreamClient } from './rpc.js'

/** Base publishes a flashblock about every 200 ms: the pool is simulated again at this cadence. */
export const DEFAULT_REFRESH_MS = 200

/** Most blocks the node's canonical chain may lag the sequencer (anvil) by. */
export const MAX_CANONICAL_LAG = 5

/**
 * The pre-confirmed state: anvil's pool simulated as block `number` on top of `parentHash`, after the
 * blocks anvil sealed above the node's canonical head `latest` (the pending window is `latest + 1 … number`).
 */
export type PendingSnapshot = {
  /** The node's canonical head: anvil's head less the canonical lag. */
  latest: bigint
  number: bigint
  parentHash: Hex
  timestamp: bigint
  /** Pool transactions in the order anvil will mine them. */
  transactions: Hex[]
  /** Every pending log of the window, in block order. */
  logs: PreconfLog[]
  /** Transactions from the first contract creation on, left unsimulated (anvil 1.7 cannot simulate creations). */
  unsimulated: number
}

/** A block header as anvil answers `eth_getBlockByHash(…, false)`. */
export type HeadBlock = { hash: Hex; parentHash: Hex; number: Hex; timestamp: Hex } & Record<string, unknown>

export type PendingStateParameters = {
  upstream: UpstreamClient
  logger: Logger
  /** Interval mining cadence (0: manual); sets the pending block's timestamp to the expected mining time. */
  blockTimeMs: number
  refreshMs?: number
  /** Blocks the canonical chain lags anvil's head (0–5): those blocks are served as pending, with zero hashes. */
  canonicalLag?: number
  /** Fraction (0–1) of transactions whose pending logs differ from the sealed ones (see `divergedLogs`). */
  divergence?: number
}

export type PendingState = {
  /**
   * The latest pre-confirmed state, answered at once from the cache (refreshed in the background when older
   * than `refreshMs`); waits only when none is known since the last chain change.
   */
  snapshot: () => Promise<PendingSnapshot>
  /**
   * Runs an operation that changes the chain or the pool (mine, drop, reorg) with no simulation in between,
   * then opens the next pending block; no answer requested after the change was requested describes the state
   * before it.
   */
  changeChain: <T>(operation: () => Promise<T>) => Promise<T>
  /** Simulates the pool every `refreshMs`, like a flashblock builder, until `stop`. */
  start: () => void
  stop: () => Promise<void>
  onSnapshot: (listener: (snapshot: PendingSnapshot) => void) => void
  /** Called with the node's new canonical head. */
  onHead: (listener: (head: HeadBlock) => void) => void
}

/** Throws a RangeError naming the option when the pending window options are out of range. */
export function checkWindowOptions({
  canonicalLag = 0,
  divergence = 0,
}: Pick<PendingStateParameters, 'canonicalLag' | 'divergence'>): void {
  if (!Number.isInteger(canonicalLag) || canonicalLag < 0 || canonicalLag > MAX_CANONICAL_LAG) {
    throw new RangeError(`canonicalLag must be a whole number of blocks from 0 to ${MAX_CANONICAL_LAG}, got ${canonicalLag}`)
  }
  if (!(divergence >= 0 && divergence <= 1)) throw new RangeError(`divergence must be a fraction from 0 to 1, got ${divergence}`)
}

type PendingBlockHashes = Omit<PendingBlock, 'transactions'> & { transactions: Hex[] }

/** The devnet's pre-confirmed layer: simulates anvil's pool on top of `latest` and caches the result. */
export function createPendingState(parameters: PendingStateParameters): PendingState {
  const { upstream, logger, blockTimeMs } = parameters
  const refreshMs = parameters.refreshMs ?? DEFAULT_REFRESH_MS
  const { canonicalLag = 0, divergence = 0 } = parameters
  const snapshotListeners: Array<(snapshot: PendingSnapshot) => void> = []
  const headListeners: Array<(head: HeadBlock) => void> = []
  // Pool transactions are immutable per hash, and anvil is slow to serialize many at once.
  const transactionCache = new Map<Hex, PendingTransaction>()

  // Bumped when a chain change is requested: snapshots of an older generation are never served.
  let generation = 0
  let current: { generation: number; key: string; checkedAt: number; snapshot: PendingSnapshot } | undefined
  let refreshing: { generation: number; promise: Promise<PendingSnapshot> } | undefined
  // While anvil fails, answers wait for a refresh (and its error) instead of serving the cache forever.
  let failing = false
  let openedHead: Hex | undefined
  // The blocks anvil sealed above the node's canonical head, as of `openedHead`.
  let sealedWindow: { latest: bigint; logs: PreconfLog[] } = { latest: 0n, logs: [] }
  let running = false
  let loop: Promise<void> = Promise.resolve()
  let sleeping: { timer: NodeJS.Timeout; wake: () => void } | undefined

  // One anvil conversation at a time, so a simulation never straddles a mine.
  let tail: Promise<unknown> = Promise.resolve()
  const exclusive = <T>(operation: () => Promise<T>): Promise<T> => {
    const run = tail.then(operation, operation)
    tail = run.catch(() => undefined)
    return run
  }

  const pendingBlock = () => upstream.call<PendingBlockHashes>('eth_getBlockByNumber', ['pending', false])

  const transactionsOf = async (hashes: Hex[]): Promise<PendingTransaction[]> => {
    const missing = hashes.filter((hash) => !transactionCache.has(hash))
    if (missing.length > 0) {
      const found = await upstream.batch(missing.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })))
      found.forEach((tx, index) => tx && transactionCache.set(missing[index]!, tx as PendingTransaction))
    }
    const pool = new Set(hashes)
    for (const hash of transactionCache.keys()) if (!pool.has(hash)) transactionCache.delete(hash)
    return hashes.flatMap((hash) => transactionCache.get(hash) ?? [])
  }

  const simulate = async (block: PendingBlock, transactions: PendingTransaction[]): Promise<SimulatedCall[]> => {
    if (transactions.length === 0) return []
    const [result] = await upstream.call<Array<{ calls: SimulatedCall[] }>>('eth_simulateV1', simulationParams(block, transactions))
    return result?.calls ?? []
  }

  const buildSnapshot = async (block: PendingBlock): Promise<PendingSnapshot> => {
    let simulated = block.transactions
    let calls: SimulatedCall[]
    try {
      calls = await simulate(block, simulated)
    } catch (error) {
      const creation = firstCreationIndex(simulated)
      if (creation < 0) throw error
      simulated = simulated.slice(0, creation)
      calls = await simulate(block, simulated)
      logger.debug(
        { block_number: Number(block.number), unsimulated: block.transactions.length - creation },
        'pending simulation stops at a contract creation',
      )
    }
    return {
      latest: sealedWindow.latest,
      number: BigInt(block.number),
      parentHash: block.parentHash,
      timestamp: BigInt(block.timestamp),
      transactions: block.transactions.map((tx) => tx.hash),
      logs: divergedLogs([...sealedWindow.logs, ...preconfirmedLogs(block, calls)], divergence),
      unsimulated: block.transactions.length - simulated.length,
    }
  }

  const openBlock = async (parentHash: Hex) => {
    const head = await upstream.call<HeadBlock | null>('eth_getBlockByHash', [parentHash, false])
    if (!head) throw new Error(`head ${parentHash} vanished while opening the pending block`)
    const timestamp = nextBlockTimestamp({ parentTimestamp: BigInt(head.timestamp), nowMs: Date.now(), blockTimeMs })
    try {
      await upstream.call('anvil_setNextBlockTimestamp', [Number(timestamp)])
    } catch (error) {
      logger.warn({ err: error, block_number: Number(head.number) + 1 }, 'could not fix the pending block timestamp')
    }
    const headNumber = BigInt(head.number)
    const latest = headNumber > BigInt(canonicalLag) ? headNumber - BigInt(canonicalLag) : 0n
    const [canonical, sealed] = await Promise.all([
      latest === headNumber ? head : upstream.call<HeadBlock>('eth_getBlockByNumber', [`0x${latest.toString(16)}`, false]),
      latest === headNumber
        ? []
        : upstream.call<PreconfLog[]>('eth_getLogs', [{ fromBlock: `0x${(latest + 1n).toString(16)}`, toBlock: head.number }]),
    ])
    sealedWindow = { latest, logs: sealed.map((log) => ({ ...log, blockHash: ZERO_HASH, removed: false })) }
    openedHead = head.hash
    for (const listener of headListeners) listener(canonical)
  }

  const refresh = async (startedIn: number): Promise<PendingSnapshot> => {
    let block = await pendingBlock()
    if (block.parentHash !== openedHead) {
      await openBlock(block.parentHash)
      block = await pendingBlock()
    }
    const key = `${block.parentHash}:${block.timestamp}:${block.transactions.join(',')}`
    if (current && current.key === key && current.generation === startedIn) {
      current.checkedAt = Date.now()
      return current.snapshot
    }
    const transactions = await transactionsOf(block.transactions)
    const snapshot = await buildSnapshot({ ...block, transactions })
    // A transaction left the pool between the two calls: serve this snapshot but do not cache it under the key.
    const complete = transactions.length === block.transactions.length
    current = { generation: startedIn, key: complete ? key : '', checkedAt: Date.now(), snapshot }
    for (const listener of snapshotListeners) listener(snapshot)
    return snapshot
  }

  const refreshNow = (): Promise<PendingSnapshot> => {
    if (refreshing?.generation === generation) return refreshing.promise
    const requestedIn = generation
    const entry = {
      generation: requestedIn,
      promise: exclusive(() => refresh(requestedIn))
        .then((snapshot) => {
          failing = false
          return snapshot
        })
        .catch((error: unknown) => {
          if (!failing) logger.warn({ err: error }, 'pending refresh failed')
          failing = true
          throw error
        })
        .finally(() => {
          if (refreshing === entry) refreshing = undefined
        }),
    }
    refreshing = entry
    return entry.promise
  }

  const snapshot = (): Promise<PendingSnapshot> => {
    if (!current || current.generation !== generation || failing) return refreshNow()
    if (Date.now() - current.checkedAt >= refreshMs) refreshNow().catch(() => undefined)
    return Promise.resolve(current.snapshot)
  }

  const changeChain = <T>(operation: () => Promise<T>): Promise<T> => {
    const changeGeneration = ++generation
    return exclusive(async () => {
      try {
        return await operation()
      } finally {
        await refresh(changeGeneration).catch((error: unknown) =>
          logger.warn({ err: error }, 'pending refresh after a chain change failed'),
        )
      }
    })
  }

  const run = async () => {
    while (running) {
      await refreshNow().catch(() => undefined)
      await new Promise<void>((wake) => {
        sleeping = { timer: setTimeout(wake, refreshMs), wake }
      })
    }
  }

  return {
    snapshot,
    changeChain,
    start: () => {
      if (running) return
      running = true
      loop = run()
    },
    stop: async () => {
      running = false
      if (sleeping) {
        clearTimeout(sleeping.timer)
        sleeping.wake()
      }
      await loop
    },
    onSnapshot: (listener) => void snapshotListeners.push(listener),
    onHead: (listener) => void headListeners.push(listener),
  }
}
