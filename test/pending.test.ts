import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Address, Hash } from 'viem'
import { createDevnet, ZERO_HASH, type Devnet } from '../src/devnet/index.js'
import { artifacts, encodeEmitMany, fixtureClient, rawSignedTx } from './fixtures/chain.js'
import { expectIndexMatchesNode, waitFor } from './helpers/compare.js'
import { deployOnDevnet } from './helpers/devnet.js'
import { spawnTs } from './helpers/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from './helpers/services.js'

const cleanups: (() => Promise<unknown>)[] = []
let devnet: Devnet
let db: TestDatabase
let emitter: Address
let env: Record<string, string>

async function send(from: number, logs: number, seq: number): Promise<Hash> {
  const raw = await rawSignedTx(devnet.url, { from, to: emitter, data: encodeEmitMany(logs, seq, '0xbeef'), gas: 500_000n })
  return fixtureClient(devnet.url).sendRawTransaction({ serializedTransaction: raw })
}

async function rowsOf(hash: Hash) {
  const { rows } = await db.store.pool.query(
    `SELECT block_hash, block_number, log_index, status, removed, data FROM analytics.logs WHERE transaction_hash = $1 ORDER BY log_index`,
    [hash],
  )
  return rows
}

beforeAll(async () => {
  devnet = await createDevnet({ blockTimeMs: 0 })
  cleanups.push(() => devnet.stop())
  const client = fixtureClient(devnet.url)
  emitter = await deployOnDevnet(devnet, artifacts.Emitter)
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(() => db.drop(), () => redis.cleanup())
  const head = await client.getBlockNumber()
  env = {
    RPC_URL: devnet.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: String(head),
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '100',
  }
  const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
  cleanups.push(() => daemon.kill('SIGKILL'))
  await waitFor(async () => (await db.store.pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block === Number(head), 'the follower to start')
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('pre-confirmed logs', () => {
  it('are readable as pending before their block, then confirmed in place with the real block hash', async () => {
    const hash = await send(1, 3, 0)
    await waitFor(async () => (await rowsOf(hash)).length === 3, 'the pending rows')
    const pending = await rowsOf(hash)
    const head = await fixtureClient(devnet.url).getBlockNumber()
    for (const row of pending) {
      expect(row).toMatchObject({ block_hash: ZERO_HASH, status: 'pending', removed: false, block_number: Number(head) + 1 })
    }

    const mined = await devnet.mine()
    await waitFor(async () => (await rowsOf(hash)).every((row) => row.status === 'confirmed'), 'the confirmation')
    const confirmed = await rowsOf(hash)
    expect(confirmed).toHaveLength(3)
    for (const row of confirmed) expect(row).toMatchObject({ block_hash: mined.hash, block_number: Number(mined.number), removed: false })
    expect(confirmed.map((row) => row.data)).toEqual(pending.map((row) => row.data))
  })

  it('marks the pending logs of a dropped transaction removed when the next block arrives without it', async () => {
    const kept = await send(2, 2, 100)
    const dropped = await send(3, 2, 200)
    await waitFor(async () => (await rowsOf(dropped)).length === 2 && (await rowsOf(kept)).length === 2, 'both pending')
    expect(await devnet.dropTransaction(dropped)).toBe(true)
    const mined = await devnet.mine()
    await waitFor(async () => (await rowsOf(dropped)).every((row) => row.removed), 'the dropped rows to be removed')
    expect(await rowsOf(dropped)).toEqual([
      expect.objectContaining({ status: 'pending', removed: true, block_hash: ZERO_HASH }),
      expect.objectContaining({ status: 'pending', removed: true, block_hash: ZERO_HASH }),
    ])
    await waitFor(async () => (await rowsOf(kept)).every((row) => row.status === 'confirmed'), 'the kept rows to confirm')
    expect((await rowsOf(kept)).every((row) => row.block_hash === mined.hash)).toBe(true)
  })

  it('leaves the confirmed index equal to the node, with one row per log', async () => {
    for (let i = 0; i < 5; i++) await send(4 + (i % 3), 2 + i, 1000 + i * 10)
    await waitFor(async () => {
      const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE status = 'pending' AND NOT removed`)
      return rows[0].n >= 20
    }, 'the pending rows')
    await devnet.mine()
    const head = Number(await fixtureClient(devnet.url).getBlockNumber())
    await waitFor(async () => (await db.store.pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block === head, 'the follower')
    await expectIndexMatchesNode(db.store.pool, devnet.anvilUrl, [Number(env.START_BLOCK) + 1, head])
    const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE status = 'pending' AND NOT removed`)
    expect(rows[0].n).toBe(0)
  })
})

describe('the pending poll', () => {
  it('also reads the head, so a new block is stored without waiting for the head poll', async () => {
    const quiet = await createTestDatabase()
    const redis = createTestRedisPrefix()
    cleanups.push(() => quiet.drop(), () => redis.cleanup())
    const client = fixtureClient(devnet.url)
    const start = Number(await client.getBlockNumber())
    const liveBlock = async () => (await quiet.store.pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block
    // The head poll is the longest allowed: only the pending poll can wake the follower within the wait below.
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], {
      ...env,
      DATABASE_URL: quiet.url,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: String(start),
      HEAD_POLL_MS: '60000',
    })
    cleanups.push(() => daemon.kill('SIGKILL'))
    await waitFor(async () => (await liveBlock()) === start, 'the follower to start')

    // Empty blocks: no pending log announces them.
    for (let i = 0; i < 3; i++) {
      const mined = await devnet.mine()
      await waitFor(async () => (await liveBlock()) === Number(mined.number), `block ${mined.number} to be stored`, 20_000)
    }
  })
})
