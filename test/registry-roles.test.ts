/**
 * End to end on anvil: schema-2 roles (an x402-shaped suffix) and the BuilderCodes registry
 * (register, change payout, transfer, and a reorg that undoes a registration), through the daemon,
 * the analytics views and the API.
 */
import { Attribution } from 'ox/erc8021'
import { encodeFunctionData, type Address, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import {
  anvilAccount,
  deployContract,
  encodeEmitMany,
  fixtureClient,
  loadArtifact,
  rawSignedTx,
  sendWithSuffix,
  artifacts,
} from '../harness/fixtures/chain.js'
import { laterSchemaSuffix } from '../harness/fixtures/erc8021-vectors.js'
import { waitFor } from './helpers/compare.js'
import { spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const BuilderCodes = loadArtifact('BuilderCodes')
const OWNER = 1
const NEW_OWNER = 2
const REGISTRAR = 5
const lower = (index: number) => anvilAccount(index).address.toLowerCase()

const cleanups: (() => Promise<unknown>)[] = []
let anvil: Anvil
let db: TestDatabase
let daemon: Spawned
let api: string
let registry: Address
let emitter: Address

const call = (functionName: string, args: readonly unknown[]): Hex => encodeFunctionData({ abi: BuilderCodes.abi, functionName, args })
const send = (from: number, to: Address, data: Hex, suffix?: Hex) =>
  sendWithSuffix(anvil.url, { from, to, data, ...(suffix ? { suffix } : {}) })

type CodeRow = {
  builder_code: string
  source: string
  owner: string | null
  payout_address: string | null
  token_id: string | null
  registered_block: string | null
}
async function builderCodes(): Promise<Map<string, CodeRow>> {
  const { rows } = await db.store.pool.query<CodeRow>(
    `SELECT builder_code, source, owner, payout_address, token_id::text, registered_block::text FROM analytics.builder_codes`,
  )
  return new Map(rows.map((row) => [row.builder_code, row]))
}

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(`${api}${path}`)
  expect(response.status, path).toBe(200)
  return (await response.json()) as T
}

beforeAll(async () => {
  anvil = await startAnvil()
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => anvil.stop(),
    () => db.drop(),
    () => redis.cleanup(),
  )
  registry = await deployContract(anvil.url, BuilderCodes)
  emitter = await deployContract(anvil.url, artifacts.Emitter)
  // Registered before the daemon starts: only the registry's backfill can find it.
  await send(REGISTRAR, registry, call('register', ['seller', lower(OWNER), lower(3)]))
  const port = await freePort()
  api = `http://127.0.0.1:${port}`
  daemon = spawnTs('src/main.ts', [], {
    RPC_URL: anvil.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    // Only the emitter: the registry's events must come through its own filter.
    INDEX_ADDRESSES: emitter,
    BUILDER_CODES_REGISTRY: registry,
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '0',
    PORT: String(port),
  })
  cleanups.push(() => daemon.kill('SIGKILL'))
  await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API', 120_000)
}, 180_000)

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('the BuilderCodes registry and schema-2 roles, end to end', () => {
  it('backfills a registration made before start and follows payout changes and transfers', async () => {
    await waitFor(async () => (await builderCodes()).has('seller'), 'the backfilled registration', 120_000)
    expect((await builderCodes()).get('seller')).toMatchObject({
      source: 'registry',
      owner: lower(OWNER),
      payout_address: lower(3),
      token_id: BigInt(`0x${Buffer.from('seller').toString('hex')}`).toString(),
    })

    await send(OWNER, registry, call('updatePayoutAddress', ['seller', lower(4)]))
    await send(
      OWNER,
      registry,
      call('transferFrom', [lower(OWNER), lower(NEW_OWNER), BigInt(`0x${Buffer.from('seller').toString('hex')}`)]),
    )
    await waitFor(async () => (await builderCodes()).get('seller')?.owner === lower(NEW_OWNER), 'the transfer')
    expect((await builderCodes()).get('seller')).toMatchObject({ owner: lower(NEW_OWNER), payout_address: lower(4) })

    const page = await getJson<{ source: string; registry: { owner: string; payoutAddress: string; tokenId: string } }>(
      '/v1/builder-codes/seller',
    )
    expect(page).toMatchObject({ source: 'registry', registry: { owner: lower(NEW_OWNER), payoutAddress: lower(4) } })
    expect((await fetch(`${api}/v1/builder-codes/nobody_knows`)).status).toBe(404)
  })

  it('an x402 suffix gives three rows in three roles, joined to what the registry knows', async () => {
    const suffix = Attribution.toDataSuffix({
      appCode: 'seller',
      walletCode: 'facilitator',
      serviceCodes: ['client'],
      registries: { app: { address: registry, chainId: 31337 } },
      metadata: { scheme: 'exact' },
    })
    const hash = await send(6, emitter, encodeEmitMany(1, 1, '0x'), suffix)
    await send(6, emitter, encodeEmitMany(1, 2, '0x'), laterSchemaSuffix(3, 'cafe'))

    type Item = {
      txHash: string
      builderCode: string
      role: string | null
      registry: { address: string; chainId: string } | null
      codes: string[]
    }
    await waitFor(async () => (await getJson<{ items: Item[] }>(`/v1/attributions`)).items.length === 3, 'the three attributions')
    const { items } = await getJson<{ items: Item[] }>(`/v1/attributions`)
    expect(items.map((item) => [item.txHash, item.builderCode, item.role, item.registry]).sort()).toEqual(
      [
        [hash, 'client', 'service', null],
        [hash, 'facilitator', 'wallet', null],
        [hash, 'seller', 'app', { address: registry.toLowerCase(), chainId: '31337' }],
      ].sort(),
    )
    const services = await getJson<{ items: Item[] }>(`/v1/attributions?role=service`)
    expect(services.items.map((item) => item.builderCode)).toEqual(['client'])

    const { rows } = await db.store.pool.query(
      `SELECT builder_code, role, registered, code_owner, payout_address FROM analytics.attributed_transactions WHERE tx_hash = $1 ORDER BY role`,
      [hash],
    )
    expect(rows).toEqual([
      { builder_code: 'seller', role: 'app', registered: true, code_owner: lower(NEW_OWNER), payout_address: lower(4) },
      { builder_code: 'client', role: 'service', registered: false, code_owner: null, payout_address: null },
      { builder_code: 'facilitator', role: 'wallet', registered: false, code_owner: null, payout_address: null },
    ])
    const { rows: decoded } = await db.store.pool.query(
      `SELECT schema_id, codes, cbor->'metadata' AS metadata FROM transactions WHERE hash = $1`,
      [hash],
    )
    expect(decoded).toEqual([{ schema_id: 2, codes: ['seller', 'facilitator', 'client'], metadata: { scheme: 'exact' } }])

    const stats = await getJson<{ registry: { owner: string }; total: { attributions: number; roles: unknown[] } }>(
      '/v1/builder-codes/seller/stats?interval=hour',
    )
    expect(stats.registry).toMatchObject({ owner: lower(NEW_OWNER) })
    expect(stats.total.roles).toEqual([{ role: 'app', attributions: 1, confirmed: 1, pending: 0 }])
    // The leaderboard splits each code by role the same way.
    const board = await getJson<{ items: { builderCode: string; roles: unknown[] }[] }>('/v1/leaderboard?limit=100')
    const byCode = new Map(board.items.map((item) => [item.builderCode, item.roles]))
    expect(byCode.get('seller')).toEqual([{ role: 'app', attributions: 1, confirmed: 1, pending: 0 }])
    expect(byCode.get('facilitator')).toEqual([{ role: 'wallet', attributions: 1, confirmed: 1, pending: 0 }])
    expect(byCode.get('client')).toEqual([{ role: 'service', attributions: 1, confirmed: 1, pending: 0 }])

    // The schema 3 suffix is stored with its id and no codes, and counted.
    await waitFor(
      async () => (await db.store.pool.query(`SELECT 1 FROM transactions WHERE schema_id = 3`)).rowCount === 1,
      'the schema 3 transaction',
    )
    const { rows: later } = await db.store.pool.query(`SELECT codes, malformed_reason FROM transactions WHERE schema_id = 3`)
    expect(later).toEqual([{ codes: [], malformed_reason: null }])
    expect(await (await fetch(`${api}/metrics`)).text()).toMatch(
      /codetrail_attribution_later_schema_suffixes_total\{[^}]*schema_id="3"[^}]*\} 1/,
    )
  })

  it('a reorg that undoes a registration takes the code back, and the replacing block’s registration in', async () => {
    await send(REGISTRAR, registry, call('register', ['facilitator', lower(OWNER), lower(OWNER)]))
    await waitFor(async () => (await builderCodes()).has('facilitator'), 'the new registration')
    const { rows: before } = await db.store.pool.query(
      `SELECT registered FROM analytics.attributed_transactions WHERE builder_code = 'facilitator'`,
    )
    expect(before).toEqual([{ registered: true }])

    // The replacement takes the registration's nonce, so the orphaned transaction cannot come back.
    const client = fixtureClient(anvil.url)
    const head = await client.getBlockNumber()
    const nonce = await client.getTransactionCount({ address: anvilAccount(REGISTRAR).address, blockNumber: head - 1n })
    const replacement = await rawSignedTx(anvil.url, {
      from: REGISTRAR,
      to: registry,
      data: call('register', ['other_code', lower(OWNER), lower(OWNER)]),
      nonce,
      gas: 300_000n,
    })
    await client.request({ method: 'anvil_reorg', params: [1, [[replacement, 0]]] })

    await waitFor(async () => {
      const codes = await builderCodes()
      return !codes.has('facilitator') && codes.has('other_code')
    }, 'the reorg to be repaired')
    const { rows: removed } = await db.store.pool.query(
      `SELECT count(*)::int AS n FROM logs WHERE address = $1 AND removed AND block_number = $2`,
      [registry.toLowerCase(), Number(head)],
    )
    expect(removed[0].n).toBe(3)
    const { rows: after } = await db.store.pool.query(
      `SELECT registered FROM analytics.attributed_transactions WHERE builder_code = 'facilitator'`,
    )
    expect(after).toEqual([{ registered: false }])
    expect((await builderCodes()).get('seller')).toMatchObject({ owner: lower(NEW_OWNER) })
  })

  it('the read-only role may read the new view', async () => {
    const { rows } = await db.store.pool.query(
      `SELECT has_table_privilege('analytics_reader', 'analytics.builder_codes', 'SELECT') AS codes,
              has_table_privilege('analytics_reader', 'public.logs', 'SELECT') AS logs`,
    )
    expect(rows).toEqual([{ codes: true, logs: false }])
  })
})
