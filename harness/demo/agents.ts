/**
 * Simulated agents on the devnet: plain-transaction agents trading on the demo pool, smart-account
 * agents whose user operations a bundler sends through the EntryPoints, and the chain's bad days:
 * now and then a small reorg, and a pool transaction dropped after it was served as pending.
 */
import { concat, encodeFunctionData, type Address, type Hash, type Hex } from 'viem'
import type { Devnet } from '../devnet/index.js'
import type { Logger } from '../../src/internal/logger.js'
import { sleep } from '../../src/utils/loop.js'
import { anvilAccount, fixtureClient, sendWithSuffix, type FixtureClient } from '../fixtures/chain.js'
import { encodeExecute, sendHandleOps, type SmartAccount } from '../fixtures/entryPoint.js'
import { BUNDLER_ACCOUNT, swapArtifact, TOKEN_UNIT, tokenCall, type DemoContracts } from './chainState.js'
import { pickSuffixKind, SCHEMA1_SHARE, suffixFor, type SuffixKind, type SuffixRegistry } from './suffixes.js'

/** Pause between two transactions of one plain agent: five agents send about 3.5 transactions/s in all. */
const EOA_PAUSE_MS = [700, 2_000] as const
const BUNDLER_PAUSE_MS = [300, 1_200] as const
/** Covers a swap (two token transfers) plus the EIP-7623 floor of the longest suffix. */
const AGENT_GAS = 300_000n
/** An agent with more of its transactions waiting than this lost one to a reorg race: it clears its pool. */
const MAX_POOL_BACKLOG = 8
const HEAD_POLL_MS = 100
/** How long after a block a reorg may still start: blocks come every 2 s. */
const REORG_WINDOW_MS = 1_200
const PENDING_POLL_MS = 100
const PENDING_WAIT_MS = 1_500
/** Long enough for the daemon's pending poller (every 200 ms) to store the transaction before it is dropped. */
const DROP_AFTER_PENDING_MS = 500
/** Agents waiting on a receipt get this long to finish once asked to stop. */
const STOP_GRACE_MS = 5_000

export type Agent = {
  name: string
  address: Address
  code: string
  /** The registry its code is registered on, which its schema-1 suffixes name; without one it sends none. */
  registry?: SuffixRegistry
} & ({ kind: 'eoa'; account: number } | { kind: 'smart'; smartAccount: SmartAccount })

export type AgentStats = {
  /** Transactions sent, bundles included. */
  transactions: number
  userOperations: number
  bySuffix: Record<SuffixKind, number>
  reorgs: number
  dropped: number
  errors: number
}

export type ChaosSchedule = {
  firstReorgMs: number
  reorgEveryMs: number
  firstDropMs: number
  dropEveryMs: number
}

export type StartAgentsParameters = {
  devnet: Devnet
  contracts: DemoContracts
  /** Plain-transaction and smart-account agents, each with its registered builder code. */
  agents: readonly Agent[]
  /** A plain agent whose transactions are dropped from the pool before they are mined. */
  droppedAgent: Agent & { kind: 'eoa' }
  schedule: ChaosSchedule
  /** The last block the indexer stored: a reorg waits for it to reach the head, so there is something to undo. */
  indexedHead: () => Promise<number | null>
  logger: Logger
}

export type RunningAgents = { stats: AgentStats; stop: () => Promise<void> }

const between = ([min, max]: readonly [number, number]) => min + Math.floor(Math.random() * (max - min))
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!
const tokenAmount = (maxUnits: number) => BigInt(1 + Math.floor(Math.random() * maxUnits)) * TOKEN_UNIT

/** A swap, a transfer to another agent, or a mint: every one emits logs for the indexer. */
function plainAction(agent: Agent, contracts: DemoContracts, peers: readonly Address[]): { to: Address; data: Hex } {
  const roll = Math.random()
  const token = pick(contracts.tokens)
  if (roll < 0.45) {
    return {
      to: contracts.swap,
      data: encodeFunctionData({ abi: swapArtifact.abi, functionName: 'swap', args: [token, tokenAmount(50), 0n] }),
    }
  }
  if (roll < 0.85) return { to: token, data: tokenCall('transfer', [pick(peers), tokenAmount(100)]) }
  return { to: token, data: tokenCall('mint', [agent.address, tokenAmount(1_000)]) }
}

/** A node method viem's anvil schema does not list. */
async function request<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const answer = (await response.json()) as { result?: T; error?: { message: string } }
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`)
  return answer.result as T
}

async function rawTransaction(url: string, hash: Hash): Promise<Hex> {
  const raw = await request<Hex | null>(url, 'eth_getRawTransactionByHash', [hash])
  if (!raw) throw new Error(`eth_getRawTransactionByHash: ${hash} not found`)
  return raw
}

/** Resolves with the new head once a block was mined (or the head moved), right at the start of a block time. */
async function nextHead(client: FixtureClient, signal: AbortSignal): Promise<bigint | undefined> {
  const start = await client.getBlockNumber({ cacheTime: 0 })
  while (!signal.aborted) {
    await sleep(HEAD_POLL_MS, signal)
    const head = await client.getBlockNumber({ cacheTime: 0 })
    if (head !== start) return head
  }
  return undefined
}

/**
 * Starts every agent and the reorg/drop schedule; `stop` ends them (each finishes or abandons the
 * transaction in hand) before the devnet is stopped.
 */
export function startAgents({
  devnet,
  contracts,
  agents,
  droppedAgent,
  schedule,
  indexedHead,
  logger,
}: StartAgentsParameters): RunningAgents {
  const stopped = new AbortController()
  const { signal } = stopped
  const stats: AgentStats = {
    transactions: 0,
    userOperations: 0,
    bySuffix: { schema0: 0, 'schema0-two-codes': 0, schema1: 0, schema2: 0, none: 0, malformed: 0 },
    reorgs: 0,
    dropped: 0,
    errors: 0,
  }
  const anvil = fixtureClient(devnet.anvilUrl)
  const node = fixtureClient(devnet.url)
  const peers = agents.map((agent) => agent.address)
  let sequence = 0

  const failed = (what: string, agent: string | undefined, error: unknown) => {
    if (signal.aborted) return
    stats.errors++
    logger.warn({ agent, err: error }, `demo agent: ${what} failed`)
  }

  // A reorg that raced a mined block can orphan a transaction the demo did not re-include, leaving a nonce gap.
  async function clearStuckPool(agent: Agent) {
    const [latest, pending] = await Promise.all([
      node.getTransactionCount({ address: agent.address, blockTag: 'latest' }),
      node.getTransactionCount({ address: agent.address, blockTag: 'pending' }),
    ])
    if (pending - latest <= MAX_POOL_BACKLOG) return
    await request(devnet.url, 'anvil_removePoolTransactions', [agent.address])
    logger.warn({ agent: agent.name, latest_nonce: latest, pending_nonce: pending }, 'demo agent: cleared its stuck pool transactions')
  }

  async function runPlainAgent(agent: Agent & { kind: 'eoa' }) {
    while (!signal.aborted) {
      try {
        await clearStuckPool(agent)
        const kind: SuffixKind = agent.registry && Math.random() < SCHEMA1_SHARE ? 'schema1' : pickSuffixKind(Math.random())
        const suffix = suffixFor(kind, agent.code, sequence++, agent.registry)
        await sendWithSuffix(devnet.url, {
          from: agent.account,
          ...plainAction(agent, contracts, peers),
          suffix,
          gas: AGENT_GAS,
          wait: false,
        })
        stats.transactions++
        stats.bySuffix[kind]++
      } catch (error) {
        failed('transaction', agent.name, error)
      }
      await sleep(between(EOA_PAUSE_MS), signal)
    }
  }

  // One bundler: its transactions take nonces one after another, and each user operation reads its account's
  // EntryPoint nonce from the mined state, so bundles go out one at a time and wait to be mined.
  async function runBundler(smartAgents: readonly (Agent & { kind: 'smart' })[]) {
    const beneficiary = anvilAccount(BUNDLER_ACCOUNT).address
    for (let i = 0; !signal.aborted; i++) {
      const agent = smartAgents[i % smartAgents.length]!
      try {
        const kind = pickSuffixKind(Math.random())
        const suffix = suffixFor(kind, agent.code, sequence++)
        const execute = encodeExecute({ to: pick(contracts.tokens), data: tokenCall('mint', [agent.address, tokenAmount(1_000)]) })
        await sendHandleOps(devnet.url, {
          version: agent.smartAccount.version,
          ops: [{ account: agent.smartAccount, callData: suffix ? concat([execute, suffix]) : execute }],
          beneficiary,
          bundler: BUNDLER_ACCOUNT,
        })
        stats.transactions++
        stats.userOperations++
        stats.bySuffix[kind]++
      } catch (error) {
        failed('user operation', agent.name, error)
      }
      await sleep(between(BUNDLER_PAUSE_MS), signal)
    }
  }

  /**
   * Replaces the last `depth` canonical blocks (and the blocks sealed above them while the node lags) with
   * one holding all their transactions, as a competing builder would, once the indexer has stored the
   * node's head and well before the next block is due. Resolves false when the indexer did not get there in time.
   */
  async function reorg(canonicalDepth: number): Promise<boolean> {
    const head = await nextHead(anvil, signal)
    if (head === undefined) return true
    const depth = canonicalDepth + devnet.canonicalLag
    const deadline = Date.now() + REORG_WINDOW_MS
    while (((await indexedHead()) ?? -1) < Number(head) - devnet.canonicalLag) {
      if (signal.aborted || Date.now() > deadline) return false
      await sleep(HEAD_POLL_MS, signal)
    }
    const blocks = await Promise.all(Array.from({ length: depth }, (_, i) => anvil.getBlock({ blockNumber: head - BigInt(depth - 1 - i) })))
    // Re-included, so no agent is left with a nonce gap; the blocks, their hashes and positions change.
    // Through the devnet's endpoint: it serves the raw bytes of its deposits, on which anvil 1.7 panics.
    const raw = await Promise.all(blocks.flatMap((block) => block.transactions).map((hash) => rawTransaction(devnet.url, hash)))
    const replaced = await devnet.reorg(
      depth,
      raw.map((transaction) => ({ transaction, blockOffset: 0 })),
    )
    stats.reorgs++
    logger.info(
      { depth, fork_block: Number(blocks[0]!.number), old_hash: blocks.at(-1)!.hash, new_hash: replaced.hash, transactions: raw.length },
      'demo: caused a reorg',
    )
    if (replaced.number !== head)
      logger.warn({ head: Number(head), new_head: Number(replaced.number) }, 'demo: a block was mined during the reorg')
    return true
  }

  /** Sends a transaction right after a block, lets it be served as pending, and drops it before the next block. */
  async function drop() {
    if ((await nextHead(anvil, signal)) === undefined) return
    const suffix = suffixFor('schema0', droppedAgent.code, 0)
    const hash = await sendWithSuffix(devnet.url, {
      from: droppedAgent.account,
      to: pick(contracts.tokens),
      data: tokenCall('mint', [droppedAgent.address, tokenAmount(1_000)]),
      suffix,
      gas: AGENT_GAS,
      wait: false,
    })
    stats.transactions++
    stats.bySuffix.schema0++
    const deadline = Date.now() + PENDING_WAIT_MS
    while (!signal.aborted && Date.now() < deadline) {
      const { transactions } = await devnet.pending()
      if (transactions.some((tx) => tx.toLowerCase() === hash.toLowerCase())) break
      await sleep(PENDING_POLL_MS, signal)
    }
    await sleep(DROP_AFTER_PENDING_MS, signal)
    const dropped = await devnet.dropTransaction(hash)
    if (dropped) stats.dropped++
    logger.info(
      { tx_hash: hash, dropped },
      dropped ? 'demo: dropped a pending transaction' : 'demo: the transaction to drop was already mined',
    )
  }

  async function runChaos() {
    const started = Date.now()
    let nextReorg = started + schedule.firstReorgMs
    let nextDrop = started + schedule.firstDropMs
    while (!signal.aborted) {
      const now = Date.now()
      const due = Math.min(nextReorg, nextDrop)
      if (due > now) {
        await sleep(due - now, signal)
        continue
      }
      const isDrop = nextDrop <= nextReorg
      try {
        if (isDrop) {
          nextDrop = now + schedule.dropEveryMs
          await drop()
        } else {
          const done = await reorg((stats.reorgs % 2) + 1)
          // Not done: the indexer was behind; try again at the next block.
          nextReorg = done ? now + schedule.reorgEveryMs : Date.now()
        }
      } catch (error) {
        failed(isDrop ? 'drop' : 'reorg', undefined, error)
      }
    }
  }

  const plain = agents.filter((agent): agent is Agent & { kind: 'eoa' } => agent.kind === 'eoa')
  const smart = agents.filter((agent): agent is Agent & { kind: 'smart' } => agent.kind === 'smart')
  const loops = [...plain.map(runPlainAgent), ...(smart.length > 0 ? [runBundler(smart)] : []), runChaos()]

  return {
    stats,
    async stop() {
      stopped.abort()
      // With anvil gone (a terminal's Ctrl-C reaches it too) no receipt will come: nothing to wait for.
      const { process: anvilProcess } = devnet.anvil
      if (anvilProcess.exitCode !== null || anvilProcess.signalCode !== null) return
      const grace = new AbortController()
      await Promise.race([Promise.allSettled(loops), sleep(STOP_GRACE_MS, grace.signal)])
      grace.abort()
    },
  }
}
