import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { MIGRATION_LOCK_KEY } from '../src/store/migrate.js'
import { storedBlocks } from '../src/sync/historical.js'
import { buildChain } from '../harness/fixtures/chain.js'
import { startFaultProxy } from '../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode, waitFor } from './helpers/compare.js'
import { runTs, spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

let anvil: Anvil
let range: [number, number]
const cleanups: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  anvil = await startAnvil()
  cleanups.push(() => anvil.stop())
  const chain = await buildChain(anvil.url, { blocks: 40, txsPerBlock: 3 })
  // Block 0 through a few empty blocks after the last logs: empty blocks are part of every range.
  await fetch(anvil.url, {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: ['0x5'] }),
    headers: { 'content-type': 'application/json' },
  })
  range = [0, Number(chain.toBlock) + 5]
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

async function environment(rpcUrl = anvil.url) {
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const env = {
    RPC_URL: rpcUrl,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    CHUNK_BLOCKS: '7',
    JOB_LOCK_MS: '2000',
    RPC_TIMEOUT_MS: '2000',
  }
  return { db, env }
}

const backfillArgs = () => ['--from', String(range[0]), '--to', String(range[1])]

async function logCount(db: TestDatabase): Promise<number> {
  const { rows } = await db.store.pool.query('SELECT count(*) AS n FROM logs')
  return rows[0].n
}

describe('npm run backfill', () => {
  it('stores exactly what the node serves, every field, and a second run changes nothing', async () => {
    const { db, env } = await environment()
    const first = await runTs('scripts/backfill.ts', [...backfillArgs(), '--json'], env)
    expect(first.code, first.output).toBe(0)
    const events = first.output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
    expect(events.some((event) => event.event === 'progress')).toBe(true)
    expect(events.at(-1)).toMatchObject({ done: true, blocks: range[1] - range[0] + 1 })

    const logs = await expectIndexMatchesNode(db.store.pool, anvil.url, range)
    const { rows: shapes } = await db.store.pool.query(`SELECT DISTINCT cardinality(topics) AS n FROM analytics.logs ORDER BY n`)
    expect(shapes.map((row) => row.n)).toEqual([0, 1, 2, 3, 4])

    const second = await runTs('scripts/backfill.ts', backfillArgs(), env)
    expect(second.code).toBe(0)
    expect(second.output).toMatch(/already indexed/)
    expect(await logCount(db)).toBe(logs)
  })

  it('filters by address and topic0 and keeps that filter’s progress apart', async () => {
    const { db, env } = await environment()
    const { rows } = await db.store.pool.query('SELECT 1') // database is up
    expect(rows).toHaveLength(1)
    const [sample] = await (
      await fetch(anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [{ fromBlock: '0x0', toBlock: 'latest' }] }),
      }).then((r) => r.json() as Promise<{ result: { address: string; topics: string[] }[] }>)
    ).result.filter((log) => log.topics.length >= 2)
    const topic0 = sample!.topics[0]!
    const result = await runTs('scripts/backfill.ts', [...backfillArgs(), '--address', sample!.address, '--topic0', topic0], env)
    expect(result.code, result.output).toBe(0)
    await expectIndexMatchesNode(db.store.pool, anvil.url, range, { address: [sample!.address], topics: [[topic0]] })
  })

  it('refuses a bad flag with one clear line naming it', async () => {
    const { env } = await environment()
    const bad = await runTs('scripts/backfill.ts', ['--from', '10', '--to', 'soon'], env)
    expect(bad.code).toBe(2)
    expect(bad.output).toContain('--to must be a block number, got "soon"')
    expect(bad.output).not.toMatch(/\n\s+at /)
    const unknown = await runTs('scripts/backfill.ts', ['--from', '1', '--to', '2', '--chunk', '5'], env)
    expect(unknown.code).toBe(2)
    expect(unknown.output).toContain("unknown option '--chunk'")
    const reversed = await runTs('scripts/backfill.ts', ['--from', '9', '--to', '2'], env)
    expect(reversed.code).toBe(2)
    expect(reversed.output).toContain('--to (2) is below --from (9)')
  })

  it('completes with no gap and no duplicate when a worker is SIGKILLed mid-range and another takes over', async () => {
    const { db, env } = await environment()
    const enqueue = await runTs('scripts/backfill.ts', [...backfillArgs(), '--no-wait'], env)
    expect(enqueue.code, enqueue.output).toBe(0)
    const chainId = 31337
    const slowEnv = { ...env, WORKER_CONCURRENCY: '1' }
    const victim = spawnTs('src/main.ts', ['--role', 'worker'], slowEnv)
    await waitFor(async () => (await storedBlocks(db.store.pool, chainId, 'all', range)) > 0, 'the first chunks', 60_000, 20)
    expect(await victim.kill('SIGKILL')).toBe('SIGKILL')
    const done = await storedBlocks(db.store.pool, chainId, 'all', range)
    expect(done).toBeLessThan(range[1] - range[0] + 1)

    const survivor = spawnTs('src/main.ts', ['--role', 'worker'], env)
    cleanups.push(() => survivor.kill())
    await waitFor(
      async () => (await storedBlocks(db.store.pool, chainId, 'all', range)) === range[1] - range[0] + 1,
      'the whole range',
      90_000,
    )
    await expectIndexMatchesNode(db.store.pool, anvil.url, range)
    expect(await survivor.kill('SIGTERM')).toBe(0)
  })

  it('two worker processes at once share the range without duplicates', async () => {
    const { db, env } = await environment()
    const enqueue = await runTs('scripts/backfill.ts', [...backfillArgs(), '--no-wait'], env)
    expect(enqueue.code, enqueue.output).toBe(0)
    const workers = [spawnTs('src/main.ts', ['--role', 'worker'], env), spawnTs('src/main.ts', ['--role', 'worker'], env)]
    cleanups.push(...workers.map((worker) => () => worker.kill()))
    await waitFor(
      async () => (await storedBlocks(db.store.pool, 31337, 'all', range)) === range[1] - range[0] + 1,
      'the whole range',
      90_000,
    )
    await expectIndexMatchesNode(db.store.pool, anvil.url, range)
    for (const worker of workers) expect(await worker.kill('SIGTERM')).toBe(0)
  })

  it('a worker told to stop while it is still starting stops cleanly once started', async () => {
    const { db, env } = await environment()
    // Holding the migration lock keeps the worker in its start-up (a worker migrates only when told to).
    const lock = new pg.Client({ connectionString: db.url })
    await lock.connect()
    try {
      await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY])
      const worker = spawnTs('src/main.ts', ['--role', 'worker'], { ...env, LOG_LEVEL: 'info', MIGRATE_ON_START: '1' })
      cleanups.push(() => worker.kill('SIGKILL'))
      await waitFor(async () => worker.output().includes('"msg":"starting"'), 'the worker to start starting')
      worker.child.kill('SIGTERM')
      await waitFor(async () => worker.output().includes('"msg":"stopping once started"'), 'the signal to be taken')
      await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY])
      expect(await worker.exited, worker.output()).toBe(0)
      expect(worker.output()).toMatch(/"msg":"codetrail started"[^\n]*\n(.*\n)*.*"msg":"stopped"/)
    } finally {
      await lock.end()
    }
  })

  it('fails a chunk after one attempt on an error asking again cannot fix, naming the chunk and the reason', async () => {
    const proxy = await startFaultProxy({
      upstream: anvil.url,
      faults: {
        eth_getLogs: { hintlessCap: { maxBlocks: 0, code: -32601, message: 'the method eth_getLogs does not exist/is not available' } },
      },
    })
    cleanups.push(() => proxy.stop())
    const { env } = await environment(proxy.url)
    // One chunk of CHUNK_BLOCKS=7.
    const oneChunk = ['--from', '0', '--to', '6']
    const result = await runTs('scripts/backfill.ts', oneChunk, env)
    expect(result.code, result.output).toBe(1)
    expect(result.output).toMatch(/chunk 0–6 failed after 1 attempt\(s\): fatal: .*the method eth_getLogs does not exist\/is not available/)
    expect(proxy.stats.calls.eth_getLogs).toBe(1)

    // Run again: the failed chunk is tried once more, and the JSON report carries the reason.
    const json = await runTs('scripts/backfill.ts', [...oneChunk, '--json'], env)
    expect(json.code, json.output).toBe(1)
    const events = json.output
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
    expect(events).toContainEqual(
      expect.objectContaining({
        fromBlock: 0,
        toBlock: 6,
        attempts: 1,
        fatal: true,
        reason: expect.stringMatching(/does not exist\/is not available/),
      }),
    )
    expect(events.at(-1)).toMatchObject({ done: false })
    expect(proxy.stats.calls.eth_getLogs).toBe(2)
  })

  it('retries a chunk whose error a later attempt may get past', async () => {
    // A Retry-After beyond getLogs' longest wait fails the attempt (retryable); the job runs again.
    const proxy = await startFaultProxy({
      upstream: anvil.url,
      faults: { eth_getLogs: { rateLimit: { times: 1, retryAfterSeconds: 120 } } },
    })
    cleanups.push(() => proxy.stop())
    const { db, env } = await environment(proxy.url)
    const result = await runTs('scripts/backfill.ts', ['--from', '0', '--to', '6'], env)
    expect(result.code, result.output).toBe(0)
    expect(proxy.faultCount('rateLimit')).toBe(1)
    expect(result.output).toMatch(/range job failed/)
    await expectIndexMatchesNode(db.store.pool, anvil.url, [0, 6])
  })

  it('gets every log through a provider that caps ranges, rate limits, answers slowly and refuses big results', async () => {
    const proxy = await startFaultProxy({
      upstream: anvil.url,
      faults: {
        eth_getLogs: {
          suggestedRange: { maxBlocks: 5 },
          maxResults: 30,
          rateLimit: { probability: 0.1, retryAfterSeconds: 0 },
          slow: { probability: 0.05, delayMs: 2_500 },
          malformed: { probability: 0.05 },
        },
        // Applied per call: a batch of 20 calls meets one of them in about a third of its requests.
        '*': { rateLimit: { probability: 0.02, retryAfterSeconds: 0 }, unavailable: { probability: 0.01 } },
      },
    })
    cleanups.push(() => proxy.stop())
    const { db, env } = await environment(proxy.url)
    const result = await runTs('scripts/backfill.ts', backfillArgs(), env)
    expect(result.code, result.output).toBe(0)
    await expectIndexMatchesNode(db.store.pool, anvil.url, range)
    for (const fault of ['suggestedRange', 'maxResults', 'rateLimit', 'slow', 'malformed', 'unavailable'] as const) {
      expect(proxy.faultCount(fault), fault).toBeGreaterThan(0)
    }
  })
})
