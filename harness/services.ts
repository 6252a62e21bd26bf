import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { clearRedisPrefix } from '../src/queue/index.js'
import { createStore, runMigrations, type Store } from '../src/store/index.js'

export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

export type TestDatabase = { url: string; name: string; store: Store; drop: () => Promise<void> }

/** A fresh, migrated database of its own for one test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `codetrail_test_${randomBytes(5).toString('hex')}`
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(ADMIN_DATABASE_URL)
  url.pathname = `/${name}`
  const store = createStore({ databaseUrl: url.toString(), max: 5 })
  await runMigrations(store.pool)
  return {
    url: url.toString(),
    name,
    store,
    drop: async () => {
      await store.close()
      await dropDatabase(name)
    },
  }
}

/** A Redis key prefix of its own for one test, and a cleanup that deletes its keys. */
export function createTestRedisPrefix(): { prefix: string; cleanup: () => Promise<void> } {
  const prefix = `ct_test_${randomBytes(5).toString('hex')}`
  return {
    prefix,
    cleanup: async () => {
      await clearRedisPrefix(REDIS_URL, prefix)
    },
  }
}

/**
 * Drops a test database. `pool.end()` resolves before its sockets close, and terminating a connection
 * that is still closing raises an uncaught error in this process: so it waits for them first, and
 * FORCE only ends connections other processes left behind.
 */
export async function dropDatabase(name: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
  await client.connect()
  try {
    for (let i = 0; i < 50; i++) {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [name])
      if (rows[0]!.n === 0) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  } finally {
    await client.end()
  }
}
