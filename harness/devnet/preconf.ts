import { keccak256, zeroHash as ZERO_HASH, type Address, type Hex } from 'viem'

/** What Base puts in `blockHash` of a pre-confirmed log: the block has no hash yet. */
export { ZERO_HASH }

/** A transaction of anvil's pending block (`eth_getBlockByNumber("pending", true)`). */
export type PendingTransaction = {
  hash: Hex
  from: Address
  to: Address | null
  input: Hex
  value: Hex
  gas: Hex
  nonce: Hex
  gasPrice?: Hex
  maxFeePerGas?: Hex
  maxPriorityFeePerGas?: Hex
  accessList?: unknown[]
  authorizationList?: unknown[]
}

/** Anvil's pending block: the pool in the order anvil will mine it, on top of `parentHash`. */
export type PendingBlock = {
  number: Hex
  parentHash: Hex
  timestamp: Hex
  gasLimit: Hex
  miner: Address
  baseFeePerGas?: Hex
  transactions: PendingTransaction[]
}

/** One call result of `eth_simulateV1` (only what a log needs). */
export type SimulatedCall = {
  status: Hex
  logs: Array<{ address: Address; topics: Hex[]; data: Hex }>
}

export type PreconfLog = {
  address: Address
  topics: Hex[]
  data: Hex
  blockHash: Hex
  blockNumber: Hex
  blockTimestamp: Hex
  transactionHash: Hex
  transactionIndex: Hex
  logIndex: Hex
  removed: false
}

export type LogFilter = {
  address?: Address | Address[] | null
  topics?: Array<Hex | Hex[] | null> | null
}

/** `txpool_content`: sender → nonce → transaction. */
export type TxpoolContent = {
  pending: Record<string, Record<string, { hash: Hex }>>
  queued: Record<string, Record<string, { hash: Hex }>>
}

const hex = (n: number | bigint): Hex => `0x${n.toString(16)}`

/** Identity of the pending simulation's inputs: the head it builds on and the executable pool. */
export function poolKey(headHash: Hex, pool: TxpoolContent): string {
  const hashes = Object.values(pool.pending).flatMap((byNonce) => Object.values(byNonce).map((tx) => tx.hash))
  return `${headHash}:${hashes.sort().join(',')}`
}

/**
 * Timestamp of the next block, fixed when the pending block opens so every pre-confirmed answer and the
 * mined block agree: the expected mining time, and always after the parent.
 */
export function nextBlockTimestamp(parameters: { parentTimestamp: bigint; nowMs: number; blockTimeMs: number }): bigint {
  const expected = BigInt(Math.floor((parameters.nowMs + parameters.blockTimeMs) / 1000))
  return expected > parameters.parentTimestamp ? expected : parameters.parentTimestamp + 1n
}

/** Index of the first contract creation, or -1 (anvil 1.7's `eth_simulateV1` cannot simulate creations). */
export function firstCreationIndex(transactions: PendingTransaction[]): number {
  return transactions.findIndex((tx) => !tx.to)
}

/** `eth_simulateV1` parameters that replay `transactions` as the pending block on top of its parent. */
export function simulationParams(block: PendingBlock, transactions: PendingTransaction[]): unknown[] {
  const calls = transactions.map((tx) => {
    const fees =
      tx.maxFeePerGas !== undefined
        ? { maxFeePerGas: tx.maxFeePerGas, maxPriorityFeePerGas: tx.maxPriorityFeePerGas }
        : { gasPrice: tx.gasPrice }
    return {
      from: tx.from,
      ...(tx.to ? { to: tx.to } : {}),
      input: tx.input,
      value: tx.value,
      gas: tx.gas,
      nonce: tx.nonce,
      ...fees,
      ...(tx.accessList?.length ? { accessList: tx.accessList } : {}),
      ...(tx.authorizationList?.length ? { authorizationList: tx.authorizationList } : {}),
    }
  })
  const blockOverrides = {
    number: block.number,
    time: block.timestamp,
    gasLimit: block.gasLimit,
    feeRecipient: block.miner,
    ...(block.baseFeePerGas ? { baseFeePerGas: block.baseFeePerGas } : {}),
  }
  return [{ blockStateCalls: [{ blockOverrides, calls }], validation: true, traceTransfers: false }, block.parentHash]
}

/**
 * The logs of a simulated pending block as a Base node serves them: zero block hash, the pending number and
 * timestamp, the real transaction hashes, and `logIndex` cumulative within the block.
 */
export function preconfirmedLogs(block: PendingBlock, calls: SimulatedCall[]): PreconfLog[] {
  const logs: PreconfLog[] = []
  calls.forEach((call, index) => {
    const tx = block.transactions[index]
    if (!tx || call.status !== '0x1') return
    for (const log of call.logs) {
      logs.push({
        address: log.address,
        topics: log.topics,
        data: log.data,
        blockHash: ZERO_HASH,
        blockNumber: block.number,
        blockTimestamp: block.timestamp,
        transactionHash: tx.hash,
        transactionIndex: hex(index),
        logIndex: hex(logs.length),
        removed: false,
      })
    }
  })
  return logs
}

/** `eth_getLogs` filter semantics: any listed address; per position a topic, any of a list, or null for any. */
export function matchesFilter(log: { address: Address; topics: Hex[] }, filter: LogFilter): boolean {
  if (filter.address) {
    const addresses = Array.isArray(filter.address) ? filter.address : [filter.address]
    const address = log.address.toLowerCase()
    if (addresses.length > 0 && !addresses.some((a) => a.toLowerCase() === address)) return false
  }
  const topics = filter.topics ?? []
  // As geth: a log with fewer topics than the filter has positions never matches, even for null positions.
  if (topics.length > log.topics.length) return false
  return topics.every((wanted, position) => {
    if (wanted === null || wanted === undefined) return true
    const topic = log.topics[position]?.toLowerCase()
    if (topic === undefined) return false
    const options = Array.isArray(wanted) ? wanted : [wanted]
    return options.length === 0 || options.some((t) => t.toLowerCase() === topic)
  })
}

/**
 * The logs of `logs` not yet in `seen`, in block order, and adds them to `seen`: the delta a `pendingLogs`
 * subscriber gets. A log is known by block number, transaction and its position within the transaction.
 */
export function takeNewLogs(logs: PreconfLog[], seen: Set<string>): PreconfLog[] {
  const fresh: PreconfLog[] = []
  let previousTx: Hex | undefined
  let indexInTransaction = 0
  for (const log of logs) {
    indexInTransaction = log.transactionHash === previousTx ? indexInTransaction + 1 : 0
    previousTx = log.transactionHash
    const key = `${log.blockNumber}:${log.transactionHash}:${indexInTransaction}`
    if (seen.has(key)) continue
    seen.add(key)
    fresh.push(log)
  }
  return fresh
}

/** A copy of `items` in random order (Fisher–Yates), as older Base builds answer pending logs. */
export function shuffled<T>(items: readonly T[], random: () => number = Math.random): T[] {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[copy[i], copy[j]] = [copy[j] as T, copy[i] as T]
  }
  return copy
}

/** How a pre-confirmation got a transaction's logs wrong: other data, or the transaction swapped with a neighbour. */
export type Divergence = 'data' | 'position'

/** A swap makes two transactions diverge: a third of the chosen swap, and 3/4 of `rate` are chosen. */
const CHOSEN_PER_DIVERGING = 0.75

/**
 * The divergence the node serves for a transaction, or undefined: chosen by the keccak of its hash, so
 * every answer (and a move to the next block) agrees, and about `rate` of the transactions diverge.
 */
export function divergenceOf(transactionHash: Hex, rate: number): Divergence | undefined {
  const digest = keccak256(transactionHash)
  if (Number.parseInt(digest.slice(2, 10), 16) / 2 ** 32 >= rate * CHOSEN_PER_DIVERGING) return undefined
  return Number.parseInt(digest.slice(10, 12), 16) % 3 === 0 ? 'position' : 'data'
}

/** `data` with its last byte flipped (one byte for empty data). */
const flipLastByte = (data: Hex): Hex =>
  data.length <= 2 ? '0xff' : (`${data.slice(0, -2)}${(Number.parseInt(data.slice(-2), 16) ^ 0xff).toString(16).padStart(2, '0')}` as Hex)

type TransactionLogs = { hash: Hex; index: Hex; logs: PreconfLog[] }

/**
 * Pending logs as a pre-confirmation that guessed wrong serves them (see `divergenceOf`): a chosen
 * transaction's logs carry other data, or it trades places (and transaction index) with the next
 * transaction of its block (the previous one when last); `logIndex` stays cumulative per block.
 * `logs` are in block order.
 */
export function divergedLogs(logs: readonly PreconfLog[], rate: number): PreconfLog[] {
  if (rate <= 0) return [...logs]
  const blocks = new Map<Hex, TransactionLogs[]>()
  for (const log of logs) {
    let block = blocks.get(log.blockNumber)
    if (!block) blocks.set(log.blockNumber, (block = []))
    const last = block.at(-1)
    if (last?.hash === log.transactionHash) last.logs.push(log)
    else block.push({ hash: log.transactionHash, index: log.transactionIndex, logs: [log] })
  }
  return [...blocks.values()].flatMap((transactions) => {
    const order = [...transactions]
    const swapped = new Set<number>()
    transactions.forEach((tx, i) => {
      const divergence = divergenceOf(tx.hash, rate)
      if (divergence === undefined || (divergence === 'position' && swapped.has(i))) return
      const partner =
        divergence === 'position' ? [i + 1, i - 1].find((j) => j >= 0 && j < transactions.length && !swapped.has(j)) : undefined
      if (partner === undefined) {
        tx.logs = tx.logs.map((log) => ({ ...log, data: flipLastByte(log.data) }))
        return
      }
      ;[order[i], order[partner]] = [order[partner]!, order[i]!]
      swapped.add(i).add(partner)
    })
    const first = Number(transactions[0]!.logs[0]!.logIndex)
    return order
      .flatMap((tx, position) => tx.logs.map((log) => ({ ...log, transactionIndex: transactions[position]!.index })))
      .map((log, n) => ({ ...log, logIndex: hex(first + n) }))
  })
}

/**
 * A mixed-range answer (`fromBlock` a number, `toBlock` "pending") as a Base node builds it: the canonical
 * logs, then the pending ones, less any pending log whose (blockNumber, logIndex) a canonical log has.
 */
export function mergeCanonicalAndPending<T extends { blockNumber: Hex; logIndex: Hex }>(
  canonical: readonly T[],
  pending: readonly T[],
): T[] {
  const key = (log: T) => `${BigInt(log.blockNumber)}:${BigInt(log.logIndex)}`
  const taken = new Set(canonical.map(key))
  return [...canonical, ...pending.filter((log) => !taken.has(key(log)))]
}
