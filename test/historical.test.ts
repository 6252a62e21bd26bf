import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { silentLogger } from '../src/internal/logger.js'
import { createRpcClient, getLogs } from '../src/rpc/index.js'
import type { LogInput } from '../src/store/index.js'
import { toRpcFilter } from '../src/sync/filter.js'
import { createRangeProcessor, planBackfill } from '../src/sync/historical.js'
import { buildChain } from '../harness/fixtures/chain.js'
import { startFaultProxy, type FaultProxy } from '../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode } from './helpers/compare.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337

let anvil: Anvil
let proxy: FaultProxy
let db: TestDatabase
let lastBlock: number

beforeAll(async () => {
  anvil = await startAnvil()
  // Longer than the first request of a range (100 blocks), dense enough for several after it.
  lastBlock = Number((await buildChain(anvil.url, { blocks: 150, txsPerBlock: 1 })).toBlock)
  proxy = await startFaultProxy({ upstream: anvil.url })
  db = await createTestDatabase()
})

afterAll(async () => {
  await db?.drop()
  await proxy?.stop()
  await anvil?.stop()
})

describe('a range job', () => {
  it('reads a dense range in requests sized to its density, and stores every log once', async () => {
    const rpc = createRpcClient({ url: proxy.url })
    const logsPerRequest = 30
    const processRange = createRangeProcessor({
      pool: db.store.pool,
      logger: silentLogger,
      chain: { chainId: CHAIN_ID, verify: async () => {} },
      fetchLogs: ([fromBlock, toBlock], filter) =>
        getLogs(rpc, { fromBlock, toBlock, ...toRpcFilter(filter), maxBlocks: 1000 }) as Promise<LogInput[]>,
      fetchBlocks: () => Promise.reject(new Error('every block is final: no header is needed')),
      finalizedBlock: async () => lastBlock,
      logsPerRequest,
    })
    const plan = await planBackfill(db.store.pool, {
      chainId: CHAIN_ID,
      filter: { addresses: [], topics: [] },
      range: [0, lastBlock],
      chunkBlocks: 1000,
    })
    expect(plan.jobs).toHaveLength(1)
    proxy.resetStats()

    const result = await processRange(plan.jobs[0]!)

    const stored = await expectIndexMatchesNode(db.store.pool, anvil.url, [0, lastBlock])
    expect(result).toEqual({ logs: stored, inserted: stored, stored: true })
    // The requests tile the range in order, one after another; after the first they are sized by the
    // density of the one before, here a few blocks for about 30 logs each.
    const ranges = proxy.stats.getLogsRanges
    expect(ranges[0]).toMatchObject({ fromBlock: 0, toBlock: 99 })
    expect(ranges.at(-1)!.toBlock).toBe(lastBlock)
    ranges.slice(1).forEach((range, i) => expect(range.fromBlock).toBe(ranges[i]!.toBlock + 1))
    const firstLogs = await rpc.request<unknown[]>('eth_getLogs', [{ fromBlock: '0x0', toBlock: '0x63' }])
    expect(ranges[1]!.toBlock - ranges[1]!.fromBlock + 1).toBe(Math.floor((logsPerRequest * 100) / firstLogs.length))
    expect(ranges.length).toBeGreaterThan(5)
  })

  it('reads the timestamps of blocks whose logs carry none from their headers, each block once', async () => {
    const other = await createTestDatabase()
    try {
      const rpc = createRpcClient({ url: anvil.url })
      const asked: number[] = []
      const processRange = createRangeProcessor({
        pool: other.store.pool,
        logger: silentLogger,
        chain: { chainId: CHAIN_ID, verify: async () => {} },
        // A node whose logs have no blockTimestamp (some geth builds).
        fetchLogs: async ([fromBlock, toBlock], filter) =>
          (await getLogs(rpc, { fromBlock, toBlock, ...toRpcFilter(filter), maxBlocks: 1000 })).map(
            ({ blockTimestamp: _, ...log }) => log,
          ) as LogInput[],
        fetchBlocks: async (numbers) => {
          asked.push(...numbers)
          const headers = await rpc.batch<{ number: string; hash: string; parentHash: string; timestamp: string }>(
            numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, false] })),
          )
          return headers.map((header) => ({
            number: Number(header.number),
            hash: header.hash,
            parentHash: header.parentHash,
            timestamp: Number(header.timestamp),
          }))
        },
        finalizedBlock: async () => lastBlock,
        logsPerRequest: 30,
      })
      const plan = await planBackfill(other.store.pool, {
        chainId: CHAIN_ID,
        filter: { addresses: [], topics: [] },
        range: [0, lastBlock],
        chunkBlocks: 1000,
      })

      await processRange(plan.jobs[0]!)

      await expectIndexMatchesNode(other.store.pool, anvil.url, [0, lastBlock])
      const { rows } = await other.store.pool.query<{ n: number }>('SELECT DISTINCT block_number::int AS n FROM logs ORDER BY n')
      expect([...asked].sort((a, b) => a - b)).toEqual(rows.map((row) => row.n))
    } finally {
      await other.drop()
    }
  })
})
