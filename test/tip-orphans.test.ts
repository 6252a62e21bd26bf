/**
 * Rows a range job stored at the tip's heights from another fork are orphaned in the tip's
 * own transaction (no moment, and no crash at `tip-stored`, leaves both forks served at one height), and
 * the tip write takes the fork-mark lock, so a range job of the old fork committing beside it is either
 * orphaned by it or sees its blocks.
 */
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAttributor } from '../src/attribution/attributor.js'
import { advanceToFinalized } from '../src/reorg/index.js'
import { startAnvil } from '../harness/devnet/anvil.js'
import { silentLogger } from '../src/internal/logger.js'
import { createRpcClient } from '../src/rpc/index.js'
import {
  advanceFinality,
  getIntervals,
  insertBlocks,
  listRepairs,
  lockForkMarks,
  recordInterval,
  storeTipBlocks,
  withTransaction,
} from '../src/store/index.js'
import { finalizeBehindFinality } from '../src/store/finality.js'
import { waitFor } from './helpers/compare.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN = 8453
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
/** Block `n` of fork `fork`. */
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

/** What a range job of filter `g` writes for block `n` of `fork` (a header and one log), in the caller's transaction. */
async function rangeJobRows(client: pg.PoolClient, n: number, fork: number) {
  const block = header(n, fork)
  await insertBlocks(client, CHAIN, [block], () => 'confirmed')
  await client.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal, address, topic0, data, status)
     VALUES ($1, $2, $3, to_timestamp($4), $5, 0, 0, 0, $6, $7, '0x', 'confirmed')`,
    [CHAIN, n, block.hash, block.timestamp, hash(500_000 + fork * 1_000 + n), `0x${'cc'.repeat(20)}`, hash(0xabc)],
  )
  await recordInterval(client, CHAIN, 'g', [n, n])
}

const lockWaits = async () =>
  (
    await db.store.pool.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    )
  ).rows[0].n

const rowsAt = async (n: number) =>
  (
    await db.store.pool.query(
      `SELECT 'log' AS kind, block_hash AS hash, removed FROM logs WHERE chain_id = $1 AND block_number = $2
     UNION ALL SELECT 'block', hash, removed FROM blocks WHERE chain_id = $1 AND number = $2 ORDER BY 1, 2`,
      [CHAIN, n],
    )
  ).rows

describe('the tip orphans rows of another fork at its heights in its own transaction', () => {
  it('marks a range job’s block of the old fork removed with a repair for its filter in the very commit that stores the canonical block', async () => {
    const pool = db.store.pool
    await withTransaction(pool, (client) => rangeJobRows(client, 20, 1))
    const stored = await storeTipBlocks(pool, { chainId: CHAIN, filterId: 'f', blocks: [header(20, 2)], rows: [], finalizedBlock: null })
    // Nothing else ran after the tip's commit (as after a crash at `tip-stored`): the old fork is already removed.
    expect(stored.orphaned).toEqual([{ number: 20, hash: header(20, 1).hash }])
    expect(stored.orphanLogsRemoved).toBe(1)
    expect(await rowsAt(20)).toEqual([
      { kind: 'block', hash: header(20, 1).hash, removed: true },
      { kind: 'block', hash: header(20, 2).hash, removed: false },
      { kind: 'log', hash: header(20, 1).hash, removed: true },
    ])
    expect((await listRepairs(pool, CHAIN)).map((r) => [r.filterId, r.fromBlock, r.toBlock, r.reason])).toEqual([['g', 20, 20, 'orphaned']])
    expect(await getIntervals(pool, CHAIN, 'g')).toEqual([])
    expect(await getIntervals(pool, CHAIN, 'f')).toEqual([[20, 20]])
  })

  it('waits for a range job of the old fork holding the fork-mark lock, then orphans what it committed', async () => {
    const pool = db.store.pool
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const holding = new Promise<void>((resolve) => (locked = resolve))
    // A range job that checked its blocks against the index before the tip stored block 30, and commits after.
    const rangeJob = withTransaction(pool, async (client) => {
      await lockForkMarks(client, CHAIN, 'store')
      locked()
      await held
      await rangeJobRows(client, 30, 1)
    })
    await holding
    const tip = storeTipBlocks(pool, { chainId: CHAIN, filterId: 'f', blocks: [header(30, 2)], rows: [], finalizedBlock: null })
    await waitFor(async () => (await lockWaits()) > 0, 'the tip write to wait for the range job')
    release()
    await rangeJob
    const stored = await tip
    expect(stored.orphaned).toEqual([{ number: 30, hash: header(30, 1).hash }])
    expect((await rowsAt(30)).filter((row) => !row.removed)).toEqual([{ kind: 'block', hash: header(30, 2).hash, removed: false }])
  })
})

describe('finality against range jobs committing beside it', () => {
  it('waits for a range job that read the old finalized block, then finalizes its rows instead of leaving them confirmed below it', async () => {
    const pool = db.store.pool
    await pool.query(`UPDATE chain_state SET finalized_block = 40, live_block = 60 WHERE chain_id = $1`, [CHAIN])
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let stored!: () => void
    const written = new Promise<void>((resolve) => (stored = resolve))
    // A range job of blocks 41–50 that read finalized = 40: its rows are `confirmed`, and finality had not moved when it looked again.
    const rangeJob = withTransaction(pool, async (client) => {
      await lockForkMarks(client, CHAIN, 'store')
      await rangeJobRows(client, 45, 2)
      await finalizeBehindFinality(client, CHAIN, [41, 50], 40)
      stored()
      await held
    })
    await written
    const finality = advanceFinality(pool, CHAIN, [40, 50])
    await waitFor(async () => (await lockWaits()) > 0, 'finality to wait for the range job')
    release()
    await rangeJob
    expect(await finality).toBe(1)
    const { rows } = await pool.query(`SELECT status FROM logs WHERE chain_id = $1 AND block_number = 45 AND NOT removed`, [CHAIN])
    expect(rows).toEqual([{ status: 'finalized' }])
  })

  it('checks rows a range job committed after the step read its blocks: a block of another fork is orphaned, never finalized', async () => {
    const pool = db.store.pool
    await storeTipBlocks(pool, {
      chainId: CHAIN,
      filterId: 'f',
      blocks: [header(51, 2), header(52, 2), header(53, 2)],
      rows: [],
      finalizedBlock: 50,
    })
    const steps = await advanceToFinalized(pool, {
      chainId: CHAIN,
      finalized: { number: 53 },
      // The node's answer for the step's top arrives after a range job stored block 52 of the old fork.
      fetchHeader: async (n) => {
        await withTransaction(pool, async (client) => {
          await lockForkMarks(client, CHAIN, 'store')
          await rangeJobRows(client, 52, 1)
        })
        return header(n, 2)
      },
      fetchHeaders: async (numbers) => numbers.map((n) => header(n, 2)),
    })
    expect(steps).toEqual([
      { type: 'orphaned', blocks: [52], logsRemoved: 1 },
      { type: 'finalize', from: 51, to: 53, logs: 0 },
    ])
    const { rows } = await pool.query(`SELECT hash, status, removed FROM blocks WHERE chain_id = $1 AND number = 52 ORDER BY hash`, [CHAIN])
    expect(rows).toEqual([
      { hash: header(52, 1).hash, status: 'confirmed', removed: true },
      { hash: header(52, 2).hash, status: 'finalized', removed: false },
    ])
    expect((await pool.query(`SELECT status, removed FROM logs WHERE chain_id = $1 AND block_number = 52`, [CHAIN])).rows).toEqual([
      { status: 'confirmed', removed: true },
    ])
  })
})

describe('blocks scope against a backend on another fork', () => {
  it('refuses to attribute a block without logs read whole from another fork than the header read for the range', async () => {
    const anvil = await startAnvil()
    try {
      const rpc = createRpcClient({ url: anvil.url })
      const attributor = createAttributor({
        rpc: { request: (method, params) => rpc.request(method, params), batch: (calls) => rpc.batch(calls) },
        chainId: 31337,
        logger: silentLogger,
        pool: db.store.pool,
        scope: 'blocks',
      })
      const snapshot = await rpc.request<string>('evm_snapshot', [])
      await rpc.request('anvil_mine', ['0x1'])
      // The range job's header of block 1, read before the chain moved to another block 1.
      const old = await rpc.request<{ hash: string }>('eth_getBlockByNumber', ['0x1', false])
      await rpc.request('evm_revert', [snapshot])
      await rpc.request('evm_setNextBlockTimestamp', [Math.floor(Date.now() / 1000) + 1_000])
      await rpc.request('anvil_mine', ['0x1'])
      const current = await rpc.request<{ hash: string }>('eth_getBlockByNumber', ['0x1', false])
      expect(current.hash).not.toBe(old.hash)
      await expect(attributor.attribute([], () => 'confirmed', [1, 1], new Map(), new Map([[1, old.hash]]))).rejects.toThrow('block 1 (')
      await expect(attributor.attribute([], () => 'confirmed', [1, 1], new Map(), new Map([[1, current.hash]]))).resolves.toBeTypeOf(
        'function',
      )
    } finally {
      await anvil.stop()
    }
  })
})
