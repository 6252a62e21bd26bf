/**
 * The tip on a chain shaped like Base since Denim (the devnet's `base` profile: a canonical block every
 * 200 ms, `pending` answering like `latest`) and on a pre-confirming one (`op`): what the probe says of
 * each, and the daemon on `base` under load with a reorg — every log equal to the node, no pending row
 * ever written, and at most 3 node calls (2.5 HTTP requests) per block, counted at the node.
 */
import type { Address, Hash } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeChain } from '../src/chains/index.js'
import { createDevnet, type Devnet } from '../harness/devnet/index.js'
import { createRpcClient } from '../src/rpc/index.js'
import { artifacts, encodeEmitMany, sendWithSuffix } from '../harness/fixtures/chain.js'
import { schema0Suffix } from '../harness/fixtures/erc8021-vectors.js'
import { expectIndexMatchesNode, waitFor } from './helpers/compare.js'
import { deployOnDevnet } from './helpers/devnet.js'
import { spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const totalCalls = (calls: Record<string, number>) => Object.values(calls).reduce((sum, n) => sum + n, 0)

describe('chain probe', () => {
  it('says a base-profile chain does not pre-confirm and measures its 200 ms blocks', async () => {
    const devnet = await createDevnet({ profile: 'base' })
    cleanups.push(() => devnet.stop())
    await waitFor(async () => Number(await createRpcClient({ url: devnet.url }).request<string>('eth_blockNumber')) >= 20, '20 blocks')
    const probe = await probeChain(createRpcClient({ url: devnet.url }))
    expect(probe.preconfirms).toBe(false)
    expect(probe.blockTimeMs).toBeGreaterThanOrEqual(150)
    expect(probe.blockTimeMs).toBeLessThanOrEqual(400)
  })

  it('says an op-profile chain pre-confirms through pending', async () => {
    const devnet = await createDevnet({ profile: 'op', blockTimeMs: 0 })
    cleanups.push(() => devnet.stop())
    const probe = await probeChain(createRpcClient({ url: devnet.url }))
    expect(probe.preconfirms).toBe(true)
  })
})

describe.each([
  { heads: 'polled', scope: 'logs' },
  { heads: 'newHeads', scope: 'blocks' },
] as const)('daemon on the base profile, heads $heads, $scope scope', ({ heads, scope }) => {
  let devnet: Devnet
  let db: TestDatabase
  let emitter: Address
  let start: number
  let output: () => string

  beforeAll(async () => {
    devnet = await createDevnet({ profile: 'base' })
    cleanups.push(() => devnet.stop())
    emitter = await deployOnDevnet(devnet, artifacts.Emitter)
    db = await createTestDatabase()
    const redis = createTestRedisPrefix()
    cleanups.push(
      () => db.drop(),
      () => redis.cleanup(),
    )
    start = Number(await createRpcClient({ url: devnet.anvilUrl }).request<string>('eth_blockNumber'))
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], {
      RPC_URL: devnet.url,
      DATABASE_URL: db.url,
      REDIS_URL,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: String(start),
      ATTRIBUTION_SCOPE: scope,
      LOG_LEVEL: 'info',
      ...(heads === 'newHeads' ? { RPC_WS_URL: devnet.wsUrl } : {}),
    })
    cleanups.push(async () => daemon.kill('SIGKILL'))
    output = daemon.output
    await waitFor(
      async () => ((await db.store.pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block ?? -1) >= start,
      'the follower to start',
    )
  })

  it('follows 50+ blocks under load and a reorg with at most 3 calls per block, no pending row, and every log equal to the node', async () => {
    const pool = db.store.pool
    const liveBlock = async () => Number((await pool.query('SELECT live_block FROM chain_state')).rows[0].live_block)
    const pendingRows = async () =>
      Number(
        (
          await pool.query(
            `SELECT (SELECT count(*) FROM logs WHERE status = 'pending') + (SELECT count(*) FROM transactions WHERE status = 'pending')
               + (SELECT count(*) FROM attributions WHERE status = 'pending') AS n`,
          )
        ).rows[0].n,
      )
    // Load goes to anvil itself, so the endpoint counts only the daemon's calls.
    let sending = true
    let seq = 0
    let pendingSeen = 0
    const load = (async () => {
      while (sending) {
        const round: Promise<Hash | undefined>[] = []
        for (let from = 1; from <= 5; from++) {
          const data = encodeEmitMany(3, seq++, '0xbeef')
          // One suffixed transaction every other block: Base's 2 % of 25 transactions.
          const suffix = from === 5 && seq % 2 === 0 ? { suffix: schema0Suffix('7069703031') } : {}
          // A reorg drops what the pool held; the next round sends on from the node's nonce.
          round.push(
            sendWithSuffix(devnet.anvilUrl, { from, to: emitter, data, ...suffix, gas: 500_000n, wait: false }).catch(() => undefined),
          )
        }
        await Promise.all([...round, sleep(200)])
        pendingSeen += await pendingRows()
      }
    })()

    // Stopped before the database goes, should an assertion fail first.
    cleanups.push(async () => {
      sending = false
      await load
    })
    await waitFor(async () => (await liveBlock()) >= start + 5, 'the first loaded blocks')
    const before = { calls: devnet.calls(), block: await liveBlock() }
    await waitFor(async () => (await liveBlock()) >= before.block + 50, '50 more blocks', 120_000)
    const after = { calls: devnet.calls(), block: await liveBlock() }
    const blocks = after.block - before.block
    const calls = totalCalls(after.calls.calls) - totalCalls(before.calls.calls)
    const requests = after.calls.requests - before.calls.requests
    const byMethod = Object.fromEntries(
      Object.entries(after.calls.calls).map(([method, n]) => [method, n - (before.calls.calls[method] ?? 0)]),
    )
    expect(calls / blocks).toBeLessThanOrEqual(3)
    expect(requests / blocks).toBeLessThanOrEqual(2.5)
    expect(byMethod.eth_getTransactionByHash ?? 0).toBe(0)

    const orphaned = await devnet.reorg(2)
    await sleep(1_000)
    sending = false
    await load
    const head = Number(await createRpcClient({ url: devnet.anvilUrl }).request<string>('eth_blockNumber'))
    await waitFor(async () => (await liveBlock()) >= head, 'the follower to reach the head')
    expect(orphaned.number).toBeGreaterThan(0n)
    expect(Number((await pool.query(`SELECT count(*) AS n FROM reorgs`)).rows[0].n)).toBeGreaterThan(0)
    await expectIndexMatchesNode(pool, devnet.url, [start, head])
    expect(pendingSeen).toBe(0)
    expect(await pendingRows()).toBe(0)
    const attributed = await pool.query(`SELECT count(*) AS n, count(gas_used) AS gas FROM transactions WHERE has_suffix AND NOT removed`)
    expect(Number(attributed.rows[0].n)).toBeGreaterThan(0)
    expect(attributed.rows[0].gas).toBe(attributed.rows[0].n)
    expect(output()).toContain('chain profile: no pre-confirmations on this chain')
    const profile = await pool.query(`SELECT preconfirmations, preconfirmations_source, block_time_ms FROM chain_state`)
    expect(profile.rows[0]).toMatchObject({ preconfirmations: false, preconfirmations_source: 'probe' })
    expect(profile.rows[0].block_time_ms).toBeGreaterThanOrEqual(150)
    expect(profile.rows[0].block_time_ms).toBeLessThanOrEqual(300)
  })
})
