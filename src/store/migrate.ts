import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import { drizzle } from 'drizzle-orm/node-postgres'
import type pg from 'pg'

const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations', import.meta.url))
// Any fixed key: serialises concurrent starts so two processes never apply the same migration.
export const MIGRATION_LOCK_KEY = 0x636f6465

/** Applies the drizzle-kit migrations in `migrations/`, once even when several processes start together. */
export async function runMigrations(pool: pg.Pool): Promise<void> {
  const client = await pool.connect().catch((error: Error) => {
    const { hostname, port } = new URL(pool.options.connectionString ?? 'postgres://127.0.0.1:5432')
    throw new Error(`PostgreSQL is not reachable at ${hostname}:${port || 5432} (${error.message}): start it, or set DATABASE_URL`)
  })
  try {
    await client.query('SET client_min_messages = warning')
    // Another process may be migrating, and DDL may wait for readers: this session waits as long as it takes.
    await client.query('SET lock_timeout = 0')
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY])
    try {
      await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_FOLDER })
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY])
      await client.query('RESET lock_timeout')
    }
  } finally {
    client.release()
  }
}

export type MigrationStatus = { tag: string; applied: boolean }

/**
 * Every migration of `migrations/` in order and whether the database has it, by drizzle's own rule
 * (a migration is pending when it is newer than the last one applied); applies nothing.
 */
export async function migrationStatus(pool: pg.Pool): Promise<MigrationStatus[]> {
  const journal = JSON.parse(readFileSync(`${MIGRATIONS_FOLDER}/meta/_journal.json`, 'utf8')) as { entries: { tag: string; when: number }[] }
  const { rows: table } = await pool.query<{ exists: boolean }>(`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS exists`)
  const { rows } = table[0]!.exists
    ? await pool.query<{ last: string | null }>('SELECT max(created_at)::text AS last FROM drizzle.__drizzle_migrations')
    : { rows: [{ last: null }] }
  const last = rows[0]!.last === null ? -Infinity : Number(rows[0]!.last)
  return journal.entries.map((entry) => ({ tag: entry.tag, applied: entry.when <= last }))
}
