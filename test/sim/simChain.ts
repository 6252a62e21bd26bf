/**
 * The seed's chain on the devnet (anvil behind the pre-confirmed layer): contracts, blocks of plain,
 * suffixed and user-operation traffic, reorgs with replacement transactions, and pre-confirmed
 * transactions that are dropped or move. Everything here talks to the devnet directly, never through
 * the fault proxy the indexer's processes use.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { concat, type Address, type Hash, type Hex } from 'viem'
import type { Devnet } from '../../harness/devnet/index.js'
import { anvilAccount, artifacts, chainPayload, deployContract, encodeEmitMany, fixtureClient, rawSignedTx } from '../../harness/fixtures/chain.js'
import { createSmartAccount, deployEntryPoints, encodeExecute, sendHandleOps, type SmartAccount } from '../../harness/fixtures/entryPoint.js'
import { attributedCall, seededRandom, suffixFor } from '../faults/helpers/faultChain.js'
import { rpcCall } from '../faults/helpers/nodeCompare.js'
import { ACCOUNTS_PER_VERSION, ENTRY_POINT_VERSIONS, type Action, type BlockPlan, type EntryPointVersion } from './schedule.js'

/** Anvil accounts by role: plain traffic, reorg replacements, pre-confirmed churn, the bundler. */
const TRAFFIC_SENDERS = [1, 2, 3, 4, 5, 6]
const REPLACER = 7
const PENDING_SENDER = 8
const BUNDLER = 9
/** Sends the transaction that overtakes a moved pre-confirmed one. */
const OVERTAKER = 0
/** Enough for `emitMany` of 10 logs with a 4 KiB payload; below it anvil would drop the transaction silently. */
const TX_GAS = 1_000_000n
/** Long enough for the pending poller (100 ms) to see a pool transaction on the pre-confirmed layer (200 ms refresh). */
const SEEN_PENDING_MS = 600

export type SimChain = Awaited<ReturnType<typeof createSimChain>>

/**
 * Deploys `emitters` Emitters, the three EntryPoints and smart accounts (with automine on, then off:
 * from here on only `mine` mines).
 */
export async function createSimChain(devnet: Devnet, emitterCount: number, log: (line: string) => void) {
  const url = devnet.url
  const client = fixtureClient(url)
  await fixtureClient(devnet.anvilUrl).setAutomine(true)
  const emitters: Address[] = []
  for (let i = 0; i < emitterCount; i++) emitters.push(await deployContract(url, artifacts.Emitter))
  const entryPoints = await deployEntryPoints(url)
  const accounts = {} as Record<EntryPointVersion, SmartAccount[]>
  for (const version of ENTRY_POINT_VERSIONS) {
    accounts[version] = []
    for (let i = 0; i < ACCOUNTS_PER_VERSION; i++) accounts[version].push(await createSmartAccount(url, { version, owner: 1 + i, salt: BigInt(i) }))
  }
  await fixtureClient(devnet.anvilUrl).setAutomine(false)
  const deployedTop = Number(await client.getBlockNumber())
  let seq = 0
  const nextSeq = (logs: number) => (seq += Math.max(logs, 1))

  const head = async () => Number(await client.getBlockNumber())

  /** Sends the block's transactions, leaves them pre-confirmed for `pendingMs`, mines them. */
  async function mineBlock(plan: BlockPlan): Promise<number> {
    const sent: Hash[] = []
    for (const [j, tx] of plan.txs.entries()) {
      const raw = await rawSignedTx(url, {
        from: TRAFFIC_SENDERS[j % TRAFFIC_SENDERS.length]!,
        to: emitters[tx.emitter]!,
        data: encodeEmitMany(tx.logs, nextSeq(tx.logs), chainPayload(tx.payload, 5)),
        suffix: suffixFor(tx.suffix),
        gas: TX_GAS,
      })
      sent.push(await client.sendRawTransaction({ serializedTransaction: raw }))
    }
    if (plan.bundle) {
      const { version, ops } = plan.bundle
      const userOps = ops.map((op) => ({
        account: accounts[version][op.account]!,
        callData: concat([encodeExecute({ to: emitters[op.emitter]!, data: encodeEmitMany(op.logs, nextSeq(op.logs), '0x') }), suffixFor(op.suffix) ?? '0x']),
      }))
      sent.push(await sendHandleOps(url, { version, ops: userOps, beneficiary: anvilAccount(BUNDLER).address, bundler: BUNDLER, wait: false }))
    }
    if (plan.pendingMs > 0) await sleep(plan.pendingMs)
    const mined = await devnet.mine()
    const block = await client.getBlock({ blockHash: mined.hash })
    const missing = sent.filter((hash) => !block.transactions.includes(hash))
    if (missing.length > 0) log(`block ${mined.number}: ${missing.length} sent transaction(s) not mined: ${missing.join(', ')}`)
    return Number(mined.number)
  }

  /**
   * The orphaned transactions that come back on the new fork, at their block or one later, in their
   * order (so each sender's nonces stay in sequence); a sender's transactions all come back or all vanish.
   */
  async function reincluded(fork: number, depth: number, action: Extract<Action, { type: 'reorg' }>) {
    const random = seededRandom(action.salt)
    // The replacer's orphaned transactions vanish: its new ones take their nonces.
    const kept = new Map<string, boolean>([[anvilAccount(REPLACER).address.toLowerCase(), false]])
    const list: { transaction: Hex; blockOffset: number }[] = []
    let offset = 0
    for (let n = fork + 1; n <= fork + depth; n++) {
      const block = await client.getBlock({ blockNumber: BigInt(n), includeTransactions: true })
      for (const tx of block.transactions) {
        const from = tx.from.toLowerCase()
        if (!kept.has(from)) kept.set(from, random() < action.keep)
        if (!kept.get(from)) continue
        offset = Math.min(depth - 1, Math.max(offset, n - fork - 1 + (random() < 0.3 ? 1 : 0)))
        list.push({ transaction: await rpcCall<Hex>(url, 'eth_getRawTransactionByHash', [tx.hash]), blockOffset: offset })
      }
    }
    return list
  }

  /**
   * `anvil_reorg` of the last `depth` blocks (never reaching the deployments): orphaned transactions
   * re-included or not, and new attributed ones; `beforeReorg` runs once the fork point is known and the old blocks still stand.
   */
  async function reorg(
    action: Extract<Action, { type: 'reorg' }>,
    beforeReorg: (fork: number, head: number) => Promise<void>,
  ): Promise<{ fork: number; depth: number; replacements: number } | undefined> {
    const top = await head()
    const depth = Math.min(action.depth, top - deployedTop - 1)
    if (depth < 1) return undefined
    const fork = top - depth
    const replacements = await reincluded(fork, depth, action)
    let nonce = await client.getTransactionCount({ address: anvilAccount(REPLACER).address, blockNumber: BigInt(fork) })
    for (const r of action.replacements) {
      const transaction = await attributedCall(url, { from: REPLACER, emitter: emitters[r.emitter]!, logs: r.logs, seq: nextSeq(r.logs), code: 'bc_sim_reorg', nonce: nonce++ })
      replacements.push({ transaction, blockOffset: Math.min(r.offset, depth - 1) })
    }
    await beforeReorg(fork, top)
    await devnet.reorg(depth, replacements)
    return { fork, depth, replacements: replacements.length }
  }

  /**
   * A pre-confirmed transaction that is dropped (never mined), or that is dropped, then sent again
   * behind a transaction that overtakes it, so it is mined a block later at another index.
   */
  async function pendingChurn(action: Extract<Action, { type: 'pending' }>): Promise<string> {
    const emitter = emitters[action.emitter]!
    const raw = await attributedCall(url, { from: PENDING_SENDER, emitter, logs: action.logs, seq: nextSeq(action.logs), code: `bc_sim_${action.kind}` })
    const hash = await client.sendRawTransaction({ serializedTransaction: raw })
    await sleep(SEEN_PENDING_MS)
    await devnet.dropTransaction(hash)
    const announced = await devnet.mine()
    if (action.kind === 'dropped') return `${hash} announced for block ${announced.number}, dropped`
    const overtaker = await attributedCall(url, { from: OVERTAKER, emitter, logs: 2, seq: nextSeq(2), code: 'bc_sim_overtaker', tipGwei: 5n })
    await client.sendRawTransaction({ serializedTransaction: raw })
    await client.sendRawTransaction({ serializedTransaction: overtaker })
    await sleep(SEEN_PENDING_MS)
    const mined = await devnet.mine()
    return `${hash} announced for block ${announced.number}, mined in block ${mined.number} behind an overtaking transaction`
  }

  /** Mines whatever the pool still holds, then `count` empty blocks. */
  async function mineEmpty(count: number) {
    await devnet.mine()
    await rpcCall(url, 'anvil_mine', [`0x${count.toString(16)}`])
  }

  return {
    emitters,
    entryPoints: ENTRY_POINT_VERSIONS.map((version) => entryPoints[version].entryPoint),
    deployedTop,
    head,
    mineBlock,
    reorg,
    pendingChurn,
    mineEmpty,
  }
}
