import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { clearRedisPrefix } from '../../src/queue/index.js'

export type BenchDatabase = { name: string; url: string; pool: pg.Pool; drop: () => Promise<void> }

/**
 * A fresh database `codetrail_bench_<random>` on the server of `adminUrl`, dropped by `drop()`;
 * no other database is touched.
 */
export async function createBenchDatabase(adminUrl: string, label = '', poolSize = 2): Promise<BenchDatabase> {
  const name = `codetrail_bench_${label ? `${label}_` : ''}${randomBytes(4).toString('hex')}`
  await withAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  const pool = new pg.Pool({ connectionString: url.toString(), max: poolSize, application_name: 'codetrail-bench' })
  // An idle connection's error (e.g. the server restarting) surfaces on the next query; it must not crash the bench.
  pool.on('error', () => {})
  return {
    name,
    url: url.toString(),
    pool,
    drop: async () => {
      await pool.end()
      await withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
    },
  }
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

/** A Redis key prefix of the bench's own and a cleanup that deletes its keys. */
export function createBenchRedisPrefix(redisUrl: string, label: string): { prefix: string; cleanup: () => Promise<void> } {
  const prefix = `ct_bench_${label}_${randomBytes(4).toString('hex')}`
  return {
    prefix,
    cleanup: async () => {
      await clearRedisPrefix(redisUrl, prefix)
    },
  }
}
