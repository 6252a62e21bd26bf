import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { silentLogger } from '../src/internal/logger.js'
import { blocksForTarget, createRpcClient, getLogs, type LogsDensity } from '../src/rpc/index.js'
import type { FilterRange, LogInput } from '../src/store/index.js'
import { toRpcFilter } from '../src/sync/filter.js'
import { createRangeProcessor, planBackfill } from '../src/sync/historical.js'
import type { Interval } from '../src/utils/interval.js'
import { buildChain, fixtureClient } from '../harness/fixtures/chain.js'
import { expectIndexMatchesNode } from './helpers/compare.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
const LOGS_PER_REQUEST = 100
// Before Denim: a block every 2 s holding 40 logs; since: five blocks a second holding 4 logs each (the same logs per second).
const OLD_BLOCKS = 150
const NEW_BLOCKS = 200

let anvil: Anvil
let db: TestDatabase
let oldEra: Interval
let newEra: Interval

beforeAll(async () => {
  anvil = await startAnvil()
  db = await createTestDatabase()
  const start = Number((await fixtureClient(anvil.url).getBlock({ blockTag: 'latest' })).timestamp) + 10
  const old = await buildChain(anvil.url, { blocks: OLD_BLOCKS, txsPerBlock: 5, largeDataEvery: 0, blockTimestamp: (b) => start + 2 * b })
  const recent = await buildChain(anvil.url, {
    blocks: NEW_BLOCKS,
    txsPerBlock: 1,
    logsPerTx: 4,
    largeDataEvery: 0,
    emitter: old.emitter,
    blockTimestamp: (b) => start + 2 * OLD_BLOCKS + Math.floor(b / 5),
  })
  oldEra = [Number(old.fromBlock), Number(old.toBlock)]
  newEra = [Number(recent.fromBlock), Number(recent.toBlock)]
}, 120_000)

afterAll(async () => {
  await db?.drop()
  await anvil?.stop()
})

const within = ([from, to]: Interval, [a, b]: Interval) => from >= a && to <= b
const blockCount = (job: FilterRange) => job.toBlock - job.fromBlock + 1

describe('a backfill across the 2 s → 200 ms boundary', () => {
  it('sizes each request by the density of the answer before it, in either era, and stores what the node serves', async () => {
    const rpc = createRpcClient({ url: anvil.url })
    const requests: { range: Interval; density: LogsDensity }[] = []
    const processRange = createRangeProcessor({
      pool: db.store.pool,
      logger: silentLogger,
      chain: { chainId: CHAIN_ID, verify: async () => {} },
      fetchLogs: ([fromBlock, toBlock], filter) =>
        getLogs(rpc, { fromBlock, toBlock, ...toRpcFilter(filter), maxBlocks: 1000 }) as Promise<LogInput[]>,
      fetchBlocks: () => Promise.reject(new Error('every block is final: no header is needed')),
      finalizedBlock: async () => newEra[1],
      logsPerRequest: LOGS_PER_REQUEST,
      onLogsRequest: (range, density) => requests.push({ range, density }),
    })
    const range: Interval = [0, newEra[1]]
    // The default chunk size, one job for both eras: nothing is configured for either.
    const plan = await planBackfill(db.store.pool, { chainId: CHAIN_ID, filter: { addresses: [], topics: [] }, range, chunkBlocks: 1000 })
    expect(plan.jobs).toHaveLength(1)

    await processRange(plan.jobs[0]!)

    await expectIndexMatchesNode(db.store.pool, anvil.url, range)
    requests.slice(1).forEach(({ range: part }, i) => expect(part[0]).toBe(requests[i]!.range[1] + 1))
    expect(requests.at(-1)!.range[1]).toBe(range[1])
    // After the first (sized blind), no answer holds much more than the target, in either era.
    for (const { density } of requests.slice(1)) expect(density.logs).toBeLessThanOrEqual(2 * LOGS_PER_REQUEST)
    const old = requests.slice(1).filter(({ range: part }) => within(part, oldEra))
    const recent = requests.filter(
      ({ range: part }, i) => i > 0 && within(part, newEra) && within(requests[i - 1]!.range, newEra) && part[1] < range[1],
    )
    expect(old.length).toBeGreaterThan(10)
    expect(recent.length).toBeGreaterThan(3)
    // 100 logs are 2 old blocks and 25 new ones: the width follows the era, not a count learned in the first.
    for (const { range: part } of old) expect(part[1] - part[0] + 1).toBe(Math.floor(LOGS_PER_REQUEST / 40))
    for (const { range: part } of recent) expect(part[1] - part[0] + 1).toBe(LOGS_PER_REQUEST / 4)

    // Both eras as the node served them: 2 s apart, then five blocks to a second; no milliseconds from plain anvil.
    const { rows } = await db.store.pool.query<{ era: string; blocks: number; seconds: number; with_ms: number }>(
      `SELECT CASE WHEN block_number <= $1 THEN 'old' ELSE 'new' END AS era, count(DISTINCT block_number)::int AS blocks,
         count(DISTINCT block_timestamp)::int AS seconds, count(block_timestamp_ms)::int AS with_ms
       FROM analytics.logs WHERE block_number BETWEEN $2 AND $3 GROUP BY 1 ORDER BY 1 DESC`,
      [oldEra[1], oldEra[0], newEra[1]],
    )
    expect(rows).toEqual([
      { era: 'old', blocks: OLD_BLOCKS, seconds: OLD_BLOCKS, with_ms: 0 },
      { era: 'new', blocks: NEW_BLOCKS, seconds: NEW_BLOCKS / 5, with_ms: 0 },
    ])
  })

  it('sizes the first request of each later range by the last answer before it, so no range starts with a blind guess', async () => {
    const other = await createTestDatabase()
    try {
      const rpc = createRpcClient({ url: anvil.url })
      const requests: { range: Interval; density: LogsDensity }[] = []
      const processRange = createRangeProcessor({
        pool: other.store.pool,
        logger: silentLogger,
        chain: { chainId: CHAIN_ID, verify: async () => {} },
        fetchLogs: ([fromBlock, toBlock], filter) =>
          getLogs(rpc, { fromBlock, toBlock, ...toRpcFilter(filter), maxBlocks: 1000 }) as Promise<LogInput[]>,
        fetchBlocks: () => Promise.reject(new Error('every block is final: no header is needed')),
        finalizedBlock: async () => newEra[1],
        logsPerRequest: LOGS_PER_REQUEST,
        onLogsRequest: (range, density) => requests.push({ range, density }),
      })
      const range: Interval = [0, newEra[1]]
      const plan = await planBackfill(other.store.pool, {
        chainId: CHAIN_ID,
        filter: { addresses: [], topics: [] },
        range,
        chunkBlocks: 100,
      })
      expect(plan.jobs.length).toBeGreaterThan(3)
      for (const job of plan.jobs) await processRange(job)

      await expectIndexMatchesNode(other.store.pool, anvil.url, range)
      const firsts = plan.jobs.slice(1).map((job) => requests.findIndex(({ range: part }) => part[0] === job.fromBlock))
      expect(firsts.every((i) => i > 0)).toBe(true)
      for (const i of firsts) {
        const { range: part } = requests[i]!
        expect(part[1] - part[0] + 1).toBe(
          Math.min(
            blocksForTarget(requests[i - 1]!.density, { logs: LOGS_PER_REQUEST, bytes: 4 * 1024 * 1024 }),
            blockCount(plan.jobs.find((job) => job.fromBlock === part[0])!),
          ),
        )
      }
      // A blind 100 blocks of the old era would be 4,000 logs; after the very first request none holds much more than the target.
      for (const { density } of requests.slice(1)) expect(density.logs).toBeLessThanOrEqual(2 * LOGS_PER_REQUEST)
    } finally {
      await other.drop()
    }
  })
})
