import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, createApiRedis, createMetrics, type Api, type CreateApiParameters } from '../src/api/index.js'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { silentLogger } from '../src/internal/logger.js'
import { createRangeQueue } from '../src/queue/index.js'
import { createRpcClient } from '../src/rpc/index.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337

let db: TestDatabase
let anvil: Anvil
const cleanups: (() => Promise<void>)[] = []

beforeAll(async () => {
  ;[db, anvil] = await Promise.all([createTestDatabase(), startAnvil()])
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  await anvil?.stop()
  await db?.drop()
})

/** An API on the test database; closed after the file. */
async function startApi(
  overrides: Partial<CreateApiParameters> & { prefix?: string; adminUi?: boolean; adminToken?: string; dashboardDir?: string } = {},
): Promise<Api> {
  const { prefix = 'unused', adminUi = false, adminToken, dashboardDir, ...rest } = overrides
  const api = await createApi({
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi,
      adminToken,
      databaseUrl: db.url,
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      dashboardDir,
    },
    chainId: CHAIN_ID,
    store: db.store,
    logger: silentLogger,
    ...rest,
  })
  cleanups.push(() => api.close())
  return api
}

function redisClient(url = REDIS_URL) {
  const redis = createApiRedis(url)
  cleanups.push(async () => redis.disconnect())
  return redis
}

describe('health and readiness', () => {
  it('GET /healthz answers while the process is up', async () => {
    const api = await startApi()
    const response = await api.app.inject({ url: '/healthz' })
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'ok' }])
  })

  it('GET /readyz reports database, Redis and node up, and the sync lag in blocks and seconds', async () => {
    const rpc = createRpcClient({ url: anvil.url })
    await rpc.request('anvil_mine', ['0xa'])
    const head = await rpc.request<{ number: string; timestamp: string }>('eth_getBlockByNumber', ['latest', false])
    const headBlock = Number(head.number)
    const liveHash = `0x${'ab'.repeat(32)}`
    await db.store.pool.query(`INSERT INTO chain_state (chain_id, head_block, live_block, live_hash) VALUES ($1, $2, $3, $4)`, [
      CHAIN_ID,
      headBlock,
      headBlock - 4,
      liveHash,
    ])
    await db.store.pool.query(
      `INSERT INTO blocks (chain_id, number, hash, timestamp, status) VALUES ($1, $2, $3, to_timestamp($4), 'confirmed')`,
      [CHAIN_ID, headBlock - 4, liveHash, Number(head.timestamp) - 48],
    )
    const redis = redisClient()
    const api = await startApi({ rpc, redis })
    const response = await api.app.inject({ url: '/readyz' })
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(body).toMatchObject({
      ready: true,
      checks: {
        database: { status: 'ok', error: null },
        redis: { status: 'ok', error: null },
        node: { status: 'ok', error: null },
      },
      sync: { chainId: CHAIN_ID, indexedBlock: headBlock - 4, lagSeconds: 48 },
    })
    expect(body.error).toBeUndefined()
    // The node may have moved on since we read its head; lag is counted from its head at the check.
    expect(body.sync.headBlock).toBeGreaterThanOrEqual(headBlock)
    expect(body.sync.lagBlocks).toBe(body.sync.headBlock - (headBlock - 4))
  })

  it('GET /readyz stays ready while the node or Redis is down, reporting them', async () => {
    const deadNode = createRpcClient({ url: `http://127.0.0.1:${await freePort()}` })
    const deadRedis = redisClient(`redis://127.0.0.1:${await freePort()}`)
    const api = await startApi({ rpc: deadNode, redis: deadRedis })
    const response = await api.app.inject({ url: '/readyz' })
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(body.ready).toBe(true)
    expect(body.error).toBeUndefined()
    expect(body.checks.database.status).toBe('ok')
    expect(body.checks.node).toMatchObject({ status: 'down', latencyMs: null })
    expect(body.checks.redis.status).toBe('down')
    expect(body.sync.headBlock).toBeNull()
  })
})

describe('chain profile in status and readiness', () => {
  it('says "no pre-confirmations on this chain" with the measured block time instead of a pending figure', async () => {
    const chainId = 777
    await db.store.pool.query(
      `INSERT INTO chain_state (chain_id, head_block, live_block, block_time_ms, preconfirmations, preconfirmations_source) VALUES ($1, 10, 10, 200, false, 'probe')`,
      [chainId],
    )
    const api = await startApi({ chainId, rpc: createRpcClient({ url: anvil.url }), redis: redisClient() })
    const status = (await api.app.inject({ url: '/v1/status' })).json()
    expect(status).toMatchObject({ pendingLogsPerSecond: null, blockTimeMs: 200, preconfirmations: { enabled: false, source: 'probe' } })
    const ready = (await api.app.inject({ url: '/readyz' })).json()
    expect(ready.sync).toMatchObject({ blockTimeMs: 200, preconfirmations: { enabled: false, source: 'probe' } })

    await db.store.pool.query(
      `UPDATE chain_state SET block_time_ms = 2000, preconfirmations = true, preconfirmations_source = 'config' WHERE chain_id = $1`,
      [chainId],
    )
    // A new process: the first one serves its status snapshot for a few seconds more.
    const restarted = await startApi({ chainId, rpc: createRpcClient({ url: anvil.url }), redis: redisClient() })
    const preconfirming = (await restarted.app.inject({ url: '/v1/status' })).json()
    expect(preconfirming).toMatchObject({
      pendingLogsPerSecond: 0,
      blockTimeMs: 2000,
      preconfirmations: { enabled: true, source: 'config' },
    })
  })
})

describe('GET /metrics', () => {
  it('serves Prometheus text with the indexer metrics, RPC calls by method, queue depth and request durations', async () => {
    const metrics = createMetrics()
    const { prefix, cleanup } = createTestRedisPrefix()
    cleanups.push(cleanup)
    const ranges = createRangeQueue({ redisUrl: REDIS_URL, prefix })
    cleanups.push(() => ranges.close())
    await ranges.enqueue([{ chainId: CHAIN_ID, filterId: 'f', addresses: [], topics: [], fromBlock: 0, toBlock: 9 }])
    const rpc = createRpcClient({ url: anvil.url, onRequest: metrics.observeRpcRequest })
    const api = await startApi({ metrics, rpc, queues: [ranges.queue] })
    metrics.logsIngested.inc({ chain_id: CHAIN_ID, status: 'confirmed' }, 5)
    metrics.reorgDepth.observe({ chain_id: CHAIN_ID }, 3)

    await api.app.inject({ method: 'POST', url: '/v1/agents/builder-codes', payload: { walletAddress: `0x${'1'.repeat(40)}` } })
    await api.app.inject({ url: `/v1/agents/builder-codes/0x${'1'.repeat(40)}` })
    const response = await api.app.inject({ url: '/metrics' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toMatch(/^text\/plain/)
    const text = response.body
    for (const name of [
      'codetrail_logs_ingested_total',
      'codetrail_range_jobs_total',
      'codetrail_blocks_behind_head',
      'codetrail_pending_latency_seconds',
      'codetrail_rpc_calls_total',
      'codetrail_rpc_errors_total',
      'codetrail_range_splits_total',
      'codetrail_reorgs_total',
      'codetrail_reorg_depth_blocks',
      'codetrail_queue_jobs',
      'codetrail_queue_failed_jobs',
      'codetrail_http_request_duration_seconds',
    ])
      expect(text).toContain(`# TYPE ${name} `)
    expect(text).toContain(`codetrail_logs_ingested_total{chain_id="${CHAIN_ID}",status="confirmed"} 5`)
    expect(text).toContain('codetrail_rpc_calls_total{method="eth_getTransactionCount"} 2')
    expect(text).toContain('codetrail_queue_jobs{queue="ranges",state="waiting"} 1')
    expect(text).toContain('codetrail_queue_failed_jobs{queue="ranges"} 0')
    expect(text).toMatch(
      /codetrail_http_request_duration_seconds_count\{method="POST",route="\/v1\/agents\/builder-codes",status_code="200"\} 1/,
    )
  })
})

describe('rate limiting', () => {
  it('shares per-client limits across API processes through Redis, answers 429 with Retry-After, and exempts health and metrics', async () => {
    const { prefix, cleanup } = createTestRedisPrefix()
    cleanups.push(cleanup)
    const one = await startApi({ prefix, redis: redisClient(), rateLimit: 4 })
    const two = await startApi({ prefix, redis: redisClient(), rateLimit: 4 })
    const statuses: number[] = []
    for (const api of [one, two, one, two]) statuses.push((await api.app.inject({ url: '/v1/logs?limit=1' })).statusCode)
    expect(statuses).toEqual([200, 200, 200, 200])

    const limited = await two.app.inject({ url: `/v1/agents/builder-codes/0x${'2'.repeat(40)}` })
    expect(limited.statusCode).toBe(429)
    expect(limited.json().error.code).toBe('rate_limited')
    expect(limited.json().error.message).toMatch(/at most 4 per minute/)
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    expect((await one.app.inject({ url: '/v1/attributions' })).statusCode).toBe(429)
    expect((await one.app.inject({ url: '/no/such/route' })).statusCode).toBe(429)

    for (let i = 0; i < 10; i++) {
      expect((await one.app.inject({ url: '/healthz' })).statusCode).toBe(200)
      expect((await two.app.inject({ url: '/metrics' })).statusCode).toBe(200)
      expect((await two.app.inject({ url: '/readyz' })).statusCode).toBe(200)
    }
    // Limits are per client: another address still gets through.
    expect((await one.app.inject({ url: '/v1/logs', remoteAddress: '10.0.0.7' })).statusCode).toBe(200)
  })

  it('keeps limiting, per process, when Redis is down rather than failing requests or letting all through', async () => {
    const api = await startApi({ redis: redisClient(`redis://127.0.0.1:${await freePort()}`), rateLimit: 2 })
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await api.app.inject({ url: '/v1/logs' })).statusCode)
    expect(statuses).toEqual([200, 200, 429])
  })
})

describe('statement timeout and server errors', () => {
  it("cancels a query that outlives the API pool's statement timeout with 503 query_timeout, then serves again", async () => {
    // No store passed: the API opens its own pool, with the statement timeout.
    const api = await startApi({ store: undefined, statementTimeoutMs: 300 })
    const locker = new pg.Client({ connectionString: db.url })
    await locker.connect()
    try {
      await locker.query('BEGIN')
      await locker.query('LOCK TABLE attributions IN ACCESS EXCLUSIVE MODE')
      const response = await api.app.inject({ url: '/v1/attributions' })
      expect(response.statusCode).toBe(503)
      expect(response.json()).toEqual({ error: { code: 'query_timeout', message: expect.stringMatching(/cancelled/) } })
      await locker.query('ROLLBACK')
      expect((await api.app.inject({ url: '/v1/attributions' })).statusCode).toBe(200)
    } finally {
      await locker.end()
    }
  })

  it('holds at most API_DB_POOL_SIZE database connections, however many requests are in flight', async () => {
    // Connections opened from now on are this API's: an earlier test's API may still hold its own.
    const { rows: clock } = await db.store.pool.query<{ now: Date }>('SELECT clock_timestamp() AS now')
    const api = await startApi({ store: undefined, dbPoolSize: 2 })
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => api.app.inject({ url: i % 2 ? '/v1/attributions' : '/v1/builder-codes/bc_pooltest/stats' })),
    )
    expect(responses.map((response) => response.statusCode)).toEqual(Array(12).fill(200))
    const { rows } = await db.store.pool.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'codetrail-api' AND backend_start >= $1`,
      [clock[0]!.now],
    )
    expect(rows[0].n).toBeGreaterThan(0)
    expect(rows[0].n).toBeLessThanOrEqual(2)
  })

  it('answers an unexpected failure with 500 internal_error and no internals', async () => {
    const api = await startApi()
    await db.store.pool.query('ALTER TABLE builder_codes RENAME TO builder_codes_moved')
    try {
      const response = await api.app.inject({ url: `/v1/agents/builder-codes/0x${'3'.repeat(40)}` })
      expect(response.statusCode).toBe(500)
      expect(response.json()).toEqual({
        error: { code: 'internal_error', message: 'The server hit an unexpected error; it has been logged.' },
      })
      expect(response.body).not.toMatch(/builder_codes|at |\.ts/)
    } finally {
      await db.store.pool.query('ALTER TABLE builder_codes_moved RENAME TO builder_codes')
    }
  })
})

describe('documentation and dashboard', () => {
  it('serves an OpenAPI 3.1 document of every route at /openapi.json and a docs page at /docs', async () => {
    const api = await startApi()
    const document = (await api.app.inject({ url: '/openapi.json' })).json()
    expect(document.openapi).toBe('3.1.0')
    expect(Object.keys(document.paths).sort()).toEqual(
      [
        '/healthz',
        '/metrics',
        '/readyz',
        '/v1/agents/builder-codes',
        '/v1/agents/builder-codes/{walletAddress}',
        '/v1/attributions',
        '/v1/builder-codes/{code}',
        '/v1/builder-codes/{code}/stats',
        '/v1/leaderboard',
        '/v1/logs',
        '/v1/status',
        '/v1/stream',
        '/v1/transactions/{hash}/attribution',
      ].sort(),
    )
    const list = document.paths['/v1/attributions'].get
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(
      [
        'builderCode',
        'chainId',
        'cursor',
        'fromBlock',
        'includeRemoved',
        'limit',
        'role',
        'since',
        'status',
        'toBlock',
        'until',
        'walletAddress',
      ].sort(),
    )
    expect(list.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' })
    expect(document.components.schemas.Attribution.properties).toHaveProperty('blockTimestamp')
    const docs = await api.app.inject({ url: '/docs' })
    expect([docs.statusCode, docs.headers['content-type']]).toEqual([200, expect.stringMatching(/text\/html/)])
  })

  it('serves the attribution dashboard at / and its client routes, assets immutable, only this origin allowed; 503 when not built', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codetrail-dashboard-'))
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }))
    const api = await startApi({ dashboardDir: dir })
    const missing = await api.app.inject({ url: '/' })
    expect(missing.statusCode).toBe(503)
    expect(missing.json().error.code).toBe('dashboard_not_built')

    mkdirSync(join(dir, 'assets'))
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>codetrail</title>')
    writeFileSync(join(dir, 'assets', 'main-ABC.js'), 'export {}')
    for (const page of ['/', '/live', '/register', '/codes/bc_k3x9a2mf']) {
      const answer = await api.app.inject({ url: page })
      expect(answer.statusCode).toBe(200)
      expect(answer.headers['content-type']).toMatch(/^text\/html/)
      expect(answer.headers['content-security-policy']).toContain("default-src 'self'")
      expect(answer.body).toContain('<title>codetrail</title>')
    }
    const asset = await api.app.inject({ url: '/assets/main-ABC.js' })
    expect(asset.statusCode).toBe(200)
    expect(asset.headers['cache-control']).toContain('immutable')
    expect((await api.app.inject({ url: '/assets/nope.js' })).statusCode).toBe(404)
  })

  it('serves the BullMQ dashboard at /admin/queues only with ADMIN_UI=1 and ADMIN_TOKEN, to the bearer of the token', async () => {
    const { prefix, cleanup } = createTestRedisPrefix()
    cleanups.push(cleanup)
    const token = 'admin-token-0123456789abcdef'
    for (const hidden of [
      await startApi({ prefix }),
      await startApi({ prefix, adminUi: true }),
      await startApi({ prefix, adminToken: token }),
    ]) {
      for (const headers of [{}, { authorization: `Bearer ${token}` }]) {
        const answer = await hidden.app.inject({ url: '/admin/queues', headers })
        expect([answer.statusCode, answer.json().error.code]).toEqual([404, 'not_found'])
      }
    }

    const on = await startApi({ prefix, adminUi: true, adminToken: token })
    for (const authorization of [undefined, 'Bearer wrong', `Bearer ${token}x`, `Basic ${token}`, token, `Bearer ${token.slice(0, -1)}`]) {
      for (const url of ['/admin/queues', '/admin/queues/api/queues']) {
        const refused = await on.app.inject({ url, headers: authorization === undefined ? {} : { authorization } })
        expect([refused.statusCode, refused.json().error.code, refused.headers['www-authenticate']]).toEqual([
          401,
          'unauthorized',
          expect.stringMatching(/^Bearer/),
        ])
      }
    }
    const headers = { authorization: `Bearer ${token}` }
    const page = await on.app.inject({ url: '/admin/queues', headers })
    expect([page.statusCode, page.headers['content-type']]).toEqual([200, expect.stringMatching(/text\/html/)])
    const queues = await on.app.inject({ url: '/admin/queues/api/queues', headers })
    expect(queues.statusCode).toBe(200)
    expect(queues.json().queues.map((queue: { name: string }) => queue.name)).toEqual(['ranges'])
    const document = (await on.app.inject({ url: '/openapi.json' })).json()
    expect(document.paths['/admin/queues'].get.security).toEqual([{ adminToken: [] }])
    expect(document.components.securitySchemes.adminToken).toMatchObject({ type: 'http', scheme: 'bearer' })
  })
})
