/** Chains, environments and waits shared by the fault cases. */
import type pg from 'pg'
import { concat, type Address, type Hex } from 'viem'
import { Attribution } from 'ox/erc8021'
import { anvilAccount, buildChain, encodeEmitMany, fixtureClient, type BuildChainParameters } from '../../../harness/fixtures/chain.js'
import { waitFor } from '../../helpers/compare.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL } from '../../../harness/services.js'
import { rpcCall } from './nodeCompare.js'

export const CHAIN_ID = 31337

/** Builder codes the fixtures' suffixes carry. */
export const CODES = ['bc_faults1', 'bc_faults2', 'bc_faults3', 'bc_app', 'bc_wallet'] as const

/**
 * The ERC-8021 suffix of fixture transaction `i`: schema 0 with one code, schema 0 with two codes,
 * schema 2 (CBOR app and wallet codes), or none, in turn.
 */
export function suffixFor(i: number): Hex | undefined {
  switch (i % 4) {
    case 0:
      return Attribution.toDataSuffix({ codes: [CODES[i % 3]!] })
    case 1:
      return Attribution.toDataSuffix({ codes: [CODES[0], CODES[(i % 2) + 1]!] })
    case 2:
      return Attribution.toDataSuffix({ appCode: CODES[3], walletCode: CODES[4] })
    default:
      return undefined
  }
}

/** `buildChain` whose transactions carry {@link suffixFor} suffixes (three in four are attributed). */
export function buildAttributedChain(rpcUrl: string, parameters: Omit<BuildChainParameters, 'suffix'>, offset = 0) {
  return buildChain(rpcUrl, { largeDataEvery: 0, ...parameters, suffix: (i) => suffixFor(i + offset) })
}

const GWEI = 1_000_000_000n

/**
 * A signed `emitMany` call (for the node's own chain id) with a one-code suffix, for `anvil_reorg` replacements and pending transactions.
 * `tipGwei` above the fixtures' 1 gwei puts it ahead of them in the next block.
 */
export async function attributedCall(
  rpcUrl: string,
  parameters: { from: number; emitter: Address; logs: number; seq: number; code: string; nonce?: number; tipGwei?: bigint },
): Promise<Hex> {
  const client = fixtureClient(rpcUrl)
  const account = anvilAccount(parameters.from)
  const tip = (parameters.tipGwei ?? 1n) * GWEI
  const [chainId, nonce, latest] = await Promise.all([
    client.getChainId(),
    parameters.nonce ?? client.getTransactionCount({ address: account.address, blockTag: 'pending' }),
    client.getBlock({ blockTag: 'latest' }),
  ])
  return account.signTransaction({
    type: 'eip1559',
    chainId,
    nonce,
    to: parameters.emitter,
    data: concat([encodeEmitMany(parameters.logs, parameters.seq, '0x5eed'), Attribution.toDataSuffix({ codes: [parameters.code] })]),
    gas: 400_000n,
    maxFeePerGas: (latest.baseFeePerGas ?? 0n) * 2n + tip,
    maxPriorityFeePerGas: tip,
  })
}

export async function mineEmpty(rpcUrl: string, blocks: number) {
  await rpcCall(rpcUrl, 'anvil_mine', [`0x${blocks.toString(16)}`])
}

export async function nodeHead(rpcUrl: string): Promise<{ number: number; hash: string }> {
  const block = await fixtureClient(rpcUrl).getBlock({ blockTag: 'latest' })
  return { number: Number(block.number), hash: block.hash }
}

/** Waits until the head follower (of chain `chainId`, where the database holds several) has stored the node's current head (same number and hash). */
export async function waitCaughtUp(pool: pg.Pool, rpcUrl: string, timeoutMs = 90_000, chainId?: number) {
  await waitFor(
    async () => {
      const [node, { rows }] = await Promise.all([
        nodeHead(rpcUrl),
        pool.query('SELECT live_block, live_hash FROM chain_state WHERE $1::int IS NULL OR chain_id = $1', [chainId ?? null]),
      ])
      return rows[0]?.live_block === node.number && rows[0]?.live_hash === node.hash
    },
    'the follower to reach the head',
    timeoutMs,
    100,
  )
}

export type Cleanups = { add: (...cleanups: (() => Promise<unknown>)[]) => void; run: () => Promise<void> }

/** Cleanups run last-in first-out; each failure is ignored so the others still run. */
export function createCleanups(): Cleanups {
  const list: (() => Promise<unknown>)[] = []
  return {
    add: (...cleanups) => list.push(...cleanups),
    run: async () => {
      for (const cleanup of list.splice(0).reverse()) await cleanup().catch(() => {})
    },
  }
}

/**
 * A fresh database on the shared server and a Redis prefix of its own, and the environment a daemon
 * or the backfill needs against `rpcUrl`.
 */
export async function sharedEnvironment(cleanups: Cleanups, rpcUrl: string, extra: Record<string, string> = {}) {
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.add(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const env: Record<string, string> = {
    RPC_URL: rpcUrl,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    JOB_LOCK_MS: '2000',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '0',
    ...extra,
  }
  return { pool: db.store.pool, env }
}

export { seededRandom } from '../../../harness/random.js'

/** The run's seed: `FAULT_SEED`, else the clock; tests print it so a failure can be replayed. */
export function runSeed(): number {
  return process.env.FAULT_SEED ? Number(process.env.FAULT_SEED) : Date.now() % 2 ** 31
}
