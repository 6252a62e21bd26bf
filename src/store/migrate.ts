import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { migrate } from 'drizzle-orm/node-postgres/migrator'
import { drizzle } from 'drizzle-orm/node-postgres'
import type pg from 'pg'

const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations', import.meta.url))
const DEFINITIONS_FOLDER = fileURLToPath(new URL('./sql', import.meta.url))
// Any fixed key: serialises concurrent starts so two processes never apply the same migration.
export const MIGRATION_LOCK_KEY = 0x636f6465

/**
 * Applies the drizzle-kit migrations in `migrations/` (tables), then the definitions of `sql/` (views,
 * functions, triggers, the reader's grants) when they differ from the ones the database holds; once
 * even when several processes start together.
 */
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
      const before = await appliedMigrationCount(client)
      await migrate(drizzle(client), { migrationsFolder: MIGRATIONS_FOLDER })
      const definitions = readDefinitions()
      // Re-creating triggers and views locks the tables under them: a start with nothing new skips it. A migration
      // that re-created a table (and so dropped its views and triggers) always gets them back.
      if ((await appliedDefinitionsDigest(client)) !== definitions.digest || (await appliedMigrationCount(client)) !== before)
        await applyDefinitions(client, definitions)
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY])
      await client.query('RESET lock_timeout')
    }
  } finally {
    client.release()
  }
}

/** The files of `sql/` in the order they apply (by name), and one digest of them all. */
type Definitions = { files: { name: string; text: string }[]; digest: string }

export function readDefinitions(): Definitions {
  const names = readdirSync(DEFINITIONS_FOLDER)
    .filter((name) => name.endsWith('.sql'))
    .sort()
  const files = names.map((name) => ({ name, text: readFileSync(`${DEFINITIONS_FOLDER}/${name}`, 'utf8') }))
  const hash = createHash('sha256')
  for (const { name, text } of files) hash.update(`${name}\0${text}\0`)
  return { files, digest: hash.digest('hex') }
}

/** How many migrations the database has applied (0 before the first). */
async function appliedMigrationCount(db: Pick<pg.ClientBase, 'query'>): Promise<number> {
  const { rows: table } = await db.query<{ exists: boolean }>(`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS exists`)
  if (!table[0]!.exists) return 0
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations')
  return rows[0]!.n
}

/** The digest of the definitions the database holds; null before any (or before the table exists). */
async function appliedDefinitionsDigest(db: Pick<pg.ClientBase, 'query'>): Promise<string | null> {
  const { rows: table } = await db.query<{ exists: boolean }>(`SELECT to_regclass('sql_definitions') IS NOT NULL AS exists`)
  if (!table[0]!.exists) return null
  const { rows } = await db.query<{ digest: string }>('SELECT digest FROM sql_definitions')
  return rows[0]?.digest ?? null
}

/**
 * Applies the definitions in one transaction and records their digest. Every view the files create is
 * dropped first, dependents before what they read, so a view may change its columns; without CASCADE,
 * so a view someone built on one of ours stops the migration, PostgreSQL naming it, rather than vanish.
 * The rest of the files restate themselves (CREATE OR REPLACE FUNCTION, DROP TRIGGER IF EXISTS and
 * CREATE TRIGGER, grants), so applying them twice changes nothing.
 */
export async function applyDefinitions(client: pg.ClientBase, { files, digest }: Definitions = readDefinitions()): Promise<void> {
  const views = files.flatMap(({ text }) => [...text.matchAll(/^CREATE VIEW ([\w.]+) AS/gm)].map((match) => match[1]!))
  await client.query('BEGIN')
  try {
    for (const view of views.reverse()) {
      await client.query(`DROP VIEW IF EXISTS ${view}`).catch((error: pg.DatabaseError) => {
        throw new Error(`${view} cannot be created again: ${error.message}${error.detail ? ` (${error.detail})` : ''}`, { cause: error })
      })
    }
    for (const { name, text } of files) {
      await client.query(text).catch((error: Error) => {
        throw new Error(`sql/${name}: ${error.message}`, { cause: error })
      })
    }
    await client.query('DELETE FROM sql_definitions')
    await client.query('INSERT INTO sql_definitions (digest) VALUES ($1)', [digest])
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK')
    throw error
  }
}

export type MigrationStatus = { tag: string; applied: boolean }

/** Whether the database holds the definitions of `sql/` as they are now; applies nothing. */
export async function definitionsApplied(pool: pg.Pool): Promise<boolean> {
  return (await appliedDefinitionsDigest(pool)) === readDefinitions().digest
}

/**
 * Every migration of `migrations/` in order and whether the database has it, by drizzle's own rule
 * (a migration is pending when it is newer than the last one applied); applies nothing.
 */
export async function migrationStatus(pool: pg.Pool): Promise<MigrationStatus[]> {
  const journal = JSON.parse(readFileSync(`${MIGRATIONS_FOLDER}/meta/_journal.json`, 'utf8')) as {
    entries: { tag: string; when: number }[]
  }
  const { rows: table } = await pool.query<{ exists: boolean }>(`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS exists`)
  const { rows } = table[0]!.exists
    ? await pool.query<{ last: string | null }>('SELECT max(created_at)::text AS last FROM drizzle.__drizzle_migrations')
    : { rows: [{ last: null }] }
  const last = rows[0]!.last === null ? -Infinity : Number(rows[0]!.last)
  return journal.entries.map((entry) => ({ tag: entry.tag, applied: entry.when <= last }))
}
