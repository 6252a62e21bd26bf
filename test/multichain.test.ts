import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { Attribution } from 'ox/erc8021'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { createRangeQueue, rangeJobId } from '../src/queue/index.js'
import { insertSubscription } from '../src/store/index.js'
import { newWebhookSecret } from '../src/delivery/index.js'
import { planBackfill } from '../src/sync/historical.js'
import { buildChain, fixtureClient } from '../harness/fixtures/chain.js'
import { startFaultProxy } from '../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode, waitFor } from './helpers/compare.js'
import { listeningUrl, spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'
import { writeConfigFile } from './helpers/configFile.js'

const CHAIN_A = 10_001
const CHAIN_B = 20_002

const cleanups: (() => Promise<unknown>)[] = []
let anvilA: Anvil
let anvilB: Anvil

beforeAll(async () => {
  ;[anvilA, anvilB] = await Promise.all([startAnvil({ chainId: CHAIN_A }), startAnvil({ chainId: CHAIN_B })])
  cleanups.push(
    () => anvilA.stop(),
    () => anvilB.stop(),
  )
  await Promise.all([buildChain(anvilA.url, { blocks: 3, txsPerBlock: 2 }), buildChain(anvilB.url, { blocks: 3, txsPerBlock: 2 })])
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

/** The highest block of a chain whose logs the index holds, −1 for none. */
async function storedHead(db: TestDatabase, chainId: number): Promise<number> {
  const { rows } = await db.store.pool.query<{ n: string | null }>(
    `SELECT max(block_number) AS n FROM analytics.logs WHERE chain_id = $1`,
    [chainId],
  )
  return Number(rows[0]!.n ?? -1)
}

/** A database and a Redis prefix of the test's own, dropped and cleared after the file. */
async function ownStores() {
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  return { db, redis }
}

async function daemonEnv(db: TestDatabase, redisPrefix: string, rpcUrl: string, extra: Record<string, string> = {}) {
  return {
    RPC_URL: rpcUrl,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redisPrefix,
    START_BLOCK: '0',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '0',
    PORT: String(await freePort()),
    LOG_LEVEL: 'info',
    ...extra,
  }
}

describe('the chain id guard', () => {
  it("refuses a range job for another chain than its node's, before any write, with a fatal reason, an error log and a metric", async () => {
    const db = await createTestDatabase()
    const redis = createTestRedisPrefix()
    const queue = createRangeQueue({ redisUrl: REDIS_URL, prefix: redis.prefix })
    cleanups.push(
      () => db.drop(),
      () => redis.cleanup(),
      () => queue.close(),
    )
    // A worker whose node serves chain B, sharing Redis with a deployment of chain A.
    const worker: Spawned = spawnTs(
      'src/main.ts',
      ['--role', 'worker'],
      await daemonEnv(db, redis.prefix, anvilB.url, { METRICS_PORT: '0' }),
    )
    cleanups.push(() => worker.kill('SIGKILL'))
    const metricsUrl = await listeningUrl(worker, 'metrics listening')

    const head = Number(await fixtureClient(anvilA.url).getBlockNumber())
    const plan = await planBackfill(db.store.pool, {
      chainId: CHAIN_A,
      filter: { addresses: [], topics: [] },
      range: [0, head],
      chunkBlocks: 1000,
    })
    await queue.enqueue(plan.jobs)
    const id = rangeJobId(plan.jobs[0]!)
    await waitFor(async () => (await queue.queue.getJobState(id)) === 'failed', 'the refused job')

    const job = await queue.queue.getJob(id)
    expect(job!.failedReason).toMatch(/^fatal: /)
    expect(job!.failedReason).toContain(`says chain ${CHAIN_B}, expected chain ${CHAIN_A}`)
    // Failed at once: a refusal is not retried.
    expect(job!.attemptsMade).toBe(1)
    const { rows } = await db.store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM analytics.logs`)
    expect(rows[0]!.n).toBe(0)
    const intervals = await db.store.pool.query(`SELECT 1 FROM sync_intervals WHERE chain_id = $1`, [CHAIN_A])
    expect(intervals.rows).toHaveLength(0)
    expect(worker.output()).toMatch(/"level":(50|"error")[^\n]*range job for another chain refused/)
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text()
    expect(metrics).toContain(`codetrail_range_jobs_total{chain_id="${CHAIN_A}",outcome="refused"} 1`)
  })

  it('stops at start with one line naming both ids when the node serves another chain than CHAIN_ID', async () => {
    const { db, redis } = await ownStores()
    const daemon = spawnTs('src/main.ts', [], await daemonEnv(db, redis.prefix, anvilB.url, { CHAIN_ID: String(CHAIN_A) }))
    cleanups.push(() => daemon.kill('SIGKILL'))
    expect(await daemon.exited).toBe(1)
    const lines = daemon
      .output()
      .split('\n')
      .filter((line) => line.startsWith('codetrail could not start'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(`says chain ${CHAIN_B}, expected chain ${CHAIN_A}`)
  })

  it('stops every role when the node comes back from an outage serving another chain', async () => {
    const { db, redis } = await ownStores()
    const node = await startAnvil({ chainId: CHAIN_A })
    cleanups.push(() => node.stop())
    const env = await daemonEnv(db, redis.prefix, node.url)
    const daemon = spawnTs('src/main.ts', [], env)
    cleanups.push(() => daemon.kill('SIGKILL'))
    await waitFor(async () => (await fetch(`http://127.0.0.1:${env.PORT}/healthz`).catch(() => null))?.ok === true, 'the daemon')
    await waitFor(
      async () =>
        (await db.store.pool.query(`SELECT 1 FROM chain_state WHERE chain_id = $1 AND live_block IS NOT NULL`, [CHAIN_A])).rows.length ===
        1,
      'the head follower',
    )

    await node.stop()
    const swapped = await startAnvil({ chainId: CHAIN_B, port: node.port })
    cleanups.push(() => swapped.stop())
    await buildChain(swapped.url, { blocks: 2, txsPerBlock: 1 })

    expect(await daemon.exited).toBe(1)
    const lines = daemon
      .output()
      .split('\n')
      .filter((line) => line.startsWith('codetrail: '))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(`says chain ${CHAIN_B}, expected chain ${CHAIN_A}`)
    // The first node held no logs: any row is the second node's, stored as the first chain's.
    const { rows } = await db.store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM analytics.logs`)
    expect(rows[0]!.n).toBe(0)
  })

  it('rewinds nothing when the node behind its URL is swapped, unannounced, for another chain: what looks like a reorg is asked first', async () => {
    const { db, redis } = await ownStores()
    const balancer = await startFaultProxy({ upstream: anvilA.url })
    cleanups.push(() => balancer.stop())
    const env = await daemonEnv(db, redis.prefix, balancer.url)
    const daemon = spawnTs('src/main.ts', [], env)
    cleanups.push(() => daemon.kill('SIGKILL'))
    const head = Number(await fixtureClient(anvilA.url).getBlockNumber())
    await waitFor(async () => (await storedHead(db, CHAIN_A)) === head, 'the first chain indexed')
    const { rows: before } = await db.store.pool.query(`SELECT count(*)::int AS n FROM analytics.logs WHERE NOT removed`)
    expect(before[0]!.n).toBeGreaterThan(0)

    // No request fails: the next poll simply reaches a node of another chain, whose blocks at the same heights differ.
    balancer.setUpstream(anvilB.url)

    expect(await daemon.exited).toBe(1)
    expect(daemon.output()).toContain(`says chain ${CHAIN_B}, expected chain ${CHAIN_A}`)
    const { rows: after } = await db.store.pool.query(
      `SELECT count(*) FILTER (WHERE NOT removed)::int AS live, count(*)::int AS n FROM analytics.logs`,
    )
    expect(after[0]).toEqual({ live: before[0]!.n, n: before[0]!.n })
    const { rows: reorgs } = await db.store.pool.query(`SELECT count(*)::int AS n FROM reorgs`)
    expect(reorgs[0]!.n).toBe(0)
  })

  it('stores nothing from another chain when the node behind its URL fails over to one that extends its blocks', async () => {
    const { db, redis } = await ownStores()
    // Two chains whose genesis blocks are the same block (the chain id is not in a header): the second one's blocks
    // extend the first one's tip, so no parent hash tells them apart.
    const sameGenesis = ['--timestamp', '1700000000']
    const [node, other] = await Promise.all([
      startAnvil({ chainId: CHAIN_A, extraArgs: sameGenesis }),
      startAnvil({ chainId: CHAIN_B, extraArgs: sameGenesis }),
    ])
    cleanups.push(
      () => node.stop(),
      () => other.stop(),
    )
    await buildChain(other.url, { blocks: 3, txsPerBlock: 2 })
    const balancer = await startFaultProxy({ upstream: node.url })
    cleanups.push(() => balancer.stop())
    const env = await daemonEnv(db, redis.prefix, balancer.url)
    const daemon = spawnTs('src/main.ts', [], env)
    cleanups.push(() => daemon.kill('SIGKILL'))
    await waitFor(
      async () =>
        (await db.store.pool.query(`SELECT 1 FROM chain_state WHERE chain_id = $1 AND live_block >= 0`, [CHAIN_A])).rows.length === 1,
      'the head follower past the genesis block',
    )

    // The node fails for longer than the chain-id watch's look, then the balancer sends the same connection to the
    // other chain's node. The tip reads its blocks at its next poll (100 ms); the watch looks again within a second.
    balancer.setFaults({ '*': { unavailable: {} } })
    await sleep(1_500)
    balancer.setUpstream(other.url)
    balancer.setFaults({})

    expect(await daemon.exited).toBe(1)
    expect(daemon.output()).toContain(`says chain ${CHAIN_B}, expected chain ${CHAIN_A}`)
    const { rows } = await db.store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM analytics.logs`)
    expect(rows[0]!.n).toBe(0)
    const { rows: blocks } = await db.store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM blocks WHERE number > 0`)
    expect(blocks[0]!.n).toBe(0)
  })
})

describe('the chain id of each RPC endpoint', () => {
  it('takes an endpoint of another chain out of rotation, names it masked in the log and the status, and indexes from the others', async () => {
    const { db, redis } = await ownStores()
    // Chain B's node behind a key in its path, listed first and weighted heaviest among chain A's endpoints.
    const key = 'k3y-0f-chain-b-endpoint'
    const configFile = writeConfigFile(
      `chains:\n  - id: ${CHAIN_A}\n    name: alpha\n    startBlock: 0\n    headPollMs: 100\n    pendingPollMs: 0\n    rpc:\n      - { url: "${anvilB.url}/?apikey=${key}", weight: 10 }\n      - { url: "${anvilA.url}", weight: 1 }\n`,
    )
    const env = await daemonEnv(db, redis.prefix, 'http://unused.invalid:1', { CODETRAIL_CONFIG: configFile })
    const daemon = spawnTs('src/main.ts', [], env)
    cleanups.push(() => daemon.kill('SIGKILL'))
    const head = Number(await fixtureClient(anvilA.url).getBlockNumber())
    await waitFor(async () => (await storedHead(db, CHAIN_A)) >= head, 'chain A from its good endpoint')
    await expectIndexMatchesNode(db.store.pool, anvilA.url, [0, head], undefined, CHAIN_A)
    const api = `http://127.0.0.1:${env.PORT}`
    await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API')
    const status = (await (await fetch(`${api}/v1/status`)).json()) as {
      chains: { chainId: number; endpoints: { url: string; state: string; chainId: number | null; lastError: string | null }[] | null }[]
    }
    const maskedB = `${new URL(anvilB.url).origin}/***`
    expect(status.chains[0]!.endpoints).toEqual([
      expect.objectContaining({
        url: maskedB,
        state: 'wrong_chain',
        chainId: CHAIN_B,
        lastError: `serves chain ${CHAIN_B}, expected chain ${CHAIN_A}`,
      }),
      expect.objectContaining({ url: new URL(anvilA.url).origin, state: 'serving', chainId: CHAIN_A }),
    ])
    const named = daemon
      .output()
      .split('\n')
      .filter((line) => line.includes('rpc endpoint serves another chain'))
    expect(named.length).toBeGreaterThan(0)
    expect(named[0]).toContain(maskedB)
    expect(daemon.output()).not.toContain(key)
    expect(daemon.child.exitCode).toBeNull()
  })

  it('stops the role as with one endpoint when no endpoint of a chain serves it', async () => {
    const { db, redis } = await ownStores()
    const dead = `http://127.0.0.1:${await freePort()}`
    const configFile = writeConfigFile(
      `chains:\n  - id: ${CHAIN_A}\n    name: alpha\n    startBlock: 0\n    pendingPollMs: 0\n    rpc: ["${anvilB.url}", "${dead}"]\n`,
    )
    const daemon = spawnTs(
      'src/main.ts',
      [],
      await daemonEnv(db, redis.prefix, 'http://unused.invalid:1', { CODETRAIL_CONFIG: configFile }),
    )
    cleanups.push(() => daemon.kill('SIGKILL'))
    expect(await daemon.exited).toBe(1)
    expect(daemon.output()).toContain(`says chain ${CHAIN_B}, expected chain ${CHAIN_A}`)
    const { rows } = await db.store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM analytics.logs`)
    expect(rows[0]!.n).toBe(0)
  })
})

describe('two chains in one deployment', () => {
  it("indexes each chain from its own node, and one chain's node hanging for 30 s leaves the other's tip moving", async () => {
    const { db, redis } = await ownStores()
    const [nodeA, nodeB] = await Promise.all([startAnvil({ chainId: CHAIN_A }), startAnvil({ chainId: CHAIN_B })])
    cleanups.push(
      () => nodeA.stop(),
      () => nodeB.stop(),
    )
    // One code on both chains: the leaderboard and stats across chains sum them.
    const suffix = () => Attribution.toDataSuffix({ codes: ['bc_both'] })
    const [builtA, builtB] = await Promise.all([
      buildChain(nodeA.url, { blocks: 3, txsPerBlock: 2, suffix }),
      buildChain(nodeB.url, { blocks: 4, txsPerBlock: 1, suffix }),
    ])
    const chain = (id: number, name: string, url: string) =>
      `  - { id: ${id}, name: ${name}, rpc: "${url}", startBlock: 0, headPollMs: 100, pendingPollMs: 0 }\n`
    const configFile = writeConfigFile(
      `rpcTimeoutMs: 3000\nchains:\n${chain(CHAIN_A, 'alpha', nodeA.url)}${chain(CHAIN_B, 'beta', nodeB.url)}`,
    )
    const env = await daemonEnv(db, redis.prefix, 'http://unused.invalid:1')
    const daemon = spawnTs('src/main.ts', ['--config', configFile], env)
    cleanups.push(() => daemon.kill('SIGKILL'))

    await waitFor(
      async () => (await storedHead(db, CHAIN_A)) >= Number(builtA.toBlock) && (await storedHead(db, CHAIN_B)) >= Number(builtB.toBlock),
      'both chains',
    )
    await expectIndexMatchesNode(db.store.pool, nodeA.url, [0, Number(builtA.toBlock)], undefined, CHAIN_A)
    await expectIndexMatchesNode(db.store.pool, nodeB.url, [0, Number(builtB.toBlock)], undefined, CHAIN_B)

    // Every surface knows the chain.
    const api = `http://127.0.0.1:${env.PORT}`
    await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API')
    const { rows: chains } = await db.store.pool.query(`SELECT chain_id, name, indexed_block FROM analytics.chains ORDER BY chain_id`)
    expect(chains.map((row) => [row.chain_id, row.name])).toEqual([
      [CHAIN_A, 'alpha'],
      [CHAIN_B, 'beta'],
    ])
    const status = (await (await fetch(`${api}/v1/status?chainId=${CHAIN_B}`)).json()) as {
      chainId: number
      chains: { chainId: number; name: string }[]
    }
    expect(status.chainId).toBe(CHAIN_B)
    expect(status.chains.map((c) => [c.chainId, c.name])).toEqual([
      [CHAIN_A, 'alpha'],
      [CHAIN_B, 'beta'],
    ])
    const logsOf = async (query: string) =>
      ((await (await fetch(`${api}/v1/logs?limit=1000&${query}`)).json()) as { items: { chainId: number }[] }).items
    const [logsA, logsB] = await Promise.all([logsOf(''), logsOf(`chainId=${CHAIN_B}`)])
    expect(new Set(logsA.map((log) => log.chainId))).toEqual(new Set([CHAIN_A]))
    expect(new Set(logsB.map((log) => log.chainId))).toEqual(new Set([CHAIN_B]))
    expect(logsB.length).toBe((await db.store.pool.query(`SELECT 1 FROM analytics.logs WHERE chain_id = $1`, [CHAIN_B])).rows.length)
    const txB = builtB.txHashes[0]!
    const required = await fetch(`${api}/v1/transactions/${txB}/attribution`)
    expect([required.status, ((await required.json()) as { error: { code: string } }).error.code]).toEqual([400, 'chain_id_required'])
    expect((await fetch(`${api}/v1/transactions/${txB}/attribution?chainId=${CHAIN_A}`)).status).toBe(404)
    type Counts = { attributions: number; distinctSenders: number; gasUsed: string }
    const read = async <T>(path: string) => (await (await fetch(`${api}${path}`)).json()) as T
    await waitFor(
      async () =>
        (await read<{ total: Counts }>(`/v1/builder-codes/bc_both/stats?chainId=all`)).total.attributions ===
        builtA.txHashes.length + builtB.txHashes.length,
      'the attributions of both chains',
    )
    const board = (chain: string) => read<{ items: ({ builderCode: string } & Counts)[] }>(`/v1/leaderboard?chainId=${chain}`)
    const [boardA, boardB, boardAll] = await Promise.all([board(String(CHAIN_A)), board(String(CHAIN_B)), board('all')])
    const [rowA, rowB] = [boardA.items[0]!, boardB.items[0]!]
    expect(boardAll.items).toEqual([
      expect.objectContaining({
        builderCode: 'bc_both',
        attributions: rowA.attributions + rowB.attributions,
        distinctSenders: rowA.distinctSenders + rowB.distinctSenders,
        gasUsed: String(BigInt(rowA.gasUsed) + BigInt(rowB.gasUsed)),
      }),
    ])
    const unknown = await fetch(`${api}/v1/logs?chainId=999`)
    expect([unknown.status, ((await unknown.json()) as { error: { code: string } }).error.code]).toEqual([404, 'unknown_chain'])

    // Chain A's node hangs: requests neither answer nor fail until they time out.
    process.kill(nodeA.process.pid!, 'SIGSTOP')
    const hungAt = Date.now()
    const delays: number[] = []
    let lastDuringOutage = 0
    while (Date.now() - hungAt < 20_000) {
      const { toBlock } = await buildChain(nodeB.url, { blocks: 1, txsPerBlock: 1, emitter: builtB.emitter })
      const minedAt = Date.now()
      lastDuringOutage = Number(toBlock)
      while ((await storedHead(db, CHAIN_B)) < lastDuringOutage && Date.now() - minedAt < 30_000)
        await new Promise((resolve) => setTimeout(resolve, 20))
      delays.push(Date.now() - minedAt)
    }
    const storedDuringOutage = await storedHead(db, CHAIN_B)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 30_000 - (Date.now() - hungAt))))
    process.kill(nodeA.process.pid!, 'SIGCONT')
    delays.sort((a, b) => a - b)
    console.log(
      `chain ${CHAIN_B} tip delay while chain ${CHAIN_A}'s node hung: ${delays.length} blocks, median ${delays[Math.floor(delays.length / 2)]} ms, max ${delays.at(-1)} ms`,
    )
    // Every block chain B mined while A hung was stored before A came back.
    expect(storedDuringOutage).toBe(lastDuringOutage)

    // Chain A resumes where it stopped.
    const moreA = await buildChain(nodeA.url, { blocks: 2, txsPerBlock: 1, emitter: builtA.emitter })
    await waitFor(async () => (await storedHead(db, CHAIN_A)) >= Number(moreA.toBlock), 'chain A after its outage', 90_000)
    await expectIndexMatchesNode(db.store.pool, nodeA.url, [0, Number(moreA.toBlock)], undefined, CHAIN_A)
    await expectIndexMatchesNode(db.store.pool, nodeB.url, [0, lastDuringOutage], undefined, CHAIN_B)
    expect(daemon.child.exitCode).toBeNull()
  })

  it("starts and indexes the other chains while one chain's node is down at start", async () => {
    const { db, redis } = await ownStores()
    const dead = `http://127.0.0.1:${await freePort()}`
    const configFile = writeConfigFile(
      `chains:\n  - { id: ${CHAIN_A}, name: alpha, rpc: "${dead}", startBlock: 0, pendingPollMs: 0 }\n  - { id: ${CHAIN_B}, name: beta, rpc: "${anvilB.url}", startBlock: 0, headPollMs: 100, pendingPollMs: 0 }\n`,
    )
    const env = await daemonEnv(db, redis.prefix, 'http://unused.invalid:1', { CODETRAIL_CONFIG: configFile })
    const daemon = spawnTs('src/main.ts', [], env)
    cleanups.push(() => daemon.kill('SIGKILL'))
    const head = Number(await fixtureClient(anvilB.url).getBlockNumber())
    await waitFor(async () => (await storedHead(db, CHAIN_B)) >= head, 'chain B while chain A is down')
    expect(daemon.child.exitCode).toBeNull()
    expect(daemon.output()).toContain('node not reachable at start: its chain waits for it')
    // Node calls are counted per chain: the serving node's reads and the dead node's failures apart.
    let metrics = ''
    await waitFor(
      async () => (
        (metrics = (await (await fetch(`http://127.0.0.1:${env.PORT}/metrics`).catch(() => null))?.text()) ?? ''), metrics !== ''
      ),
      'the API',
    )
    expect(metrics).toMatch(new RegExp(`^codetrail_rpc_calls_total\\{chain_id="${CHAIN_B}",method="eth_getLogs"\\} [1-9]`, 'm'))
    expect(metrics).toMatch(
      new RegExp(`^codetrail_rpc_errors_total\\{chain_id="${CHAIN_A}",method="eth_chainId",kind="[a-z_]+"\\} [1-9]`, 'm'),
    )
    expect(metrics).not.toMatch(/^codetrail_rpc_calls_total\{method=/m)
  })

  it("delivers webhooks for the second chain while the first chain's node is unreachable and another process holds its lease", async () => {
    const { db, redis } = await ownStores()
    const node = await startAnvil({ chainId: CHAIN_B })
    cleanups.push(() => node.stop())
    const received: string[] = []
    const receiver = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk.toString()))
      request.on('end', () => (received.push(body), response.writeHead(200).end('ok')))
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => (receiver.closeAllConnections(), receiver.close(resolve))))
    await insertSubscription(db.store.pool, {
      id: 'wh_00000000000000b2',
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      secret: newWebhookSecret(),
      events: ['attribution.confirmed'],
      builderCodes: ['bc_beta'],
      walletAddresses: null,
      roles: null,
      chainIds: [CHAIN_B],
    })
    // Another process of the deployment holds chain A's scheduler lease, stuck on chain A's unreachable node.
    const holder = new Redis(REDIS_URL)
    cleanups.push(async () => holder.disconnect())
    await holder.set(`${redis.prefix}:scheduler:${CHAIN_A}`, 'another-process', 'PX', 600_000)
    const dead = `http://127.0.0.1:${await freePort()}`
    const configFile = writeConfigFile(
      `chains:\n  - { id: ${CHAIN_A}, name: alpha, rpc: "${dead}", startBlock: 0, pendingPollMs: 0 }\n  - { id: ${CHAIN_B}, name: beta, rpc: "${node.url}", startBlock: 0, headPollMs: 100, pendingPollMs: 0 }\n`,
    )
    const env = await daemonEnv(db, redis.prefix, 'http://unused.invalid:1', { CODETRAIL_CONFIG: configFile, WEBHOOK_ALLOW_PRIVATE: '1' })
    const daemon = spawnTs('src/main.ts', [], env)
    cleanups.push(() => daemon.kill('SIGKILL'))
    const { txHashes } = await buildChain(node.url, {
      blocks: 2,
      txsPerBlock: 1,
      suffix: () => Attribution.toDataSuffix({ codes: ['bc_beta'] }),
    })
    await waitFor(async () => txHashes.every((tx) => received.some((body) => body.includes(tx))), 'the deliveries of chain B')
    for (const body of received) expect(JSON.parse(body)).toMatchObject({ type: 'attribution.confirmed', data: { chainId: CHAIN_B } })
    expect(await holder.get(`${redis.prefix}:scheduler:${CHAIN_A}`)).toBe('another-process')
    expect(daemon.child.exitCode).toBeNull()
  })
})
