import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { buildChain } from '../harness/fixtures/chain.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'
import { loadConfig } from '../src/config/index.js'
import { createIndexer } from '../src/indexer.js'
import { silentLogger } from '../src/internal/logger.js'
import { createRpcClient, createRpcPool } from '../src/rpc/index.js'
import { planBackfill } from '../src/sync/historical.js'
import { expectIndexMatchesNode, waitFor } from './helpers/compare.js'
import { writeConfigFile } from './helpers/configFile.js'

let good: Anvil
let lagging: Anvil
let dead: string
let db: TestDatabase
let head: number

beforeAll(async () => {
  ;[good, lagging] = await Promise.all([startAnvil(), startAnvil()])
  // The same chain id; the lagging node has only the first blocks, and other hashes for them.
  head = Number((await buildChain(good.url, { blocks: 30, txsPerBlock: 2 })).toBlock)
  await buildChain(lagging.url, { blocks: 2, txsPerBlock: 1 })
  dead = `http://127.0.0.1:${await freePort()}`
  db = await createTestDatabase()
})

afterAll(async () => {
  await db?.drop()
  await Promise.all([good?.stop(), lagging?.stop()])
})

describe('several RPC endpoints for a chain', () => {
  it('takes a dead and a lagging endpoint out of rotation and indexes what the good one serves', async () => {
    // The dead and the lagging endpoints carry most of the weight.
    const file = writeConfigFile(
      `chains:\n  - id: 31337\n    name: devnet\n    rpc:\n      - { url: "${dead}", weight: 10 }\n      - { url: "${lagging.url}", weight: 10 }\n      - { url: "${good.url}", weight: 1 }\n`,
    )
    const config = loadConfig({ DATABASE_URL: db.url, RPC_TIMEOUT_MS: '2000' }, { file })
    const indexer = await createIndexer(config, silentLogger, undefined, { migrate: false })
    try {
      const plan = await planBackfill(indexer.store.pool, {
        chainId: indexer.chainId,
        filter: indexer.filter,
        range: [0, head],
        chunkBlocks: 10,
      })
      for (const job of plan.jobs) await indexer.processRange(job)
      await expectIndexMatchesNode(db.store.pool, good.url, [0, head])
    } finally {
      await indexer.close()
    }
  })

  it('spreads requests by weight and keeps each endpoint under its rate cap', async () => {
    const asked = new Map<string, number>()
    // A clock the test steps, so the cap is checked by count rather than by elapsed time.
    let clock = 1_000_000
    const pool = createRpcPool({
      endpoints: [
        { url: good.url, weight: 3 },
        { url: lagging.url, weight: 1, maxRequestsPerSecond: 5 },
      ],
      clientOf: (url) => {
        const client = createRpcClient({ url })
        return {
          ...client,
          request: (method, params, options) => (asked.set(url, (asked.get(url) ?? 0) + 1), client.request(method, params, options)),
        }
      },
      logger: silentLogger,
      maxLagBlocks: 1_000,
      probeEveryMs: 60_000,
      now: () => clock,
    })
    try {
      await Promise.all(Array.from({ length: 80 }, () => pool.request('eth_chainId')))
      // The first look at each endpoint is two requests: its chain id and its head.
      const sent = (url: string) => asked.get(url)! - 2
      expect(sent(good.url) + sent(lagging.url)).toBe(80)
      expect(sent(good.url)).toBeGreaterThan(sent(lagging.url))
      // The clock stands still: the capped endpoint's bucket starts full (5) and never refills.
      expect(sent(lagging.url)).toBeLessThanOrEqual(5)
      const beforeRefill = sent(lagging.url)
      // One second later its bucket is full again, and no fuller; while empty, everything goes elsewhere.
      clock += 1_000
      await Promise.all(Array.from({ length: 80 }, () => pool.request('eth_chainId')))
      expect(sent(good.url) + sent(lagging.url)).toBe(160)
      expect(sent(lagging.url) - beforeRefill).toBeLessThanOrEqual(5)
      expect(sent(lagging.url)).toBeGreaterThan(0)
      expect(pool.endpoints().map((e) => e.state)).toEqual(['serving', 'serving'])
    } finally {
      pool.close()
    }
  })

  it('asks an endpoint that comes back from a failure its chain id first, and keeps it out of rotation while it serves another chain', async () => {
    const swappable = await startAnvil()
    let other: Anvil | undefined
    const asked: string[] = []
    const pool = createRpcPool({
      endpoints: [
        { url: good.url, weight: 1 },
        { url: swappable.url, weight: 100 },
      ],
      clientOf: (url) => {
        const client = createRpcClient({ url, timeoutMs: 1_000 })
        return {
          ...client,
          request: (method, params, options) => (url === swappable.url && asked.push(method), client.request(method, params, options)),
        }
      },
      logger: silentLogger,
      chainId: 31337,
      maxLagBlocks: 1_000,
      probeEveryMs: 100,
    })
    try {
      await pool.request('eth_blockNumber')
      expect(pool.endpoints().map((e) => [e.state, e.chainId])).toEqual([
        ['serving', 31337],
        ['serving', 31337],
      ])
      // The endpoint's node is replaced by one of another chain on the same address.
      await swappable.stop()
      // The probe sees it fail (it rests), so the node answering on its address next is asked its chain id.
      await waitFor(async () => pool.endpoints()[1]!.state === 'resting', 'the stopped endpoint resting')
      other = await startAnvil({ chainId: 999, port: swappable.port })
      await waitFor(async () => pool.endpoints()[1]!.state === 'wrong_chain', 'the swapped endpoint out of rotation')
      expect(pool.endpoints()[1]).toMatchObject({ chainId: 999, lastError: 'serves chain 999, expected chain 31337' })
      asked.length = 0
      const answers = await Promise.all(Array.from({ length: 50 }, () => pool.request<string>('eth_chainId')))
      expect(new Set(answers)).toEqual(new Set(['0x7a69']))
      expect(asked.every((method) => method === 'eth_chainId')).toBe(true)
      expect(await pool.chainId()).toBe(31337)
    } finally {
      pool.close()
      await Promise.all([swappable.stop(), other?.stop()])
    }
  })
})
