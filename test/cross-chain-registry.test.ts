/**
 * End to end on two anvils in one deployment: schema-1 suffixes on chain A naming a registry on chain B
 * (B's indexed BuilderCodes registry, and a registry B does not index, asked on B's node), one naming a
 * chain the deployment does not index, and a reorg of B that removes a registration A's row was verified
 * against.
 */
import { Attribution } from 'ox/erc8021'
import { encodeFunctionData, type Address, type Hash, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import {
  anvilAccount,
  artifacts,
  deployContract,
  encodeEmitMany,
  fixtureClient,
  loadArtifact,
  rawSignedTx,
  sendWithSuffix,
} from '../harness/fixtures/chain.js'
import { spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'
import { waitFor } from './helpers/compare.js'
import { writeConfigFile } from './helpers/configFile.js'

const CHAIN_A = 10_101
const CHAIN_B = 20_202
/** A chain this deployment does not index. */
const UNCONFIGURED_CHAIN = 30_303
const BuilderCodes = loadArtifact('BuilderCodes')
const REGISTRAR = 5
const SENDER = 3

const cleanups: (() => Promise<unknown>)[] = []
let anvilA: Anvil
let anvilB: Anvil
let db: TestDatabase
let daemon: Spawned
let api: string
/** B's BuilderCodes registry, indexed by the deployment. */
let indexedRegistry: Address
/** A registry on B the deployment does not index: answered by `isRegistered` on B's node. */
let calledRegistry: Address
let emitter: Address
let seq = 0

const registryCall = (functionName: string, args: readonly unknown[]): Hex =>
  encodeFunctionData({ abi: BuilderCodes.abi, functionName, args })
const register = (code: string) => registryCall('register', [code, anvilAccount(REGISTRAR).address, anvilAccount(REGISTRAR).address])

/** A transaction on A emitting one log, with a schema-1 suffix naming `registry` on `chainId` (or none). */
async function sendOnA(codes: string[], registry?: { address: Address; chainId: number }): Promise<Hash> {
  return sendWithSuffix(anvilA.url, {
    from: SENDER,
    to: emitter,
    data: encodeEmitMany(1, seq++, '0x'),
    ...(registry ? { suffix: Attribution.toDataSuffix({ codes, codeRegistry: registry }) } : {}),
  })
}

type RegistryState = { registry_verified: boolean | null; registry_unverified_reason: string | null }
async function registryStateOf(hash: Hash): Promise<RegistryState | undefined> {
  const { rows } = await db.store.pool.query<RegistryState>(
    `SELECT registry_verified, registry_unverified_reason FROM transactions WHERE chain_id = $1 AND hash = $2`,
    [CHAIN_A, hash],
  )
  return rows[0]
}

async function registryCodesOfB(): Promise<Set<string>> {
  const { rows } = await db.store.pool.query<{ builder_code: string }>(`SELECT builder_code FROM registry_codes WHERE chain_id = $1`, [
    CHAIN_B,
  ])
  return new Set(rows.map((row) => row.builder_code))
}

/** `isRegistered` calls the deployment sent to B's node so far. */
async function ethCallsOnB(): Promise<number> {
  const metrics = await (await fetch(`${api}/metrics`)).text()
  const line = new RegExp(`^codetrail_rpc_calls_total\\{chain_id="${CHAIN_B}",method="eth_call"\\} (\\d+)`, 'm').exec(metrics)
  return Number(line?.[1] ?? 0)
}

beforeAll(async () => {
  ;[anvilA, anvilB] = await Promise.all([startAnvil({ chainId: CHAIN_A }), startAnvil({ chainId: CHAIN_B })])
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => anvilA.stop(),
    () => anvilB.stop(),
    () => db.drop(),
    () => redis.cleanup(),
  )
  ;[indexedRegistry, calledRegistry, emitter] = await Promise.all([
    deployContract(anvilB.url, BuilderCodes),
    deployContract(anvilB.url, artifacts.CodeRegistry, [], 1),
    deployContract(anvilA.url, artifacts.Emitter),
  ])
  // Registered before the daemon starts: B's registry backfill finds it.
  await sendWithSuffix(anvilB.url, { from: REGISTRAR, to: indexedRegistry, data: register('xreg_listed') })
  await sendWithSuffix(anvilB.url, {
    from: 1,
    to: calledRegistry,
    data: encodeFunctionData({ abi: artifacts.CodeRegistry.abi, functionName: 'register', args: ['xreg_called'] }),
  })

  const configFile = writeConfigFile(
    [
      'chains:',
      `  - { id: ${CHAIN_A}, name: alpha, rpc: "${anvilA.url}", startBlock: 0, headPollMs: 100, pendingPollMs: 0 }`,
      `  - { id: ${CHAIN_B}, name: beta, rpc: "${anvilB.url}", startBlock: 0, headPollMs: 100, pendingPollMs: 0,`,
      `      registry: { address: "${indexedRegistry}", startBlock: 0 } }`,
      '',
    ].join('\n'),
  )
  const port = await freePort()
  api = `http://127.0.0.1:${port}`
  daemon = spawnTs('src/main.ts', ['--config', configFile], {
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    PORT: String(port),
    LOG_LEVEL: 'info',
  })
  cleanups.push(() => daemon.kill('SIGKILL'))
  await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API', 120_000)
  await waitFor(async () => (await registryCodesOfB()).has('xreg_listed'), "B's registry backfill", 120_000)
}, 240_000)

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('a schema-1 suffix naming a registry on another chain', () => {
  it("is resolved against that chain's indexed registry, else its node (cached), and unknown with the reason where the chain is not configured", async () => {
    // B indexes this registry: answered from its events, B's node never asked.
    const listed = await sendOnA(['xreg_listed'], { address: indexedRegistry, chainId: CHAIN_B })
    await waitFor(async () => (await registryStateOf(listed)) !== undefined, 'the listed code')
    expect(await registryStateOf(listed)).toEqual({ registry_verified: true, registry_unverified_reason: null })
    expect(await ethCallsOnB()).toBe(0)

    const [unlisted, called, unconfigured] = [
      await sendOnA(['xreg_unlisted'], { address: indexedRegistry, chainId: CHAIN_B }),
      await sendOnA(['xreg_called'], { address: calledRegistry, chainId: CHAIN_B }),
      await sendOnA(['xreg_listed'], { address: indexedRegistry, chainId: UNCONFIGURED_CHAIN }),
    ]
    await waitFor(async () => (await registryStateOf(unconfigured)) !== undefined, 'the three transactions')
    expect(await registryStateOf(unlisted)).toEqual({ registry_verified: false, registry_unverified_reason: null })
    expect(await registryStateOf(called)).toEqual({ registry_verified: true, registry_unverified_reason: null })
    expect(await registryStateOf(unconfigured)).toEqual({ registry_verified: null, registry_unverified_reason: 'chain_not_configured' })

    // The node's answer for the registry B does not index is kept: the same code again asks nothing.
    const callsBefore = await ethCallsOnB()
    expect(callsBefore).toBeGreaterThan(0)
    const calledAgain = await sendOnA(['xreg_called'], { address: calledRegistry, chainId: CHAIN_B })
    await waitFor(async () => (await registryStateOf(calledAgain)) !== undefined, 'the code asked again')
    expect(await registryStateOf(calledAgain)).toEqual({ registry_verified: true, registry_unverified_reason: null })
    expect(await ethCallsOnB()).toBe(callsBefore)

    // The API serves the answer and the reason.
    type Registry = { address: string; chainId: string; verified: boolean | null; unverifiedReason: string | null }
    const registryOf = async (hash: Hash) => {
      const response = await fetch(`${api}/v1/transactions/${hash}/attribution?chainId=${CHAIN_A}`)
      expect(response.status).toBe(200)
      return ((await response.json()) as { suffix: { registry: Registry } }).suffix.registry
    }
    expect(await registryOf(listed)).toEqual({
      address: indexedRegistry.toLowerCase(),
      chainId: String(CHAIN_B),
      verified: true,
      unverifiedReason: null,
    })
    expect(await registryOf(unconfigured)).toEqual({
      address: indexedRegistry.toLowerCase(),
      chainId: String(UNCONFIGURED_CHAIN),
      verified: null,
      unverifiedReason: 'chain_not_configured',
    })
  })

  it("is checked again when a reorg of the registry's chain removes the registration it was verified against", async () => {
    const clientB = fixtureClient(anvilB.url)
    await sendWithSuffix(anvilB.url, { from: REGISTRAR, to: indexedRegistry, data: register('xreg_reorged') })
    await waitFor(async () => (await registryCodesOfB()).has('xreg_reorged'), "B's registration")
    const verified = await sendOnA(['xreg_reorged'], { address: indexedRegistry, chainId: CHAIN_B })
    await waitFor(async () => (await registryStateOf(verified)) !== undefined, 'the transaction naming it')
    expect(await registryStateOf(verified)).toEqual({ registry_verified: true, registry_unverified_reason: null })

    // B's block holding the registration is replaced by one registering another code (same nonce).
    const head = await clientB.getBlockNumber()
    const nonce = await clientB.getTransactionCount({ address: anvilAccount(REGISTRAR).address, blockNumber: head - 1n })
    const replacement = await rawSignedTx(anvilB.url, {
      from: REGISTRAR,
      to: indexedRegistry,
      data: register('xreg_replacing'),
      nonce,
      gas: 300_000n,
    })
    await clientB.request({ method: 'anvil_reorg', params: [1, [[replacement, 0]]] })
    await waitFor(async () => {
      const codes = await registryCodesOfB()
      return !codes.has('xreg_reorged') && codes.has('xreg_replacing')
    }, "B's reorg")
    // Nothing happened on A since: the row waits for A's next pass, marked.
    expect(await registryStateOf(verified)).toEqual({ registry_verified: null, registry_unverified_reason: 'registry_reorg' })

    // A's next attribution asks again at once, and the registry no longer knows the code.
    await sendOnA([])
    await waitFor(async () => (await registryStateOf(verified))?.registry_verified === false, 'the check again')
    expect(await registryStateOf(verified)).toEqual({ registry_verified: false, registry_unverified_reason: null })
  })
})
