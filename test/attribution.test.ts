/**
 * ERC-8021 attribution end to end on anvil: the backfill CLI and the head follower (the daemon) store
 * exactly the attributions the chain carries — schema 0, 1 and 2 suffixes, several codes, malformed
 * suffixes, none, and user operations inside real EntryPoint v0.6/v0.7/v0.8 `handleOps` bundles —
 * in both attribution scopes, and keep them in step with reorgs.
 */
import { Attribution } from 'ox/erc8021'
import { concat, encodeFunctionData, parseEventLogs, type Address, type Hash, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deriveBuilderCode, eip7702Delegate } from '../src/attribution/index.js'
import { createAttributor } from '../src/attribution/attributor.js'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { silentLogger } from '../src/internal/logger.js'
import { createRpcClient } from '../src/rpc/index.js'
import { toLogRows, withTransaction, ZERO_HASH, type LogInput, type LogRow } from '../src/store/index.js'
import {
  anvilAccount,
  artifacts,
  buildChain,
  deployContract,
  encodeEmitMany,
  fixtureClient,
  rawSignedTx,
  sendWithSuffix,
  type FixtureClient,
} from '../harness/fixtures/chain.js'
import {
  createEip7702Account,
  createSmartAccount,
  deployEntryPoints,
  encodeExecute,
  entryPointArtifacts,
  sendHandleOps,
  type EntryPointVersion,
  type SmartAccount,
} from '../harness/fixtures/entryPoint.js'
import { asciiHex, schema0Suffix, schema2Suffix } from '../harness/fixtures/erc8021-vectors.js'
import { startFaultProxy, type Faults } from '../harness/fixtures/faultProxy.js'
import { waitFor } from './helpers/compare.js'
import { runTs, spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
const OTHER_CHAIN_REGISTRY = { address: '0x000000000000000000000000000000000000c0de' as Address, chainId: 8453 }
const BENEFICIARY: Address = '0x000000000000000000000000000000000000beef'

/** A row of `analytics.attributed_transactions`, as the test expects it. */
type AttributedRow = {
  tx_hash: string
  user_op_hash: string | null
  block_number: number
  from_address: string
  sender: string
  to_address: string | null
  builder_code: string
  wallet_address: string | null
  schema_id: number
  codes: string[]
  status: string
  removed: boolean
}

/** The decode fields of a `transactions` row, as the test expects them. */
type TransactionExpectation = {
  has_suffix: boolean
  schema_id: number | null
  codes: string[] | null
  registry_address: string | null
  registry_chain_id: number | null
  registry_verified: boolean | null
  /** Why the registry answer is unknown; unset: null. */
  registry_unverified_reason?: string
  malformed_reason: RegExp | null
  user_operations: number
  /** The receipt's gas used where the transaction is attributed, else null. */
  gas_used: number | null
  cbor?: unknown
}

type Mined = { hash: Hash; block: number; from: string; to: string | null; gasUsed: number }

const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

const lower = (address: string) => address.toLowerCase()
const codeOf = (address: string) => deriveBuilderCode(address as Address)
const byKey = (row: Pick<AttributedRow, 'tx_hash' | 'user_op_hash' | 'builder_code'>) =>
  `${row.tx_hash}|${row.user_op_hash ?? ''}|${row.builder_code}`
const sortRows = <T extends AttributedRow>(rows: T[]) => [...rows].sort((a, b) => byKey(a).localeCompare(byKey(b)))

async function mined(client: FixtureClient, hash: Hash): Promise<Mined> {
  // anvil's automine can answer the hash a moment before the receipt exists.
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  return {
    hash,
    block: Number(receipt.blockNumber),
    from: lower(receipt.from),
    to: receipt.to ? lower(receipt.to) : null,
    gasUsed: Number(receipt.gasUsed),
  }
}

async function registerWallets(db: TestDatabase, wallets: readonly string[]) {
  await db.store.pool.query(
    `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source)
     SELECT $1, code, wallet, 'local' FROM unnest($2::text[], $3::text[]) AS u(code, wallet)`,
    [CHAIN_ID, wallets.map(codeOf), wallets.map(lower)],
  )
}

async function attributedRows(db: TestDatabase): Promise<AttributedRow[]> {
  const { rows } = await db.store.pool.query<AttributedRow>(
    `SELECT tx_hash, user_op_hash, block_number, from_address, sender, to_address, builder_code, wallet_address, schema_id, codes, status, removed
     FROM analytics.attributed_transactions WHERE chain_id = $1`,
    [CHAIN_ID],
  )
  return sortRows(rows)
}

/**
 * The chain every backfill test reads: one transaction per block (automine), each case from its own
 * sender, and what the index must hold for it.
 */
type World = {
  anvil: Anvil
  head: number
  /** Wallets registered here before the backfill; `late` ones only after it. */
  early: string[]
  late: string[]
  /** Attribution rows with the early wallets' codes linked; the late ones' codes still unlinked. */
  rows: AttributedRow[]
  /** Rows only the `blocks` scope finds: a transaction that emits no log. */
  logless: AttributedRow[]
  transactions: Map<string, TransactionExpectation>
  loglessTransactions: Map<string, TransactionExpectation>
}

async function buildWorld(): Promise<World> {
  const anvil = await startAnvil()
  cleanups.push(() => anvil.stop())
  const url = anvil.url
  const client = fixtureClient(url)
  const emitter = lower(await deployContract(url, artifacts.Emitter))
  const registry = lower(await deployContract(url, artifacts.CodeRegistry))
  await deployEntryPoints(url)

  const agent = (i: number) => lower(anvilAccount(i).address)
  const [a1, a2, a3, a4, , a6, a7, a8] = [1, 2, 3, 4, 5, 6, 7, 8].map(agent) as string[] as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ]
  const accounts = {
    sa6: await createSmartAccount(url, { version: '0.6', owner: 1 }),
    sa6Plain: await createSmartAccount(url, { version: '0.6', owner: 5, salt: 1n }),
    sa7: await createSmartAccount(url, { version: '0.7', owner: 2 }),
    sa7Malformed: await createSmartAccount(url, { version: '0.7', owner: 6, salt: 1n }),
    sa8: await createSmartAccount(url, { version: '0.8', owner: 3 }),
  }
  const sa = (account: SmartAccount) => lower(account.address)
  const early = [a1, a2, a4, a6, a7, sa(accounts.sa6), sa(accounts.sa7)]
  const late = [a3, sa(accounts.sa8)]
  const walletOf = new Map(early.map((wallet) => [codeOf(wallet), wallet]))

  const rows: Omit<AttributedRow, 'status'>[] = []
  const transactions = new Map<string, TransactionExpectation>()
  const none = {
    has_suffix: false,
    schema_id: null,
    codes: null,
    registry_address: null,
    registry_chain_id: null,
    registry_verified: null,
    malformed_reason: null,
    user_operations: 0,
    gas_used: null,
  }
  const plainRows = (tx: Mined, schemaId: number, codes: string[]) =>
    codes.map((code) => ({
      tx_hash: tx.hash,
      user_op_hash: null,
      block_number: tx.block,
      from_address: tx.from,
      sender: tx.from,
      to_address: tx.to,
      builder_code: code,
      wallet_address: walletOf.get(code) ?? null,
      schema_id: schemaId,
      codes,
      removed: false,
    }))

  let seq = 0
  const emit = async (from: number, suffix?: Hex) =>
    mined(
      client,
      await sendWithSuffix(url, { from, to: emitter as Address, data: encodeEmitMany(2, (seq += 2), '0x'), ...(suffix ? { suffix } : {}) }),
    )

  // The registry on this chain knows a4's code only; its `register` transaction has a log and no suffix.
  const registration = await mined(
    client,
    await sendWithSuffix(url, {
      from: 4,
      to: registry as Address,
      data: encodeFunctionData({ abi: artifacts.CodeRegistry.abi, functionName: 'register', args: [codeOf(a4)] }),
    }),
  )
  transactions.set(registration.hash, none)

  // Schema 0, one code.
  const one = await emit(1, Attribution.toDataSuffix({ codes: [codeOf(a1)] }))
  rows.push(...plainRows(one, 0, [codeOf(a1)]))
  transactions.set(one.hash, { ...none, has_suffix: true, schema_id: 0, codes: [codeOf(a1)], gas_used: one.gasUsed })

  // Schema 0, two codes: a2's own and a3's (a3 registers only after the backfill).
  const two = await emit(2, Attribution.toDataSuffix({ codes: [codeOf(a2), codeOf(a3)] }))
  rows.push(...plainRows(two, 0, [codeOf(a2), codeOf(a3)]))
  transactions.set(two.hash, { ...none, has_suffix: true, schema_id: 0, codes: [codeOf(a2), codeOf(a3)], gas_used: two.gasUsed })

  // Schema 1, registry on this chain: a registered code and an unregistered one.
  const verified = await emit(
    4,
    Attribution.toDataSuffix({ codes: [codeOf(a4)], codeRegistry: { address: registry as Address, chainId: CHAIN_ID } }),
  )
  rows.push(...plainRows(verified, 1, [codeOf(a4)]))
  transactions.set(verified.hash, {
    ...none,
    has_suffix: true,
    schema_id: 1,
    codes: [codeOf(a4)],
    registry_address: registry,
    registry_chain_id: CHAIN_ID,
    registry_verified: true,
    gas_used: verified.gasUsed,
  })
  const unverified = await emit(
    5,
    Attribution.toDataSuffix({ codes: ['agent_unlisted'], codeRegistry: { address: registry as Address, chainId: CHAIN_ID } }),
  )
  rows.push(...plainRows(unverified, 1, ['agent_unlisted']))
  transactions.set(unverified.hash, {
    ...none,
    has_suffix: true,
    schema_id: 1,
    codes: ['agent_unlisted'],
    registry_address: registry,
    registry_chain_id: CHAIN_ID,
    registry_verified: false,
    gas_used: unverified.gasUsed,
  })

  // Schema 1, a "registry" on this chain that reverts (the Emitter has no isRegistered), and one with no code.
  const reverting = await emit(
    5,
    Attribution.toDataSuffix({ codes: ['agent_reverts'], codeRegistry: { address: emitter as Address, chainId: CHAIN_ID } }),
  )
  rows.push(...plainRows(reverting, 1, ['agent_reverts']))
  transactions.set(reverting.hash, {
    ...none,
    has_suffix: true,
    schema_id: 1,
    codes: ['agent_reverts'],
    registry_address: emitter,
    registry_chain_id: CHAIN_ID,
    registry_verified: false,
    gas_used: reverting.gasUsed,
  })
  const codeless = await emit(
    5,
    Attribution.toDataSuffix({ codes: ['agent_nowhere'], codeRegistry: { address: anvilAccount(0).address, chainId: CHAIN_ID } }),
  )
  rows.push(...plainRows(codeless, 1, ['agent_nowhere']))
  transactions.set(codeless.hash, {
    ...none,
    has_suffix: true,
    schema_id: 1,
    codes: ['agent_nowhere'],
    registry_address: lower(anvilAccount(0).address),
    registry_chain_id: CHAIN_ID,
    registry_verified: null,
    // No contract there: the call answers no boolean.
    registry_unverified_reason: 'invalid_answer',
    gas_used: codeless.gasUsed,
  })

  // Schema 1, registry on a chain this deployment does not index: unknown, never false.
  const elsewhere = await emit(6, Attribution.toDataSuffix({ codes: [codeOf(a6)], codeRegistry: OTHER_CHAIN_REGISTRY }))
  rows.push(...plainRows(elsewhere, 1, [codeOf(a6)]))
  transactions.set(elsewhere.hash, {
    ...none,
    has_suffix: true,
    schema_id: 1,
    codes: [codeOf(a6)],
    registry_address: OTHER_CHAIN_REGISTRY.address,
    registry_chain_id: OTHER_CHAIN_REGISTRY.chainId,
    registry_unverified_reason: 'chain_not_configured',
    gas_used: elsewhere.gasUsed,
  })

  // Schema 2: app, wallet and service codes, and metadata.
  const cborCodes = [codeOf(a7), 'wallet_kit', 'relay_one', 'solver_two']
  const cbor = await emit(
    7,
    Attribution.toDataSuffix({
      appCode: codeOf(a7),
      walletCode: 'wallet_kit',
      serviceCodes: ['relay_one', 'solver_two'],
      metadata: { note: 'hi' },
    }),
  )
  rows.push(...plainRows(cbor, 2, cborCodes))
  transactions.set(cbor.hash, {
    ...none,
    has_suffix: true,
    schema_id: 2,
    codes: cborCodes,
    gas_used: cbor.gasUsed,
    cbor: {
      appCode: codeOf(a7),
      walletCode: 'wallet_kit',
      serviceCodes: ['relay_one', 'solver_two'],
      registries: { app: null, wallet: null },
      metadata: { note: 'hi' },
    },
  })

  // Malformed: a length byte pointing before the calldata, an uppercase code, CBOR that is no map; and no suffix at all.
  const badLength = await emit(8, schema0Suffix(asciiHex(codeOf(a8)), 255))
  transactions.set(badLength.hash, {
    ...none,
    has_suffix: true,
    schema_id: 0,
    malformed_reason: /codes length 255 points past the start of calldata/,
  })
  const uppercase = await emit(8, Attribution.toDataSuffix({ codes: ['BC_UPPER'] }))
  transactions.set(uppercase.hash, { ...none, has_suffix: true, schema_id: 0, malformed_reason: /invalid code "BC_UPPER"/ })
  const notMap = await emit(8, schema2Suffix('8201'))
  transactions.set(notMap.hash, { ...none, has_suffix: true, schema_id: 2, malformed_reason: /CBOR payload is not a map/ })
  const plain = await emit(8)
  transactions.set(plain.hash, none)

  // User operations: the suffix ends each op's callData; the op's sender is attributed, with its hash.
  const op = (account: SmartAccount, suffix?: Hex) => ({
    account,
    callData: concat([encodeExecute({ to: emitter as Address, data: encodeEmitMany(1, (seq += 1), '0x') }), ...(suffix ? [suffix] : [])]),
  })
  const bundles: [EntryPointVersion, ReturnType<typeof op>[], (string[] | null)[], number][] = [
    [
      '0.6',
      [op(accounts.sa6, Attribution.toDataSuffix({ codes: [codeOf(sa(accounts.sa6))] })), op(accounts.sa6Plain)],
      [[codeOf(sa(accounts.sa6))], null],
      0,
    ],
    [
      '0.7',
      [
        op(accounts.sa7, Attribution.toDataSuffix({ appCode: codeOf(sa(accounts.sa7)), serviceCodes: ['bundler_x'] })),
        op(accounts.sa7Malformed, Attribution.toDataSuffix({ codes: ['BAD_CODE'] })),
      ],
      [[codeOf(sa(accounts.sa7)), 'bundler_x'], null],
      2,
    ],
    [
      '0.8',
      [
        op(accounts.sa8, Attribution.toDataSuffix({ codes: [codeOf(sa(accounts.sa8)), codeOf(a1)] })),
        op(accounts.sa8, Attribution.toDataSuffix({ codes: [codeOf(sa(accounts.sa8))] })),
      ],
      [[codeOf(sa(accounts.sa8)), codeOf(a1)], [codeOf(sa(accounts.sa8))]],
      0,
    ],
  ]
  for (const [version, ops, codes, schemaId] of bundles) {
    const bundle = await mined(client, await sendHandleOps(url, { version, ops, beneficiary: BENEFICIARY }))
    const receipt = await client.getTransactionReceipt({ hash: bundle.hash })
    // The EntryPoint's own events name each op's hash: an oracle independent of the decoder.
    const events = parseEventLogs({
      abi: entryPointArtifacts[version].entryPoint.abi,
      logs: receipt.logs,
      eventName: 'UserOperationEvent',
    }) as unknown as {
      args: { userOpHash: Hash; sender: Address }
    }[]
    expect(events).toHaveLength(ops.length)
    events.forEach((event, i) => {
      const opCodes = codes[i]
      if (!opCodes) return
      rows.push(
        ...plainRows(bundle, schemaId, opCodes).map((row) => ({
          ...row,
          user_op_hash: event.args.userOpHash,
          sender: lower(event.args.sender),
        })),
      )
    })
    transactions.set(bundle.hash, { ...none, user_operations: ops.length, gas_used: codes.some(Boolean) ? bundle.gasUsed : null })
  }

  // A transfer that emits no log: only the `blocks` scope sees it.
  const transfer = await mined(
    client,
    await sendWithSuffix(url, { from: 1, to: anvilAccount(0).address, suffix: Attribution.toDataSuffix({ codes: [codeOf(a1)] }) }),
  )
  const logless = plainRows(transfer, 0, [codeOf(a1)])
  const loglessTransactions = new Map([
    [transfer.hash, { ...none, has_suffix: true, schema_id: 0, codes: [codeOf(a1)], gas_used: transfer.gasUsed }],
  ])

  // Empty blocks end the range.
  await client.mine({ blocks: 3 })
  const head = Number(await client.getBlockNumber())
  // Other transactions behind logs (the account factories' deployments emit `Initialized`) carry no suffix.
  for (const log of await client.getLogs({ fromBlock: 0n, toBlock: BigInt(head) })) {
    if (!transactions.has(log.transactionHash!)) transactions.set(log.transactionHash!, none)
  }
  const finalized = await client
    .getBlock({ blockTag: 'finalized' })
    .then((block) => Number(block.number))
    .catch(() => Math.max(0, head - 64))
  const status = (row: { block_number: number }) => (row.block_number <= finalized ? 'finalized' : 'confirmed')
  return {
    anvil,
    head,
    early,
    late,
    rows: sortRows(rows.map((row) => ({ ...row, status: status(row) }))),
    logless: logless.map((row) => ({ ...row, status: status(row) })),
    transactions,
    loglessTransactions,
  }
}

async function environment(rpcUrl: string, scope: 'logs' | 'blocks') {
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const env = { RPC_URL: rpcUrl, DATABASE_URL: db.url, REDIS_URL, REDIS_PREFIX: redis.prefix, ATTRIBUTION_SCOPE: scope }
  return { db, env }
}

async function expectTransactions(db: TestDatabase, expected: ReadonlyMap<string, TransactionExpectation>) {
  const { rows } = await db.store.pool.query(
    `SELECT hash, has_suffix, schema_id, codes, registry_address, registry_chain_id::int AS registry_chain_id, registry_verified,
       registry_unverified_reason, malformed_reason, user_operations, gas_used, cbor, removed FROM transactions WHERE chain_id = $1 AND hash = ANY($2::text[])`,
    [CHAIN_ID, [...expected.keys()]],
  )
  expect(rows).toHaveLength(expected.size)
  for (const row of rows) {
    const { malformed_reason, cbor, registry_unverified_reason = null, ...fields } = expected.get(row.hash)!
    expect({ hash: row.hash, ...fields, registry_unverified_reason }).toEqual({
      hash: row.hash,
      has_suffix: row.has_suffix,
      schema_id: row.schema_id,
      codes: row.codes,
      registry_address: row.registry_address,
      registry_chain_id: row.registry_chain_id,
      registry_verified: row.registry_verified,
      registry_unverified_reason: row.registry_unverified_reason,
      user_operations: row.user_operations,
      gas_used: row.gas_used,
    })
    if (malformed_reason) expect(row.malformed_reason).toMatch(malformed_reason)
    else expect(row.malformed_reason).toBeNull()
    expect(row.cbor).toEqual(cbor ?? null)
    expect(row.removed).toBe(false)
  }
}

/** Node calls of one backfill, through a counting proxy, per attributed transaction. */
async function countedBackfill(
  { rpcUrl, head, wallets }: { rpcUrl: string; head: number; wallets: readonly string[] },
  scope: 'logs' | 'blocks',
  faults: Faults = {},
  from = 0,
) {
  const proxy = await startFaultProxy({ upstream: rpcUrl, faults })
  cleanups.push(() => proxy.stop())
  const { db, env } = await environment(proxy.url, scope)
  await registerWallets(db, wallets)
  const result = await runTs('scripts/backfill.ts', ['--from', String(from), '--to', String(head)], env)
  expect(result.code, result.output).toBe(0)
  const { rows } = await db.store.pool.query(`SELECT count(DISTINCT tx_hash)::int AS n FROM attributions WHERE chain_id = $1`, [CHAIN_ID])
  const attributed = rows[0].n as number
  console.log(
    `[attribution] scope=${scope}: ${proxy.stats.httpRequests} HTTP requests, ${Object.values(proxy.stats.calls).reduce((a, b) => a + b, 0)} JSON-RPC calls ` +
      `for ${attributed} attributed transactions over ${head + 1} blocks = ${(proxy.stats.httpRequests / attributed).toFixed(2)} HTTP requests per attributed transaction; ` +
      `calls by method: ${JSON.stringify(proxy.stats.calls)}`,
  )
  return { db, env, proxy, attributed }
}

describe('attribution by backfill', () => {
  let world: World
  beforeAll(async () => {
    world = await buildWorld()
  })

  it('stores exactly the expected attributions and decodes, and links wallets registered afterwards', async () => {
    const { db, proxy, attributed } = await countedBackfill({ rpcUrl: world.anvil.url, head: world.head, wallets: world.early }, 'logs')
    expect(await attributedRows(db)).toEqual(world.rows)
    await expectTransactions(db, world.transactions)
    // The logless transfer is outside the `logs` scope.
    const { rows: outside } = await db.store.pool.query(`SELECT count(*) AS n FROM transactions WHERE hash = ANY($1::text[])`, [
      [...world.loglessTransactions.keys()],
    ])
    expect(outside[0].n).toBe(0)
    // Inputs come in batches: far fewer HTTP requests than transactions decoded, and no per-hash call outside a batch.
    const { rows: decoded } = await db.store.pool.query(`SELECT count(*) AS n FROM transactions`)
    expect(decoded[0].n).toBe(world.transactions.size)
    expect(proxy.stats.calls.eth_getTransactionByHash).toBe(world.transactions.size)
    expect(attributed).toBe(new Set(world.rows.map((row) => row.tx_hash)).size)

    await registerWallets(db, world.late)
    const lateCodes = new Map(world.late.map((wallet) => [codeOf(wallet), wallet]))
    const linked = world.rows.map((row) => ({ ...row, wallet_address: row.wallet_address ?? lateCodes.get(row.builder_code) ?? null }))
    expect(linked.filter((row, i) => row.wallet_address !== world.rows[i]!.wallet_address).length).toBeGreaterThanOrEqual(2)
    expect(await attributedRows(db)).toEqual(linked)
  })

  it('with ATTRIBUTION_SCOPE=blocks also attributes transactions that emit no log, from whole blocks', async () => {
    const { db, proxy, env } = await countedBackfill({ rpcUrl: world.anvil.url, head: world.head, wallets: world.early }, 'blocks')
    expect(await attributedRows(db)).toEqual(sortRows([...world.rows, ...world.logless]))
    await expectTransactions(db, new Map([...world.transactions, ...world.loglessTransactions]))
    // Every transaction of every block of the range is stored, fetched with the blocks, never by hash.
    const client = fixtureClient(world.anvil.url)
    let total = 0
    for (let n = 0; n <= world.head; n++) total += await client.getBlockTransactionCount({ blockNumber: BigInt(n) })
    const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM transactions WHERE NOT removed`)
    expect(rows[0].n).toBe(total)
    expect(proxy.stats.calls.eth_getTransactionByHash ?? 0).toBe(0)
    expect(proxy.stats.calls.eth_getBlockByNumber).toBeGreaterThanOrEqual(world.head + 1)

    // A second filter over the same blocks reads every block again: each transaction is stored
    // already, those without a suffix go in again as fresh and merge, and nothing doubles or changes.
    const receiptsBefore = proxy.stats.calls.eth_getTransactionReceipt ?? 0
    const again = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(world.head), '--topic0', `0x${'ab'.repeat(32)}`], env)
    expect(again.code, again.output).toBe(0)
    expect(await attributedRows(db)).toEqual(sortRows([...world.rows, ...world.logless]))
    await expectTransactions(db, new Map([...world.transactions, ...world.loglessTransactions]))
    const { rows: afterAgain } = await db.store.pool.query(
      `SELECT count(*) AS n, count(*) FILTER (WHERE removed) AS removed FROM transactions`,
    )
    expect(afterAgain[0]).toEqual({ n: total, removed: 0 })
    // Gas used is stored already: no receipt is asked for again.
    expect(proxy.stats.calls.eth_getTransactionReceipt ?? 0).toBe(receiptsBefore)
  })
})

function daemon(env: Record<string, string>): Spawned {
  const spawned = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
  cleanups.push(() => spawned.kill('SIGKILL'))
  return spawned
}

describe.each(['logs', 'blocks'] as const)('attribution at the tip (ATTRIBUTION_SCOPE=%s)', (scope) => {
  it('confirms an attributed transaction, removes it with its block on a reorg, and restores it when it is mined again', async () => {
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    const client = fixtureClient(anvil.url)
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    const { db, env } = await environment(anvil.url, scope)
    const agent = lower(anvilAccount(1).address)
    await registerWallets(db, [agent])
    daemon({ ...env, START_BLOCK: '0', HEAD_POLL_MS: '100', PENDING_POLL_MS: '0' })

    const code = codeOf(agent)
    const suffix = Attribution.toDataSuffix({ codes: [code] })
    const emitting = await rawSignedTx(anvil.url, { from: 1, to: emitter, data: encodeEmitMany(2, 0, '0x'), suffix })
    const transfer = await rawSignedTx(anvil.url, { from: 2, to: anvilAccount(0).address, suffix })
    const send = async (raw: Hex) => mined(client, await client.sendRawTransaction({ serializedTransaction: raw }))
    const first = [await send(emitting), await send(transfer)]
    const attributedHashes = scope === 'blocks' ? first.map((tx) => tx.hash) : [first[0]!.hash]

    const rowsOf = async () =>
      (await attributedRows(db)).map(({ tx_hash, block_number, wallet_address, status, removed }) => ({
        tx_hash,
        block_number,
        wallet_address,
        status,
        removed,
      }))
    const expectedAt = (txs: Mined[], removed: boolean) =>
      txs
        .filter((tx) => attributedHashes.includes(tx.hash))
        .map((tx) => ({ tx_hash: tx.hash, block_number: tx.block, wallet_address: agent, status: 'confirmed', removed }))
        .sort((a, b) => a.tx_hash.localeCompare(b.tx_hash))
    const settled = (expected: ReturnType<typeof expectedAt>) => async () => JSON.stringify(await rowsOf()) === JSON.stringify(expected)

    await waitFor(settled(expectedAt(first, false)), 'the attributions to be confirmed')
    expect(await rowsOf()).toEqual(expectedAt(first, false))

    // Replace both blocks with one that holds neither transaction.
    const head = Number(await client.getBlockNumber())
    const depth = head - first[0]!.block + 1
    const replacer = anvilAccount(7)
    const nonce = await client.getTransactionCount({ address: replacer.address, blockNumber: BigInt(first[0]!.block - 1) })
    const replacement = await rawSignedTx(anvil.url, { from: replacer, to: emitter, data: encodeEmitMany(1, 99, '0x'), nonce })
    await client.request({ method: 'anvil_reorg', params: [depth, [[replacement, 0]]] })
    expect(await client.getTransaction({ hash: first[0]!.hash }).catch(() => null)).toBeNull()

    await waitFor(settled(expectedAt(first, true)), 'the attributions to be removed')
    expect(await rowsOf()).toEqual(expectedAt(first, true))
    const { rows: removedTxs } = await db.store.pool.query(
      `SELECT hash, removed FROM transactions WHERE hash = ANY($1::text[]) ORDER BY hash`,
      [attributedHashes],
    )
    expect(removedTxs).toEqual([...attributedHashes].sort().map((hash) => ({ hash, removed: true })))

    // Mined again in new blocks, the same transactions are attributed again there.
    const again = [await send(emitting), await send(transfer)]
    expect(again.map((tx) => tx.hash)).toEqual(first.map((tx) => tx.hash))
    expect(again[0]!.block).not.toBe(first[0]!.block)
    await waitFor(settled(expectedAt(again, false)), 'the attributions to be restored')
    expect(await rowsOf()).toEqual(expectedAt(again, false))
    const { rows: restored } = await db.store.pool.query(
      `SELECT hash, block_number, gas_used, removed FROM transactions WHERE hash = ANY($1::text[]) ORDER BY hash`,
      [attributedHashes],
    )
    expect(restored).toEqual(
      again
        .filter((tx) => attributedHashes.includes(tx.hash))
        .map((tx) => ({ hash: tx.hash, block_number: tx.block, gas_used: tx.gasUsed, removed: false }))
        .sort((a, b) => a.hash.localeCompare(b.hash)),
    )
  })
})

describe('node calls per attributed transaction', () => {
  it('reads whole blocks and block receipts where the needed transactions are most of a block, by hash where few, each transaction once', async () => {
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    const agents = [1, 2, 3, 4, 5].map((i) => lower(anvilAccount(i).address))
    // 20 blocks of 10 transactions, every one with logs: the logs name every transaction of their blocks.
    const chain = (suffixEvery: number) =>
      buildChain(anvil.url, {
        blocks: 20,
        txsPerBlock: 10,
        logsPerTx: 2,
        largeDataEvery: 0,
        senders: [1, 2, 3, 4, 5],
        suffix: (i) => (i % suffixEvery === 0 ? Attribution.toDataSuffix({ codes: [codeOf(agents[i % 5]!)] }) : undefined),
      })
    // Every second transaction attributed: 5 of each block's 10 receipts are needed, so each block's are read at once.
    const dense = Number((await chain(2)).toBlock)
    for (const scope of ['logs', 'blocks'] as const) {
      const { db, proxy, attributed } = await countedBackfill({ rpcUrl: anvil.url, head: dense, wallets: agents }, scope)
      expect(attributed).toBe(100)
      const { rows } = await db.store.pool.query(`SELECT count(*)::int AS n, count(gas_used)::int AS gas FROM transactions`)
      // The blocks scope also holds the Emitter's deployment, a transaction without logs.
      expect(rows[0]).toEqual({ n: scope === 'blocks' ? 201 : 200, gas: 100 })
      expect(proxy.stats.calls.eth_getTransactionByHash ?? 0).toBe(0)
      // The range's headers, read for the finality check, gave the counts: none asked apart.
      expect(proxy.stats.calls.eth_getBlockTransactionCountByHash ?? 0).toBe(0)
      expect(proxy.stats.calls.eth_getBlockReceipts).toBe(20)
      expect(proxy.stats.calls.eth_getTransactionReceipt ?? 0).toBe(0)
      // Batches of 10 blocks: a handful of requests for the whole range.
      expect(proxy.stats.httpRequests).toBeLessThan(attributed / 5)
    }
    // A node without eth_getBlockReceipts: gas used comes per transaction, every attributed one once.
    const refusing = await countedBackfill({ rpcUrl: anvil.url, head: dense, wallets: agents }, 'logs', {
      eth_getBlockReceipts: { error: { code: -32601, message: 'the method eth_getBlockReceipts does not exist/is not available' } },
    })
    const { rows: refused } = await refusing.db.store.pool.query(`SELECT count(*)::int AS n, count(gas_used)::int AS gas FROM transactions`)
    expect(refused[0]).toEqual({ n: 200, gas: 100 })
    expect(refusing.proxy.stats.calls.eth_getTransactionReceipt).toBe(100)
    // Every fifth attributed: 2 of each block's 10 receipts are needed, asked by hash.
    const sparse = await chain(5)
    const { db, proxy, attributed } = await countedBackfill(
      { rpcUrl: anvil.url, head: Number(sparse.toBlock), wallets: agents },
      'logs',
      {},
      Number(sparse.fromBlock),
    )
    expect(attributed).toBe(40)
    const { rows } = await db.store.pool.query(`SELECT count(*)::int AS n, count(gas_used)::int AS gas FROM transactions`)
    expect(rows[0]).toEqual({ n: 200, gas: 40 })
    expect(proxy.stats.calls.eth_getTransactionByHash ?? 0).toBe(0)
    expect(proxy.stats.calls.eth_getBlockReceipts ?? 0).toBe(0)
    expect(proxy.stats.calls.eth_getTransactionReceipt).toBe(40)
  })
})

describe('whole blocks sized by their real transaction count', () => {
  it('reads a block whole only once its real count is known: two of ten by hash, ten of ten whole', async () => {
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    const client = fixtureClient(anvil.url)
    const [indexed, other] = await Promise.all([
      deployContract(anvil.url, artifacts.Emitter),
      deployContract(anvil.url, artifacts.Emitter, [], 1),
    ])
    const from = Number(await client.getBlockNumber()) + 1
    const sender = anvilAccount(2)
    let nonce = await client.getTransactionCount({ address: sender.address })
    await client.setAutomine(false)
    // One sender, so the nonces fix the order: the indexed contract's calls open each block.
    for (let block = 0; block < 5; block++) {
      for (let i = 0; i < 10; i++) {
        const raw = await rawSignedTx(anvil.url, {
          from: 2,
          to: i < 2 ? indexed : other,
          data: encodeEmitMany(1, i, '0x'),
          nonce: nonce++,
          gas: 200_000n,
        })
        await client.sendRawTransaction({ serializedTransaction: raw })
      }
      await client.request({ method: 'evm_mine' as never, params: [] as never })
    }
    await client.setAutomine(true)
    const head = Number(await client.getBlockNumber())
    expect((await client.getBlock({ blockNumber: BigInt(head) })).transactions).toHaveLength(10)
    // Buried below the finalized block: the range job reads no headers, so no count comes with them.
    await client.request({ method: 'anvil_mine' as never, params: ['0x80'] as never })

    const proxy = await startFaultProxy({ upstream: anvil.url, faults: {} })
    cleanups.push(() => proxy.stop())
    const { db, env } = await environment(proxy.url, 'logs')
    const result = await runTs('scripts/backfill.ts', ['--from', String(from), '--to', String(head), '--address', indexed], env)
    expect(result.code, result.output).toBe(0)
    const { rows } = await db.store.pool.query(`SELECT count(*)::int AS n FROM transactions`)
    expect(rows[0].n).toBe(10)
    // Indexes 0-1 would make a whole block of two: the real count (10) is asked, and two of ten go by hash.
    expect(proxy.stats.calls.eth_getBlockTransactionCountByHash).toBe(5)
    expect(proxy.stats.calls.eth_getTransactionByHash).toBe(10)
    console.log(`[attribution] two of ten indexed per block, 5 finalized blocks: calls by method ${JSON.stringify(proxy.stats.calls)}`)

    // Every log indexed: the count says the ten are the whole block, read in one call each.
    proxy.resetStats()
    const all = await environment(proxy.url, 'logs')
    const again = await runTs('scripts/backfill.ts', ['--from', String(from), '--to', String(head)], all.env)
    expect(again.code, again.output).toBe(0)
    expect((await all.db.store.pool.query(`SELECT count(*)::int AS n FROM transactions`)).rows[0].n).toBe(50)
    expect(proxy.stats.calls.eth_getBlockTransactionCountByHash).toBe(5)
    expect(proxy.stats.calls.eth_getTransactionByHash ?? 0).toBe(0)
    console.log(`[attribution] ten of ten indexed per block, 5 finalized blocks: calls by method ${JSON.stringify(proxy.stats.calls)}`)
  })
})

describe('attribution of a transaction first seen pending', () => {
  it('stores it pending without gas used, then confirms it with the gas used of its receipt', async () => {
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    const client = fixtureClient(anvil.url)
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    const db = await createTestDatabase()
    cleanups.push(() => db.drop())
    const rpc = createRpcClient({ url: anvil.url })
    const attributor = createAttributor({
      rpc: { request: (method, params) => rpc.request(method, params), batch: (calls) => rpc.batch(calls) },
      chainId: CHAIN_ID,
      logger: silentLogger,
      pool: db.store.pool,
      scope: 'logs',
    })
    const code = codeOf(anvilAccount(1).address)
    const state = async () =>
      (
        await db.store.pool.query(
          `SELECT t.status, t.block_hash, t.gas_used, a.status AS a_status, a.gas_used AS a_gas_used, a.builder_code
           FROM transactions t JOIN attributions a ON a.chain_id = t.chain_id AND a.tx_hash = t.hash`,
        )
      ).rows

    await client.setAutomine(false)
    const hash = await sendWithSuffix(anvil.url, {
      from: 1,
      to: emitter,
      data: encodeEmitMany(1, 0, '0x'),
      suffix: Attribution.toDataSuffix({ codes: [code] }),
      wait: false,
    })
    const pending: LogRow = {
      blockNumber: Number(await client.getBlockNumber()) + 1,
      blockHash: ZERO_HASH,
      blockTimestamp: Math.floor(Date.now() / 1000),
      transactionHash: hash,
      transactionIndex: 0,
      logIndex: 0,
      txLogOrdinal: 0,
      address: lower(emitter),
      topics: [],
      data: '0x',
    }
    await withTransaction(db.store.pool, await attributor.forLogs([pending], () => 'pending'))
    expect(await state()).toEqual([
      { status: 'pending', block_hash: ZERO_HASH, gas_used: null, a_status: 'pending', a_gas_used: null, builder_code: code },
    ])

    // A dropped pending transaction is not attributed; a canonical log whose transaction the node lacks is an error, retried.
    const ghost = `0x${'ab'.repeat(32)}`
    await withTransaction(db.store.pool, await attributor.forLogs([{ ...pending, transactionHash: ghost }], () => 'pending'))
    expect(await state()).toHaveLength(1)
    await expect(
      attributor.forLogs([{ ...pending, transactionHash: ghost, blockHash: `0x${'cd'.repeat(32)}` }], () => 'confirmed'),
    ).rejects.toThrow(/node has no transaction/)

    await client.mine({ blocks: 1 })
    // anvil's automine can answer the hash a moment before the receipt exists.
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    const logs = await rpc.request<LogInput[]>('eth_getLogs', [{ blockHash: receipt.blockHash }])
    await withTransaction(db.store.pool, await attributor.forLogs(toLogRows(logs), () => 'confirmed'))
    const gasUsed = Number(receipt.gasUsed)
    expect(await state()).toEqual([
      {
        status: 'confirmed',
        block_hash: receipt.blockHash,
        gas_used: gasUsed,
        a_status: 'confirmed',
        a_gas_used: gasUsed,
        builder_code: code,
      },
    ])
  })
})

describe('registry check on a node error', () => {
  it('stores the answer as unknown, never as not registered, and asks again on a later pass', async () => {
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    const client = fixtureClient(anvil.url)
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    const registry = await deployContract(anvil.url, artifacts.CodeRegistry)
    const code = codeOf(anvilAccount(4).address)
    await mined(
      client,
      await sendWithSuffix(anvil.url, {
        from: 4,
        to: registry,
        data: encodeFunctionData({ abi: artifacts.CodeRegistry.abi, functionName: 'register', args: [code] }),
      }),
    )
    const suffix = Attribution.toDataSuffix({ codes: [code], codeRegistry: { address: registry, chainId: CHAIN_ID } })
    const tx = await mined(client, await sendWithSuffix(anvil.url, { from: 4, to: emitter, data: encodeEmitMany(1, 0, '0x'), suffix }))

    // geth's answer for a state it cannot read at the moment; the batch and the call-by-call retry both get it.
    const proxy = await startFaultProxy({
      upstream: anvil.url,
      faults: { eth_call: { error: { times: 2, code: -32000, message: 'header not found' } } },
    })
    cleanups.push(() => proxy.stop())
    const db = await createTestDatabase()
    cleanups.push(() => db.drop())
    const rpc = createRpcClient({ url: proxy.url })
    const attributorAskingAgainAfter = (registryRecheckAfterMs?: number) =>
      createAttributor({
        rpc: { request: (method, params) => rpc.request(method, params), batch: (calls) => rpc.batch(calls) },
        chainId: CHAIN_ID,
        logger: silentLogger,
        pool: db.store.pool,
        scope: 'logs',
        ...(registryRecheckAfterMs === undefined ? {} : { registryRecheckAfterMs }),
      })
    const logsOf = async (block: number) =>
      toLogRows(
        await rpc.request<LogInput[]>('eth_getLogs', [{ fromBlock: `0x${block.toString(16)}`, toBlock: `0x${block.toString(16)}` }]),
      )
    const verified = async () =>
      (await db.store.pool.query(`SELECT registry_verified, registry_unverified_reason FROM transactions WHERE hash = $1`, [tx.hash]))
        .rows[0]
    const unknown = { registry_verified: null, registry_unverified_reason: 'node_error' }
    const pass = async (attributor: ReturnType<typeof createAttributor>) => {
      const other = await mined(client, await sendWithSuffix(anvil.url, { from: 1, to: emitter, data: encodeEmitMany(1, 1, '0x') }))
      await withTransaction(db.store.pool, await attributor.forLogs(await logsOf(other.block), () => 'confirmed'))
    }

    const attributor = attributorAskingAgainAfter(undefined)
    await withTransaction(db.store.pool, await attributor.forLogs(await logsOf(tx.block), () => 'confirmed'))
    expect(proxy.faultCount('error')).toBe(2)
    expect(await verified()).toEqual(unknown)

    // A pass right after does not ask again (the default wait is a minute)...
    await pass(attributor)
    expect(proxy.stats.calls.eth_call).toBe(2)
    expect(await verified()).toEqual(unknown)
    // ...a pass once the wait is over does, and stores the registry's answer.
    await pass(attributorAskingAgainAfter(0))
    expect(proxy.stats.calls.eth_call).toBe(3)
    expect(await verified()).toEqual({ registry_verified: true, registry_unverified_reason: null })
    // Known now: never asked again.
    await pass(attributorAskingAgainAfter(0))
    expect(proxy.stats.calls.eth_call).toBe(3)
  })
})

describe('EIP-7702 user operations', () => {
  it('attributes a v0.8 operation of a delegated EOA with the hash the EntryPoint gives it', async () => {
    const anvil = await startAnvil({ extraArgs: ['--hardfork', 'prague'] })
    cleanups.push(() => anvil.stop())
    const client = fixtureClient(anvil.url)
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    await deployEntryPoints(anvil.url)
    const account = await createEip7702Account(anvil.url, { owner: 3 })
    expect(eip7702Delegate(await client.getCode({ address: account.address }))).not.toBeNull()

    const sender = lower(account.address)
    const code = codeOf(sender)
    const callData = concat([encodeExecute({ to: emitter, data: encodeEmitMany(1, 0, '0x') }), Attribution.toDataSuffix({ codes: [code] })])
    const bundle = await mined(
      client,
      await sendHandleOps(anvil.url, { version: '0.8', ops: [{ account, callData }], beneficiary: BENEFICIARY }),
    )
    const receipt = await client.getTransactionReceipt({ hash: bundle.hash })
    // The EntryPoint's own event names the operation's hash.
    const [event] = parseEventLogs({
      abi: entryPointArtifacts['0.8'].entryPoint.abi,
      logs: receipt.logs,
      eventName: 'UserOperationEvent',
    }) as unknown as {
      args: { userOpHash: Hash; sender: Address }
    }[]
    expect(lower(event!.args.sender)).toBe(sender)

    const { db, env } = await environment(anvil.url, 'logs')
    const result = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(bundle.block)], env)
    expect(result.code, result.output).toBe(0)
    const { rows } = await db.store.pool.query(
      `SELECT tx_hash, user_op_hash, sender, builder_code, removed FROM attributions WHERE chain_id = $1 AND tx_hash = $2`,
      [CHAIN_ID, bundle.hash],
    )
    expect(rows).toEqual([{ tx_hash: bundle.hash, user_op_hash: event!.args.userOpHash, sender, builder_code: code, removed: false }])
    const { rows: transactions } = await db.store.pool.query(`SELECT user_operations FROM transactions WHERE hash = $1`, [bundle.hash])
    expect(transactions).toEqual([{ user_operations: 1 }])
  })

  it('asks again for a delegation a lagging node does not show yet', async () => {
    const anvil = await startAnvil({ extraArgs: ['--hardfork', 'prague'] })
    cleanups.push(() => anvil.stop())
    const client = fixtureClient(anvil.url)
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    await deployEntryPoints(anvil.url)
    const account = await createEip7702Account(anvil.url, { owner: 3 })
    const sender = lower(account.address)
    const code = codeOf(sender)
    const callData = concat([encodeExecute({ to: emitter, data: encodeEmitMany(1, 0, '0x') }), Attribution.toDataSuffix({ codes: [code] })])
    const bundle = await mined(
      client,
      await sendHandleOps(anvil.url, { version: '0.8', ops: [{ account, callData }], beneficiary: BENEFICIARY }),
    )

    // The first two answers come from a node that has not seen the delegation.
    const proxy = await startFaultProxy({ upstream: anvil.url, faults: { eth_getCode: { stale: { times: 2, result: '0x' } } } })
    cleanups.push(() => proxy.stop())
    const { db, env } = await environment(proxy.url, 'logs')
    const result = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(bundle.block)], env)
    expect(result.code, result.output).toBe(0)
    expect(proxy.faultCount('stale')).toBe(2)
    expect(proxy.stats.calls.eth_getCode).toBe(3)
    const { rows } = await db.store.pool.query(`SELECT user_op_hash, sender FROM attributions WHERE chain_id = $1 AND tx_hash = $2`, [
      CHAIN_ID,
      bundle.hash,
    ])
    expect(rows).toHaveLength(1)
    expect(rows[0].sender).toBe(sender)
    expect(rows[0].user_op_hash).toMatch(/^0x[0-9a-f]{64}$/)
  })
})
