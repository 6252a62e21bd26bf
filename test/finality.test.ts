/**
 * Finality on a Base-sized unfinalized window (6,000 blocks): a step's reads, writes and node calls are
 * the same as with 2,000 (bounded steps, orphans checked against the stored parent hashes); and a
 * failing `finalized` request leaves finality where it is instead of guessing head − FINALITY_DEPTH.
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { advanceToFinalized, FINALITY_STEP_BLOCKS, type Header } from '../src/reorg/index.js'
import { startAnvil } from '../harness/devnet/anvil.js'
import { waitFor } from './helpers/compare.js'
import { spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
  cleanups.push(() => db.drop())
})
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

/** A block hash of chain `chainId` (fork `fork`) at height `n`. */
const hashOf = (chainId: number, n: number, fork = 0) =>
  `0x${chainId.toString(16).padStart(8, '0')}${fork.toString(16).padStart(8, '0')}${n.toString(16).padStart(48, '0')}`

/** Stores a followed chain of `window` unfinalized blocks (a log each) above a finalized block 0, plus one backfilled log from another fork. */
async function seedWindow(chainId: number, window: number, strayAt: number) {
  const pool = db.store.pool
  await pool.query(
    `INSERT INTO blocks (chain_id, number, hash, parent_hash, timestamp, status)
     SELECT $1, n, '0x' || lpad(to_hex($1::int), 8, '0') || lpad('0', 8, '0') || lpad(to_hex(n), 48, '0'),
            CASE WHEN n = 0 THEN NULL ELSE '0x' || lpad(to_hex($1::int), 8, '0') || lpad('0', 8, '0') || lpad(to_hex(n - 1), 48, '0') END,
            to_timestamp(1700000000 + n), CASE WHEN n = 0 THEN 'finalized' ELSE 'confirmed' END
     FROM generate_series(0, $2::int) n`,
    [chainId, window],
  )
  await pool.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal, address, data, status)
     SELECT $1, n, '0x' || lpad(to_hex($1::int), 8, '0') || lpad('0', 8, '0') || lpad(to_hex(n), 48, '0'), to_timestamp(1700000000 + n),
            '0x' || lpad(to_hex(n), 64, 'f'), 0, 0, 0, '0x00000000000000000000000000000000000000aa', '0x', 'confirmed'
     FROM generate_series(1, $2::int) n`,
    [chainId, window],
  )
  await pool.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal, address, data, status)
     VALUES ($1, $2, $3, to_timestamp(1700000000), '0x' || lpad('e', 64, 'e'), 0, 0, 0, '0x00000000000000000000000000000000000000aa', '0x', 'confirmed')`,
    [chainId, strayAt, hashOf(chainId, strayAt, 1)],
  )
  await pool.query(`INSERT INTO chain_state (chain_id, finalized_block, live_block, live_hash, head_block) VALUES ($1, 0, $2, $3, $2)`, [
    chainId,
    window,
    hashOf(chainId, window),
  ])
}

/** The pool with every query counted, with the rows it returned or changed: the work a step does in the database. */
function countingPool(pool: pg.Pool) {
  const work = { queries: 0, rows: 0 }
  const counted =
    <T extends { query: (...args: never[]) => unknown }>(target: T) =>
    async (...args: Parameters<T['query']>) => {
      const result = (await (target.query as (...a: unknown[]) => Promise<pg.QueryResult>)(...args)) as pg.QueryResult
      work.queries++
      work.rows += result.rowCount ?? 0
      return result
    }
  const wrap = <T extends object>(target: T, connect: boolean): T =>
    new Proxy(target, {
      get(object, property) {
        if (property === 'query') return counted(object as never)
        if (connect && property === 'connect') return async () => wrap(await (object as unknown as pg.Pool).connect(), false)
        const value = Reflect.get(object, property, object)
        return typeof value === 'function' ? value.bind(object) : value
      },
    })
  return { pool: wrap(pool, true), work }
}

/** One finality step with finalized = the window's top, its database work and node reads counted. */
async function firstStep(chainId: number, window: number) {
  await seedWindow(chainId, window, 500)
  const { pool, work } = countingPool(db.store.pool)
  const node = { header: 0, headers: 0 }
  const header = (n: number): Header => ({
    number: n,
    hash: hashOf(chainId, n),
    parentHash: hashOf(chainId, n - 1),
    timestamp: 1700000000 + n,
  })
  const steps = await advanceToFinalized(pool, {
    chainId,
    finalized: { number: window, hash: hashOf(chainId, window) },
    fetchHeader: async (n) => (node.header++, header(n)),
    fetchHeaders: async (numbers) => ((node.headers += numbers.length), numbers.map(header)),
  })
  return { steps, work, node }
}

describe('finality with a 6,000-block window', () => {
  it('does the same work per step as with 2,000 blocks: one bounded range, no header re-read, the orphan found from stored parent hashes', async () => {
    const small = await firstStep(11, 2_000)
    const large = await firstStep(12, 6_000)
    for (const run of [small, large]) {
      expect(run.steps).toEqual([
        { type: 'orphaned', blocks: [500], logsRemoved: 1 },
        { type: 'finalize', from: 1, to: FINALITY_STEP_BLOCKS, logs: FINALITY_STEP_BLOCKS },
      ])
      // The node is asked for the step's top header only.
      expect(run.node).toEqual({ header: 1, headers: 0 })
    }
    expect(large.work).toEqual(small.work)
    expect(large.work.rows).toBeLessThan(5 * FINALITY_STEP_BLOCKS)
  })

  it('reaches the finalized block in steps of at most 1,000 blocks', async () => {
    const chainId = 13
    await seedWindow(chainId, 2_500, 7)
    const header = (n: number): Header => ({ number: n, hash: hashOf(chainId, n), parentHash: hashOf(chainId, n - 1), timestamp: 0 })
    const ranges: [number, number][] = []
    for (;;) {
      const steps = await advanceToFinalized(db.store.pool, {
        chainId,
        finalized: { number: 2_500, hash: hashOf(chainId, 2_500) },
        fetchHeader: async (n) => header(n),
        fetchHeaders: async (ns) => ns.map(header),
      })
      const step = steps.find((s) => s.type === 'finalize')
      if (step?.type !== 'finalize') break
      ranges.push([step.from, step.to])
    }
    expect(ranges).toEqual([
      [1, 1_000],
      [1_001, 2_000],
      [2_001, 2_500],
    ])
    const { rows } = await db.store.pool.query(
      `SELECT status, removed, count(*)::int AS n FROM logs WHERE chain_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [chainId],
    )
    expect(rows).toEqual([
      { status: 'confirmed', removed: true, n: 1 },
      { status: 'finalized', removed: false, n: 2_500 },
    ])
  })
})

/** A node in front of anvil whose `finalized` tag fails ("header not found", as a lagging endpoint says) while `failing` is set. */
async function startFinalizedFaults(upstream: string) {
  const state = { failing: true, refused: 0 }
  const body = (request: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = ''
      request.on('data', (chunk) => (text += chunk))
      request.on('end', () => resolve(text))
    })
  type Call = { id: number; method: string; params?: unknown[] }
  const server = createServer(async (request, response) => {
    const parsed = JSON.parse(await body(request)) as Call | Call[]
    const calls = Array.isArray(parsed) ? parsed : [parsed]
    const answers = await Promise.all(
      calls.map(async (call) => {
        if (state.failing && call.method === 'eth_getBlockByNumber' && call.params?.[0] === 'finalized') {
          state.refused++
          return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'header not found' } }
        }
        const answer = await fetch(upstream, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(call),
        })
        return answer.json()
      }),
    )
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

describe('a failing finalized request', () => {
  it('leaves finality where it is (no head − FINALITY_DEPTH guess) until the node answers again', async () => {
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    await fetch(anvil.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x64'] }),
    })
    const node = await startFinalizedFaults(anvil.url)
    cleanups.push(() => node.close())
    const redis = createTestRedisPrefix()
    cleanups.push(() => redis.cleanup())
    const failing = await createTestDatabase()
    cleanups.push(() => failing.drop())
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], {
      RPC_URL: node.url,
      DATABASE_URL: failing.url,
      REDIS_URL,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: '0',
      FINALITY_DEPTH: '2',
      PRECONFIRMATIONS: 'off',
    })
    cleanups.push(async () => daemon.kill('SIGKILL'))
    const state = async () =>
      (await failing.store.pool.query(`SELECT live_block, finalized_block FROM chain_state`)).rows[0] as
        | { live_block: number; finalized_block: number | null }
        | undefined
    await waitFor(async () => (await state())?.live_block === 100, 'the follower to store the 100 blocks')
    // Several reads of the tag have failed by now (one every few seconds), with the tip stored meanwhile.
    await waitFor(async () => node.state.refused >= 3, 'three refused finalized reads', 30_000)
    expect((await state())?.finalized_block).toBeNull()
    expect(Number((await failing.store.pool.query(`SELECT count(*) AS n FROM blocks WHERE status = 'finalized'`)).rows[0].n)).toBe(0)

    node.state.failing = false
    // Anvil's finalized block trails its head by 64: 36, not the 98 a depth-2 guess would have given.
    await waitFor(async () => (await state())?.finalized_block === 36, 'finality from the node')
    expect(Number((await failing.store.pool.query(`SELECT max(number) AS n FROM blocks WHERE status = 'finalized'`)).rows[0].n)).toBe(36)
  })
})
