/**
 * The PostgreSQL databases and Redis prefixes of tests, bench and demo: each run gets its own and drops
 * it afterwards, never touching one it did not create.
 */
import { randomBytes } from 'node:crypto'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/node-postgres'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import pg from 'pg'
import { clearRedisPrefix } from '../src/queue/index.js'
import { createStore, runMigrations, type Store } from '../src/store/index.js'

export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** `databaseUrl` with its database replaced by `name`. */
export function databaseUrlFor(databaseUrl: string, name: string): string {
  const url = new URL(databaseUrl)
  url.pathname = `/${name}`
  return url.toString()
}

async function withAdmin<T>(adminUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.end()
  }
}

/** An empty database `<prefix>_<random>` on the server of `adminUrl`. */
export async function createDatabase(adminUrl: string, prefix: string): Promise<{ name: string; url: string }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`
  await withAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE ${name}`))
  return { name, url: databaseUrlFor(adminUrl, name) }
}

/**
 * Drops a database made by {@link createDatabase}. `pool.end()` resolves before its sockets close, and
 * terminating a connection that is still closing raises an uncaught error in this process: so it waits
 * for them first, and FORCE only ends connections other processes left behind.
 */
export async function dropDatabase(name: string, adminUrl = ADMIN_DATABASE_URL): Promise<void> {
  await withAdmin(adminUrl, async (client) => {
    for (let i = 0; i < 50; i++) {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [name])
      if (rows[0]!.n === 0) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  })
}

/** A Redis key prefix `<label>_<random>` of its own, and a cleanup that deletes its keys. */
export function createRedisPrefix(redisUrl: string, label: string): { prefix: string; cleanup: () => Promise<void> } {
  const prefix = `${label}_${randomBytes(5).toString('hex')}`
  return {
    prefix,
    cleanup: async () => {
      await clearRedisPrefix(redisUrl, prefix)
    },
  }
}

export type TestDatabase = { url: string; name: string; store: Store; drop: () => Promise<void> }

/** A fresh, migrated database of its own for one test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const { name, url } = await createEmptyDatabase()
  const store = createStore({ databaseUrl: url, max: 5 })
  await runMigrations(store.pool)
  return {
    url,
    name,
    store,
    drop: async () => {
      await store.close()
      await dropDatabase(name)
    },
  }
}

/** A fresh database of its own with nothing in it; `dropDatabase(name)` removes it. */
export async function createEmptyDatabase(): Promise<{ name: string; url: string }> {
  return createDatabase(ADMIN_DATABASE_URL, 'codetrail_test')
}

/**
 * Applies the migrations older than `tag` and nothing else (none of `src/store/sql`), as a database
 * that an earlier codetrail left there holds them.
 */
export async function migrateBefore(pool: pg.Pool, tag: string): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'codetrail-migrations-'))
  try {
    cpSync(new URL('../migrations', import.meta.url), folder, { recursive: true })
    const journalPath = join(folder, 'meta', '_journal.json')
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] }
    journal.entries = journal.entries.filter((entry) => entry.tag < tag)
    writeFileSync(journalPath, JSON.stringify(journal))
    await migrate(drizzle(pool), { migrationsFolder: folder })
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}

/** A Redis key prefix of its own for one test. */
export function createTestRedisPrefix(): { prefix: string; cleanup: () => Promise<void> } {
  return createRedisPrefix(REDIS_URL, 'ct_test')
}

export type BenchDatabase = { name: string; url: string; pool: pg.Pool; drop: () => Promise<void> }

/** A fresh database `codetrail_bench_<label>_<random>` with a pool of `poolSize` connections, dropped by `drop()`. */
export async function createBenchDatabase(adminUrl: string, label = '', poolSize = 2): Promise<BenchDatabase> {
  const { name, url } = await createDatabase(adminUrl, `codetrail_bench${label ? `_${label}` : ''}`)
  const pool = new pg.Pool({ connectionString: url, max: poolSize, application_name: 'codetrail-bench' })
  // An idle connection's error (e.g. the server restarting) surfaces on the next query; it must not crash the bench.
  pool.on('error', () => {})
  return {
    name,
    url,
    pool,
    drop: async () => {
      await pool.end()
      await dropDatabase(name, adminUrl)
    },
  }
}
