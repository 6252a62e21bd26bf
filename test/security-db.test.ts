/**
 * The reporting role cannot hurt the indexer (src/store/sql/05-analytics-reader.sql): a real login as analytics_reader, set up
 * by deploy/postgres/init-analytics-reader.sh as compose does, reads the analytics views and nothing
 * else, takes no advisory lock and calls no pg_notify. Writers wait for a lock at most LOCK_TIMEOUT_MS;
 * the API's pool hands out connections within its acquire timeout or answers 503.
 */
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi } from '../src/api/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { createStore, runMigrations } from '../src/store/index.js'
import { LOCK_TIMEOUT_MS } from '../src/store/client.js'
import { createTestDatabase, REDIS_URL, type TestDatabase } from '../harness/services.js'

let db: TestDatabase
let reader: pg.Client
const cleanups: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  const url = new URL(db.url)
  execFileSync(fileURLToPath(new URL('../deploy/postgres/init-analytics-reader.sh', import.meta.url)), {
    env: {
      ...process.env,
      PGHOST: url.hostname,
      PGPORT: url.port || '5432',
      POSTGRES_USER: decodeURIComponent(url.username),
      POSTGRES_DB: db.name,
      ANALYTICS_READER_PASSWORD: 'reader-password-for-tests',
    },
    stdio: 'pipe',
  })
  url.username = 'analytics_reader'
  url.password = 'reader-password-for-tests'
  reader = new pg.Client({ connectionString: url.toString() })
  await reader.connect()
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  await reader?.end()
  await db?.drop()
})

/** The SQLSTATE a statement of the reader fails with, or 'ok'. */
async function asReader(statement: string): Promise<string> {
  try {
    await reader.query(statement)
    return 'ok'
  } catch (error) {
    return (error as { code: string }).code
  }
}

describe('analytics_reader', () => {
  it('logs in and reads the analytics views, and no base table', async () => {
    expect((await reader.query('SELECT current_user AS who')).rows[0].who).toBe('analytics_reader')
    expect(await asReader('SELECT * FROM analytics.builder_code_daily LIMIT 1')).toBe('ok')
    expect(await asReader('SELECT * FROM analytics.wallet_coverage LIMIT 1')).toBe('ok')
    for (const table of [
      'public.logs',
      'public.attributions',
      'public.webhook_subscriptions',
      'public.builder_codes',
      'public.chain_state',
    ])
      expect(await asReader(`SELECT * FROM ${table} LIMIT 1`), table).toBe('42501')
    expect(await asReader(`INSERT INTO public.chain_state (chain_id) VALUES (99)`)).toBe('25006')
  })

  it('cannot take the indexer’s advisory locks, in any form, nor call pg_notify', async () => {
    for (const call of [
      'pg_advisory_lock(1)',
      'pg_advisory_lock(1, 8453)',
      'pg_advisory_lock_shared(1)',
      'pg_try_advisory_lock(1)',
      'pg_advisory_xact_lock(1, 8453)',
      'pg_advisory_xact_lock_shared(1, 8453)',
      'pg_try_advisory_xact_lock(1)',
      'pg_advisory_unlock_all()',
      "pg_notify('codetrail_attribution_changes', '')",
    ]) {
      await reader.query('BEGIN')
      expect(await asReader(`SELECT ${call}`), call).toBe('42501')
      await reader.query('ROLLBACK')
    }
    // The indexer's own role still takes them.
    const client = await db.store.pool.connect()
    try {
      await client.query('BEGIN')
      await client.query('SELECT pg_advisory_xact_lock(1, 8453)')
      await client.query("SELECT pg_notify('codetrail_attribution_changes', '')")
      await client.query('ROLLBACK')
    } finally {
      client.release()
    }
  })

  it('runs with a statement timeout, an idle-in-transaction timeout and read-only transactions by default', async () => {
    const setting = async (name: string) => (await reader.query(`SELECT current_setting('${name}') AS value`)).rows[0].value as string
    expect(await setting('statement_timeout')).toBe('1min')
    expect(await setting('idle_in_transaction_session_timeout')).toBe('1min')
    expect(await setting('default_transaction_read_only')).toBe('on')
  })
})

describe('writers', () => {
  it(`wait at most ${LOCK_TIMEOUT_MS} ms for a lock by default, and a migration session gets that back after waiting without limit`, async () => {
    const store = createStore({ databaseUrl: db.url, max: 1 })
    cleanups.push(() => store.close())
    expect((await store.pool.query(`SELECT current_setting('lock_timeout') AS value`)).rows[0].value).toBe(`${LOCK_TIMEOUT_MS / 1000}s`)
    await runMigrations(store.pool)
    expect((await store.pool.query(`SELECT current_setting('lock_timeout') AS value`)).rows[0].value).toBe(`${LOCK_TIMEOUT_MS / 1000}s`)
  })

  it('give up on a lock a report holds instead of queueing everything behind them', async () => {
    const writer = createStore({ databaseUrl: db.url, max: 1, lockTimeoutMs: 300 })
    cleanups.push(() => writer.close())
    await reader.query('BEGIN')
    try {
      await reader.query('SELECT count(*) FROM analytics.attributed_transactions')
      // DDL needs ACCESS EXCLUSIVE, which the report's ACCESS SHARE blocks.
      await expect(writer.pool.query('BEGIN; LOCK TABLE attributions IN ACCESS EXCLUSIVE MODE; COMMIT')).rejects.toMatchObject({
        code: '55P03',
      })
    } finally {
      await reader.query('ROLLBACK')
    }
    await writer.pool.query('ROLLBACK')
    await writer.pool.query('BEGIN; LOCK TABLE attributions IN ACCESS EXCLUSIVE MODE; ROLLBACK')
  })
})

describe("the API's pool", () => {
  it('answers 503 when no connection frees up within the acquire timeout, and serves again after', async () => {
    const api = await createApi({
      config: { port: 0, builderApiUrl: undefined, adminUi: false, databaseUrl: db.url, redisUrl: REDIS_URL, redisPrefix: 'unused' },
      chainId: 1,
      logger: silentLogger,
      dbPoolSize: 1,
      dbAcquireTimeoutMs: 300,
      statementTimeoutMs: 30_000,
    })
    cleanups.push(() => api.close())
    const locker = new pg.Client({ connectionString: db.url })
    await locker.connect()
    cleanups.push(() => locker.end())
    await locker.query('BEGIN')
    await locker.query('LOCK TABLE attributions IN ACCESS EXCLUSIVE MODE')
    // One request holds the pool's only connection while it waits for the lock; the other gets none in time.
    const answers = [api.app.inject({ url: '/v1/attributions' }), api.app.inject({ url: '/v1/attributions' })]
    const refused = await Promise.race(answers)
    expect(refused.statusCode).toBe(503)
    expect(refused.json().error.code).toBe('database_unavailable')
    await locker.query('ROLLBACK')
    expect((await Promise.all(answers)).map((answer) => answer.statusCode).sort()).toEqual([200, 503])
    expect((await api.app.inject({ url: '/v1/attributions' })).statusCode).toBe(200)
  })
})
