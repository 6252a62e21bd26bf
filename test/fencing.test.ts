/**
 * The scheduler and delivery leases are fenced. Each scheduler leader claims the next lease generation
 * in `chain_state`, each delivery leader in `webhook_cursor`; the tip, reorg, orphan, finality and
 * dispatch transactions of a leader whose generation is no longer the newest are refused, leaving the
 * new leader's rows as they were.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyReorg, orphanBlocks } from '../src/reorg/index.js'
import { createDevnet } from '../harness/devnet/index.js'
import { createRpcClient } from '../src/rpc/index.js'
import { createDispatcher } from '../src/delivery/index.js'
import { silentLogger } from '../src/internal/logger.js'
import {
  advanceFinality,
  createDeliveryLeaseFence,
  createLeaseFence,
  getChainState,
  getDispatchCursor,
  insertSubscription,
  latestEventId,
  LeaseFencedError,
  publishChanges,
  storeTipBlocks,
  withTransaction,
} from '../src/store/index.js'
import { upsertAttributions } from '../src/store/attributions.js'
import { waitFor } from './helpers/compare.js'
import { spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const CHAIN = 8453
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const wallet = `0x${'ab'.repeat(20)}`
/** Block `n` of fork `fork`: its hash and its parent's on the same fork. */
const header = (n: number, fork: number) => ({
  number: n,
  hash: hash(fork * 1_000 + n),
  parentHash: hash(fork * 1_000 + n - 1),
  timestamp: 1_700_000_000 + n,
})

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

const liveBlocks = async () =>
  (await db.store.pool.query(`SELECT number, hash, removed FROM blocks WHERE chain_id = $1 ORDER BY number, hash`, [CHAIN])).rows as {
    number: number
    hash: string
    removed: boolean
  }[]

describe('lease fencing of the writes that decide what is canonical or final', () => {
  it('refuses the tip, reorg, orphan and finality writes of a leader whose generation was overtaken, and applies the newest leader’s', async () => {
    const pool = db.store.pool
    const stale = createLeaseFence(pool, CHAIN)
    const current = createLeaseFence(pool, CHAIN)
    expect(await stale.claim()).toBe(1)
    await storeTipBlocks(pool, {
      chainId: CHAIN,
      filterId: 'f',
      blocks: [header(10, 1), header(11, 1)],
      rows: [],
      finalizedBlock: null,
      fence: stale.check,
    })
    expect(await current.claim()).toBe(2)
    // The new leader moved on along fork 2 from block 10.
    await storeTipBlocks(pool, {
      chainId: CHAIN,
      filterId: 'f',
      blocks: [header(12, 2)],
      rows: [],
      finalizedBlock: null,
      fence: current.check,
    })
    const before = { state: await getChainState(pool, CHAIN), blocks: await liveBlocks() }

    const refused = (write: Promise<unknown>) => expect(write).rejects.toBeInstanceOf(LeaseFencedError)
    await refused(
      storeTipBlocks(pool, { chainId: CHAIN, filterId: 'f', blocks: [header(12, 1)], rows: [], finalizedBlock: null, fence: stale.check }),
    )
    await refused(
      applyReorg(pool, {
        chainId: CHAIN,
        followerFilterId: 'f',
        forkBlock: { number: 10, hash: header(10, 1).hash },
        depth: 2,
        oldHash: hash(1),
        newHash: hash(2),
        fence: stale.check,
      }),
    )
    await refused(orphanBlocks(pool, CHAIN, [{ number: 12, hash: header(12, 2).hash }], stale.check))
    await refused(advanceFinality(pool, CHAIN, [9, 12], stale.check))
    expect(await getChainState(pool, CHAIN)).toEqual(before.state)
    expect(await liveBlocks()).toEqual(before.blocks)
    expect(before.state).toMatchObject({ liveBlock: 12, liveHash: header(12, 2).hash, finalizedBlock: null })

    // The same writes under the newest generation apply.
    await advanceFinality(pool, CHAIN, [9, 11], current.check)
    expect((await getChainState(pool, CHAIN))?.finalizedBlock).toBe(11)
  })

  it('makes a claim wait for a fenced transaction in flight, which commits under the old generation; the next one is refused', async () => {
    const pool = db.store.pool
    const old = createLeaseFence(pool, CHAIN)
    const generation = await old.claim()
    const next = createLeaseFence(pool, CHAIN)
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let checked!: () => void
    const inside = new Promise<void>((resolve) => (checked = resolve))
    const inFlight = withTransaction(pool, async (client) => {
      await old.check(client, 'update')
      checked()
      await held
      await client.query(`UPDATE chain_state SET head_block = 500 WHERE chain_id = $1`, [CHAIN])
    })
    await inside
    let claimed = false
    const claiming = next.claim().then((n) => ((claimed = true), n))
    // The claim cannot pass the row lock the check holds: the old leader's transaction finishes first.
    const lockWaits = async () =>
      (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))
        .rows[0].n
    await waitFor(async () => (await lockWaits()) > 0, 'the claim to wait for the row lock')
    expect(claimed).toBe(false)
    release()
    await inFlight
    expect(await claiming).toBe(generation + 1)
    expect((await getChainState(pool, CHAIN))?.headBlock).toBe(500)
    await expect(withTransaction(pool, (client) => old.check(client))).rejects.toThrow(
      `generation ${generation} of chain ${CHAIN} is stale (now ${generation + 1})`,
    )
  })

  it('refuses a stale delivery leader’s dispatch round: no delivery owed, the cursor where the new leader left it', async () => {
    const pool = db.store.pool
    const stale = createDeliveryLeaseFence(pool)
    await stale.claim()
    const current = createDeliveryLeaseFence(pool)
    await current.claim()
    await insertSubscription(pool, {
      id: 'wh_00000000000000f1',
      url: 'http://127.0.0.1:9/',
      secret: 's',
      events: ['attribution.confirmed'],
      builderCodes: ['bc_fence'],
      walletAddresses: null,
      roles: null,
    })
    const positions = new Map([
      [
        hash(77),
        {
          hash: hash(77),
          blockNumber: 12,
          blockHash: header(12, 2).hash,
          blockTimestamp: 1_700_000_012,
          transactionIndex: 0,
          status: 'confirmed' as const,
        },
      ],
    ])
    const rows = [
      {
        txHash: hash(77),
        userOpHash: '',
        builderCode: 'bc_fence',
        codeIndex: 0,
        role: null,
        registry: null,
        sender: wallet,
        schemaId: 0,
        codes: ['bc_fence'],
        from: wallet,
        to: null,
      },
    ]
    await withTransaction(pool, (client) => upsertAttributions(client, CHAIN, rows, positions, new Map()))
    await publishChanges(pool, 100)
    const before = await getDispatchCursor(pool)
    expect(await latestEventId(pool)).toBeGreaterThan(before)
    const enqueued: unknown[] = []
    const staleDispatcher = createDispatcher({
      pool,
      logger: silentLogger,
      enqueue: async (jobs) => void enqueued.push(...jobs),
      fence: stale.check,
    })
    await expect(staleDispatcher.step()).rejects.toThrow(/^delivery lease generation \d+ is stale/)
    expect(await getDispatchCursor(pool)).toBe(before)
    expect((await pool.query(`SELECT count(*)::int AS n FROM webhook_outstanding`)).rows[0].n).toBe(0)
    expect(enqueued).toEqual([])
    const currentDispatcher = createDispatcher({
      pool,
      logger: silentLogger,
      enqueue: async (jobs) => void enqueued.push(...jobs),
      fence: current.check,
    })
    expect((await currentDispatcher.step()).dispatched).toBe(1)
    expect(await getDispatchCursor(pool)).toBe(await latestEventId(pool))
  })
})

describe('two scheduler processes, the first stalled past its lease', () => {
  const cleanups: (() => Promise<unknown>)[] = []
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
  })

  it('refuses the stalled leader’s tip write of a block it read before the takeover and a reorg: no row of the old fork stored, ever', async () => {
    const devnet = await createDevnet({ profile: 'base', blockTimeMs: 0 })
    cleanups.push(() => devnet.stop())
    const chain = await createTestDatabase()
    const redis = createTestRedisPrefix()
    cleanups.push(
      () => chain.drop(),
      () => redis.cleanup(),
    )
    const pool = chain.store.pool
    const node = createRpcClient({ url: devnet.anvilUrl })
    const nodeHash = async (n: number) =>
      (await node.request<{ hash: string }>('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).hash
    await devnet.mine()
    const start = Number(await node.request<string>('eth_blockNumber')) + 1
    const env = {
      RPC_URL: devnet.url,
      DATABASE_URL: chain.url,
      REDIS_URL,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: String(start),
      LOG_LEVEL: 'info',
    }
    const state = async () =>
      (await pool.query(`SELECT live_block AS "liveBlock", live_hash AS "liveHash", lease_generation AS generation FROM chain_state`))
        .rows[0]
    const first = spawnTs('src/main.ts', ['--role', 'scheduler'], { ...env, CODETRAIL_STOP_AT: 'tip-read' })
    cleanups.push(() => first.kill('SIGKILL'))
    await waitFor(async () => Number((await state())?.liveBlock ?? -1) === start - 1, 'the first scheduler to start')

    // Block `start` is read by the first scheduler, which stalls right before storing it.
    await devnet.mine()
    const oldHash = await nodeHash(start)
    const stopped = () => readFileSync(`/proc/${first.child.pid}/stat`, 'utf8').split(') ')[1]?.startsWith('T') ?? false
    await waitFor(async () => stopped(), 'the first scheduler to stall at tip-read')

    // Meanwhile block `start` is replaced and a second scheduler takes the lapsed lease and stores the new fork.
    await devnet.reorg(1)
    await devnet.mine()
    const newHash = await nodeHash(start)
    expect(newHash).not.toBe(oldHash)
    const second = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
    cleanups.push(() => second.kill('SIGKILL'))
    await waitFor(async () => Number((await state())?.liveBlock ?? -1) >= start + 1, 'the second scheduler to store the new fork', 60_000)
    expect(Number((await state()).generation)).toBe(2)

    process.kill(first.child.pid!, 'SIGCONT')
    await waitFor(async () => first.output().includes('scheduler lease fenced'), 'the resumed scheduler’s write to be refused', 60_000)
    expect(first.output()).toMatch(/"lease_generation":1,"current_generation":2/)
    const blocks = await pool.query(`SELECT hash, removed FROM blocks WHERE number = $1`, [start])
    expect(blocks.rows).toEqual([{ hash: newHash, removed: false }])
    const live = await state()
    expect(live.liveHash).toBe(await nodeHash(Number(live.liveBlock)))
    expect(second.output()).not.toMatch(/"msg":"reorg"/)
  }, 120_000)
})
