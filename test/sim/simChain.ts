/**
 * The seed's chain on the devnet (anvil behind the pre-confirmed layer): contracts, blocks of plain,
 * suffixed and user-operation traffic, reorgs with replacement transactions, and pre-confirmed
 * transactions that are dropped or move. Everything here talks to the devnet directly, never through
 * the fault proxy the indexer's processes use.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { concat, encodeFunctionData, type Address, type Hash, type Hex } from 'viem'
import { DEPOSITOR, type Devnet } from '../../harness/devnet/index.js'
import {
  anvilAccount,
  artifacts,
  chainPayload,
  deployContract,
  encodeEmitMany,
  fixtureClient,
  loadArtifact,
  rawSignedTx,
} from '../../harness/fixtures/chain.js'
import {
  createEip7702Account,
  createSmartAccount,
  deployEntryPoints,
  encodeExecute,
  sendHandleOps,
  type SmartAccount,
} from '../../harness/fixtures/entryPoint.js'
import { attributedCall, seededRandom, suffixFor } from '../faults/helpers/faultChain.js'
import { rpcCall } from '../faults/helpers/nodeCompare.js'
import {
  ACCOUNTS_PER_VERSION,
  EIP7702_ACCOUNT,
  ENTRY_POINT_VERSIONS,
  type Action,
  type BlockPlan,
  type EntryPointVersion,
} from './schedule.js'

const BuilderCodes = loadArtifact('BuilderCodes')
const REGISTRY_GAS = 300_000n
/** The payout addresses and new owners registry calls name. */
const otherAddress = (n: number) => `0x${(0xb0c0de00 + n).toString(16).padStart(40, '0')}` as Address

/** Anvil accounts by role: plain traffic, reorg replacements (and the registry's owner), pre-confirmed churn, the bundler. */
const TRAFFIC_SENDERS = [1, 2, 3, 4, 5, 6]
const REPLACER = 7
const PENDING_SENDER = 8
const BUNDLER = 9
/** Sends the transaction that overtakes a moved pre-confirmed one. */
const OVERTAKER = 0
/** The EOA delegated with EIP-7702 (beyond anvil's ten funded accounts: it sends nothing itself). */
const EIP7702_OWNER = 10
/** Owns the registry's code 0 (beyond anvil's ten funded accounts); code 1 is the replacer's, so a reorg undoes its registration. */
const REGISTRY_OWNER = 11
const FUNDING_WEI = 10n ** 20n
/** Enough for `emitMany` of 10 logs with a 4 KiB payload; below it anvil would drop the transaction silently. */
const TX_GAS = 1_000_000n
/** Long enough for the pending poller (100 ms) to see a pool transaction on the pre-confirmed layer (200 ms refresh). */
const SEEN_PENDING_MS = 600

export type SimChain = Awaited<ReturnType<typeof createSimChain>>

/**
 * Deploys `emitters` Emitters, the three EntryPoints, smart accounts and an EIP-7702 account on v0.8 (on
 * anvil itself with automine on, then off: from here on only `mine` mines). Transactions go through the
 * devnet's endpoint; what was mined is read from anvil, whose head a lagging canonical chain trails.
 */
export async function createSimChain(devnet: Devnet, emitterCount: number, log: (line: string) => void) {
  // Nonces and state are read from anvil (a lagging endpoint would serve them stale); transactions go through the devnet.
  const url = devnet.anvilUrl
  const client = fixtureClient(devnet.url)
  const node = fixtureClient(url)
  await node.setAutomine(true)
  const emitters: Address[] = []
  for (let i = 0; i < emitterCount; i++) emitters.push(await deployContract(url, artifacts.Emitter))
  const entryPoints = await deployEntryPoints(url)
  const accounts = {} as Record<EntryPointVersion, SmartAccount[]>
  for (const version of ENTRY_POINT_VERSIONS) {
    accounts[version] = []
    for (let i = 0; i < ACCOUNTS_PER_VERSION; i++)
      accounts[version].push(await createSmartAccount(url, { version, owner: 1 + i, salt: BigInt(i) }))
  }
  const registry = await deployContract(url, BuilderCodes)
  for (const account of [EIP7702_OWNER, REGISTRY_OWNER])
    await node.setBalance({ address: anvilAccount(account).address, value: FUNDING_WEI })
  accounts['0.8'][EIP7702_ACCOUNT] = await createEip7702Account(url, { owner: EIP7702_OWNER })
  await node.setAutomine(false)
  // A chain change through the devnet makes it pick up the head the deployments left (`base` stamps the next block after it).
  await rpcCall(devnet.url, 'anvil_dropAllTransactions', [])
  // The deployments become canonical at the devnet's endpoint only once its lagging chain has passed them.
  if (devnet.canonicalLag > 0) await rpcCall(devnet.url, 'anvil_mine', [`0x${devnet.canonicalLag.toString(16)}`])
  const deployedTop = Number(await node.getBlockNumber())
  let seq = 0
  const nextSeq = (logs: number) => (seq += Math.max(logs, 1))

  /** The head as the indexer's node serves it (a lagging canonical chain's, below anvil's). */
  const head = async () => Number(await client.getBlockNumber())
  const anvilHead = async () => Number(await node.getBlockNumber())

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
        callData: concat([
          encodeExecute({ to: emitters[op.emitter]!, data: encodeEmitMany(op.logs, nextSeq(op.logs), '0x') }),
          suffixFor(op.suffix) ?? '0x',
        ]),
      }))
      sent.push(
        await sendHandleOps(url, { version, ops: userOps, beneficiary: anvilAccount(BUNDLER).address, bundler: BUNDLER, wait: false }),
      )
    }
    if (plan.pendingMs > 0) await sleep(plan.pendingMs)
    const mined = await devnet.mine()
    const block = await node.getBlock({ blockHash: mined.hash })
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
      const block = await node.getBlock({ blockNumber: BigInt(n), includeTransactions: true })
      for (const tx of block.transactions) {
        const from = tx.from.toLowerCase()
        // System deposits (`base`): the devnet opens every block of the new fork with its own.
        if (from === DEPOSITOR.toLowerCase()) continue
        if (!kept.has(from)) kept.set(from, random() < action.keep)
        if (!kept.get(from)) continue
        offset = Math.min(depth - 1, Math.max(offset, n - fork - 1 + (random() < 0.3 ? 1 : 0)))
        list.push({ transaction: await rpcCall<Hex>(url, 'eth_getRawTransactionByHash', [tx.hash]), blockOffset: offset })
      }
    }
    return list
  }

  /**
   * `anvil_reorg` of the last `depth` blocks of the canonical chain (never reaching the deployments; on a
   * lagging chain the blocks still only pending above it are replaced too): orphaned transactions
   * re-included or not, and new attributed ones; `beforeReorg` runs once the fork point is known and the old blocks still stand.
   */
  async function reorg(
    action: Extract<Action, { type: 'reorg' }>,
    beforeReorg: (fork: number, head: number) => Promise<void>,
  ): Promise<{ fork: number; depth: number; replacements: number } | undefined> {
    const top = await anvilHead()
    const depth = Math.min(action.depth + devnet.canonicalLag, top - deployedTop - 1)
    if (depth < 1) return undefined
    const fork = top - depth
    const replacements = await reincluded(fork, depth, action)
    let nonce = await node.getTransactionCount({ address: anvilAccount(REPLACER).address, blockNumber: BigInt(fork) })
    for (const r of action.replacements) {
      const transaction = await attributedCall(url, {
        from: REPLACER,
        emitter: emitters[r.emitter]!,
        logs: r.logs,
        seq: nextSeq(r.logs),
        code: 'bc_sim_reorg',
        nonce: nonce++,
      })
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
    const raw = await attributedCall(url, {
      from: PENDING_SENDER,
      emitter,
      logs: action.logs,
      seq: nextSeq(action.logs),
      code: `bc_sim_${action.kind}`,
    })
    const hash = await client.sendRawTransaction({ serializedTransaction: raw })
    await sleep(SEEN_PENDING_MS)
    await devnet.dropTransaction(hash)
    const announced = await devnet.mine()
    if (action.kind === 'dropped') return `${hash} announced for block ${announced.number}, dropped`
    const overtaker = await attributedCall(url, {
      from: OVERTAKER,
      emitter,
      logs: 2,
      seq: nextSeq(2),
      code: 'bc_sim_overtaker',
      tipGwei: 5n,
    })
    await client.sendRawTransaction({ serializedTransaction: raw })
    await client.sendRawTransaction({ serializedTransaction: overtaker })
    await sleep(SEEN_PENDING_MS)
    const mined = await devnet.mine()
    return `${hash} announced for block ${announced.number}, mined in block ${mined.number} behind an overtaking transaction`
  }

  /**
   * A registry call by the code's owner, mined at once. Code 1's owner is the replacer, whose transactions
   * vanish in a reorg, so the reorg right after its registration undoes it. A call the registry refuses
   * (its registration undone) reverts, logging nothing.
   */
  let registryCalls = 0
  async function registryCall(action: Extract<Action, { type: 'registry' }>): Promise<string> {
    const code = `sim_code_${action.code}`
    const sender = action.code === 0 ? REGISTRY_OWNER : REPLACER
    const owner = anvilAccount(sender).address
    const n = ++registryCalls
    const data =
      action.call === 'register'
        ? encodeFunctionData({ abi: BuilderCodes.abi, functionName: 'register', args: [code, owner, otherAddress(n)] })
        : action.call === 'payout'
          ? encodeFunctionData({ abi: BuilderCodes.abi, functionName: 'updatePayoutAddress', args: [code, otherAddress(n)] })
          : encodeFunctionData({
              abi: BuilderCodes.abi,
              functionName: 'transferFrom',
              args: [
                owner,
                otherAddress(n),
                await node.readContract({ address: registry, abi: BuilderCodes.abi, functionName: 'toTokenId', args: [code] }),
              ],
            })
    const hash = await client.sendRawTransaction({
      serializedTransaction: await rawSignedTx(url, { from: sender, to: registry, data, gas: REGISTRY_GAS }),
    })
    const mined = await devnet.mine()
    const receipt = await node.getTransactionReceipt({ hash })
    return `${action.call} ${code} in block ${mined.number}: ${receipt.status}`
  }

  /** Mines whatever the pool still holds, then `count` empty blocks. */
  async function mineEmpty(count: number) {
    await devnet.mine()
    await rpcCall(devnet.url, 'anvil_mine', [`0x${count.toString(16)}`])
  }

  return {
    emitters,
    registry,
    registryCall,
    entryPoints: ENTRY_POINT_VERSIONS.map((version) => entryPoints[version].entryPoint),
    deployedTop,
    head,
    mineBlock,
    reorg,
    pendingChurn,
    mineEmpty,
  }
}
