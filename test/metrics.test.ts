import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { buildChain } from '../harness/fixtures/chain.js'
import { waitFor } from './helpers/compare.js'
import { listeningUrl, runTs, spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
let anvil: Anvil
let db: TestDatabase
let env: Record<string, string>

beforeAll(async () => {
  anvil = await startAnvil()
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => anvil.stop(),
    () => db.drop(),
    () => redis.cleanup(),
  )
  env = {
    RPC_URL: anvil.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: '0',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '0',
  }
  await buildChain(anvil.url, { blocks: 4, txsPerBlock: 2, senders: [1] })
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

async function startRole(role: 'worker' | 'scheduler'): Promise<{ daemon: Spawned; scrape: () => Promise<string> }> {
  const daemon = spawnTs('src/main.ts', ['--role', role], { ...env, METRICS_PORT: '0', PORT: '1', LOG_LEVEL: 'info' })
  cleanups.push(() => daemon.kill('SIGKILL'))
  const metricsUrl = await listeningUrl(daemon, 'metrics listening')
  const scrape = async () => {
    const response = await fetch(`${metricsUrl}/metrics`).catch(() => null)
    return response?.ok ? response.text() : ''
  }
  return { daemon, scrape }
}

/** The value of one sample, or undefined when the series has none. */
function sample(text: string, series: RegExp): number | undefined {
  const line = text.split('\n').find((l) => !l.startsWith('#') && series.test(l))
  return line === undefined ? undefined : Number(line.split(' ').at(-1))
}

describe('/metrics of the roles without the API', () => {
  it('a worker serves its range jobs, logs and node requests on METRICS_PORT', async () => {
    const worker = await startRole('worker')
    const enqueued = await runTs('scripts/backfill.ts', ['--from', '0', '--to', 'latest', '--no-wait'], env)
    expect(enqueued.code).toBe(0)
    await waitFor(
      async () => (sample(await worker.scrape(), /^codetrail_range_jobs_total\{.*outcome="completed"/) ?? 0) > 0,
      'a completed range job',
    )
    const text = await worker.scrape()
    expect(sample(text, /^codetrail_logs_ingested_total\{.*status="confirmed"/)).toBeGreaterThan(0)
    expect(sample(text, /^codetrail_rpc_calls_total\{method="eth_getLogs"\}/)).toBeGreaterThan(0)
    expect(text).toMatch(/^# HELP codetrail_rpc_errors_total /m)
    // The follower runs in the scheduler, not here.
    expect(sample(text, /^codetrail_blocks_behind_head\{/)).toBeUndefined()
    expect(await worker.daemon.kill('SIGTERM')).toBe(0)
  })

  it('a scheduler serves its head-follower series on METRICS_PORT', async () => {
    const scheduler = await startRole('scheduler')
    await waitFor(async () => sample(await scheduler.scrape(), /^codetrail_blocks_behind_head\{/) !== undefined, 'the follower lag gauge')
    const text = await scheduler.scrape()
    expect(sample(text, /^codetrail_rpc_calls_total\{method="eth_getBlockByNumber"\}/)).toBeGreaterThan(0)
    expect(sample(text, /^codetrail_range_jobs_total\{/)).toBeUndefined()
    expect(await scheduler.daemon.kill('SIGTERM')).toBe(0)
  })
})
