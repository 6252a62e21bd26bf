import { afterAll, describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { anvilAccount, buildChain, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { expectIndexMatchesNode, waitFor } from './helpers/compare.js'
import { runTs, spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

async function setup() {
  const anvil = await startAnvil()
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => anvil.stop(),
    () => db.drop(),
    () => redis.cleanup(),
  )
  const env = {
    RPC_URL: anvil.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: '0',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '0',
    LOG_LEVEL: 'info',
  }
  const client = fixtureClient(anvil.url)
  return { anvil, db, env, client }
}

function daemon(env: Record<string, string>, role = 'scheduler'): Spawned {
  const spawned = spawnTs('src/main.ts', ['--role', role], env)
  cleanups.push(() => spawned.kill('SIGKILL'))
  return spawned
}

async function head(anvil: Anvil) {
  const block = await fixtureClient(anvil.url).getBlock({ blockTag: 'latest' })
  return { number: Number(block.number), hash: block.hash }
}

/** Waits until the follower has stored the node's current head (same number and hash). */
async function caughtUp(db: TestDatabase, anvil: Anvil) {
  await waitFor(
    async () => {
      const [node, { rows }] = await Promise.all([head(anvil), db.store.pool.query('SELECT live_block, live_hash FROM chain_state')])
      return rows[0]?.live_block === node.number && rows[0]?.live_hash === node.hash
    },
    'the follower to reach the head',
    60_000,
    100,
  )
}

describe('head follower', () => {
  it('follows new blocks and five reorgs of depth 1–5, keeping orphaned rows as removed', async () => {
    const { anvil, db, env, client } = await setup()
    const { emitter } = await buildChain(anvil.url, { blocks: 6, txsPerBlock: 2 })
    daemon(env)
    await caughtUp(db, anvil)
    await buildChain(anvil.url, { blocks: 6, txsPerBlock: 2, emitter })
    await caughtUp(db, anvil)

    const replacer = anvilAccount(7)
    for (let depth = 1; depth <= 5; depth++) {
      const { number } = await head(anvil)
      const orphaned = await client.getLogs({ fromBlock: BigInt(number - depth + 1), toBlock: BigInt(number) })
      expect(orphaned.length).toBeGreaterThan(0)
      const nonce = await client.getTransactionCount({ address: replacer.address, blockNumber: BigInt(number - depth) })
      const replacement: Hex = await rawSignedTx(anvil.url, {
        from: replacer,
        to: emitter,
        data: encodeEmitMany(depth + 2, 1000 * depth, '0x1234'),
        nonce,
      })
      await client.request({ method: 'anvil_reorg' as never, params: [depth, [[replacement, 0]]] as never })
      await caughtUp(db, anvil)
      const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE removed AND block_hash = ANY($1::text[])`, [
        [...new Set(orphaned.map((log) => log.blockHash))],
      ])
      expect(rows[0].n).toBe(orphaned.length)
    }

    const tip = await head(anvil)
    await expectIndexMatchesNode(db.store.pool, anvil.url, [0, tip.number])
    const reorgs = await db.store.pool.query('SELECT depth FROM reorgs ORDER BY id')
    expect(reorgs.rows.map((row) => row.depth)).toEqual([1, 2, 3, 4, 5])
    const blocks = await db.store.pool.query(`SELECT count(*) AS n FROM blocks WHERE NOT removed AND number <= $1 AND number >= 0`, [
      tip.number,
    ])
    expect(blocks.rows[0].n).toBe(tip.number + 1)

    // anvil's finalized block is head − 64: rows at or below it move to finalized, the rest stay confirmed.
    await client.request({ method: 'anvil_mine' as never, params: ['0x46'] as never })
    await buildChain(anvil.url, { blocks: 2, txsPerBlock: 1, emitter })
    await caughtUp(db, anvil)
    const finalized = Number((await client.getBlock({ blockTag: 'finalized' })).number)
    await waitFor(
      async () => (await db.store.pool.query('SELECT finalized_block FROM chain_state')).rows[0]?.finalized_block === finalized,
      'finality',
    )
    const statuses = await db.store.pool.query(
      `SELECT block_number <= $1 AS below, status, count(*) AS n FROM logs WHERE NOT removed GROUP BY 1, 2 ORDER BY 1, 2`,
      [finalized],
    )
    expect(statuses.rows.map((row) => [row.below, row.status])).toEqual([
      [false, 'confirmed'],
      [true, 'finalized'],
    ])
    const orphans = await db.store.pool.query(`SELECT DISTINCT status FROM logs WHERE removed`)
    expect(orphans.rows.map((row) => row.status)).toEqual(['confirmed'])
  })

  it('repairs backfilled rows from a fork orphaned before live indexing began, before they become final', async () => {
    const { anvil, db, env, client } = await setup()
    const { emitter } = await buildChain(anvil.url, { blocks: 8, txsPerBlock: 2 })
    const backfilled = await head(anvil)
    const backfill = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(backfilled.number)], env)
    expect(backfill.code, backfill.output).toBe(0)

    const depth = 3
    const orphaned = await client.getLogs({ fromBlock: BigInt(backfilled.number - depth + 1), toBlock: BigInt(backfilled.number) })
    const replacer = anvilAccount(7)
    const replacement = await rawSignedTx(anvil.url, { from: replacer, to: emitter, data: encodeEmitMany(4, 5000, '0xabcd'), nonce: 0 })
    await client.request({ method: 'anvil_reorg' as never, params: [depth, [[replacement, 1]]] as never })

    // Live indexing starts after the backfilled range: its parent-hash checks never see the old fork.
    daemon({ ...env, START_BLOCK: String(backfilled.number + 1) })
    await client.request({ method: 'anvil_mine' as never, params: ['0x48'] as never })
    await caughtUp(db, anvil)
    await waitFor(
      async () => (await db.store.pool.query('SELECT finalized_block FROM chain_state')).rows[0]?.finalized_block >= backfilled.number,
      'finality over the backfilled range',
    )
    // The orphan check records a repair of those blocks with its marks; the scheduler reads them again.
    await waitFor(async () => (await db.store.pool.query('SELECT count(*) AS n FROM sync_repairs')).rows[0].n === 0, 'the repair to close')
    const tip = await head(anvil)
    await expectIndexMatchesNode(db.store.pool, anvil.url, [0, tip.number])
    const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE removed AND block_hash = ANY($1::text[])`, [
      [...new Set(orphaned.map((log) => log.blockHash))],
    ])
    expect(rows[0].n).toBe(orphaned.length)
  })

  it('resumes after SIGKILL with no gap and no duplicate', async () => {
    const { anvil, db, env } = await setup()
    const { emitter } = await buildChain(anvil.url, { blocks: 4, txsPerBlock: 2 })
    const first = daemon(env)
    await caughtUp(db, anvil)
    await first.kill('SIGKILL')
    await buildChain(anvil.url, { blocks: 5, txsPerBlock: 3, emitter })
    daemon(env)
    await caughtUp(db, anvil)
    await expectIndexMatchesNode(db.store.pool, anvil.url, [0, (await head(anvil)).number])
  })

  it('runs one head follower among two daemons, and the other takes over when it dies', async () => {
    const { anvil, db, env } = await setup()
    const { emitter } = await buildChain(anvil.url, { blocks: 2, txsPerBlock: 1 })
    const a = daemon(env)
    const b = daemon(env)
    await caughtUp(db, anvil)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    const leaders = [a, b].filter((d) => d.output().includes('scheduler lease acquired'))
    expect(leaders).toHaveLength(1)
    const [leader] = leaders
    const standby = leader === a ? b : a
    await leader!.kill('SIGKILL')
    await buildChain(anvil.url, { blocks: 3, txsPerBlock: 2, emitter })
    await caughtUp(db, anvil)
    expect(standby.output()).toContain('scheduler lease acquired')
    await expectIndexMatchesNode(db.store.pool, anvil.url, [0, (await head(anvil)).number])
  })
})
