/**
 * The views, functions, triggers and reader grants live once, in src/store/sql, and the migrator applies
 * them after the table migrations: a database upgraded from any earlier codetrail ends with exactly the
 * definitions of a fresh one, applying them again changes nothing, and a start with nothing new to apply
 * takes no lock on the tables they sit on.
 */
import { readFileSync } from 'node:fs'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyDefinitions, readDefinitions, runMigrations } from '../src/store/migrate.js'
import { createEmptyDatabase, createTestDatabase, dropDatabase, migrateBefore, type TestDatabase } from '../harness/services.js'

const JOURNAL = JSON.parse(readFileSync(new URL('../migrations/meta/_journal.json', import.meta.url), 'utf8')) as {
  entries: { tag: string }[]
}

/** Every definition in codetrail's schemas as PostgreSQL prints it back, with its privileges and comments. */
async function definitionsOf(pool: pg.Pool) {
  const query = async (text: string) => (await pool.query(text)).rows
  return {
    views: await query(`
      SELECT c.oid::regclass::text AS name, pg_get_viewdef(c.oid) AS definition, c.relacl::text AS privileges,
        obj_description(c.oid, 'pg_class') AS comment,
        (SELECT json_agg(json_build_array(a.attname, col_description(c.oid, a.attnum)) ORDER BY a.attnum)
         FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0) AS columns
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('public', 'analytics') AND c.relkind IN ('v', 'm')
      ORDER BY 1`),
    functions: await query(`
      SELECT p.oid::regprocedure::text AS name, pg_get_functiondef(p.oid) AS definition, p.proacl::text AS privileges
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname IN ('public', 'analytics')
      ORDER BY 1`),
    triggers: await query(`
      SELECT t.tgrelid::regclass::text AS "table", t.tgname AS name, pg_get_triggerdef(t.oid) AS definition, t.tgenabled AS enabled
      FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname IN ('public', 'analytics') AND NOT t.tgisinternal
      ORDER BY 1, 2`),
    lockFunctions: await query(`
      SELECT p.oid::regprocedure::text AS name, p.proacl::text AS privileges
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = 'pg_catalog' AND (p.proname LIKE 'pg\\_%advisory\\_%' OR p.proname = 'pg_notify')
      ORDER BY 1`),
    schemas: await query(
      `SELECT nspname AS name, nspacl::text AS privileges FROM pg_namespace WHERE nspname IN ('public', 'analytics') ORDER BY 1`,
    ),
    defaultPrivileges: await query(`
      SELECT n.nspname AS schema, d.defaclobjtype AS kind, d.defaclacl::text AS privileges
      FROM pg_default_acl d JOIN pg_namespace n ON n.oid = d.defaclnamespace ORDER BY 1, 2`),
    readerSettings: await query(`
      SELECT s.setconfig AS settings FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
      WHERE d.datname = current_database() AND s.setrole = 'analytics_reader'::regrole`),
  }
}

/** A database of its own for one test, migrated by `prepare`; dropped after the file. */
async function databaseWith(prepare: (pool: pg.Pool) => Promise<void>): Promise<pg.Pool> {
  const { name, url } = await createEmptyDatabase()
  const pool = new pg.Pool({ connectionString: url, max: 3 })
  cleanups.push(
    () => dropDatabase(name),
    () => pool.end(),
  )
  await prepare(pool)
  return pool
}

let fresh: TestDatabase
const cleanups: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  fresh = await createTestDatabase()
  cleanups.push(() => fresh.drop())
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

/** The migrations that create views, functions or triggers: those written before src/store/sql held them. */
const DEFINING_MIGRATIONS = JOURNAL.entries
  .map((entry) => entry.tag)
  .filter((tag) =>
    /CREATE (OR REPLACE )?(VIEW|FUNCTION|TRIGGER)/i.test(readFileSync(new URL(`../migrations/${tag}.sql`, import.meta.url), 'utf8')),
  )

describe('definitions of src/store/sql', () => {
  it('are created by no migration but those written before they lived here', () => {
    expect(DEFINING_MIGRATIONS.map((tag) => tag.slice(0, 4))).toEqual([
      '0001',
      '0004',
      '0007',
      '0012',
      '0013',
      '0016',
      '0017',
      '0021',
      '0023',
    ])
  })

  it('leave a database upgraded from before each migration that defined any the same as a fresh one', async () => {
    // Each of these migrations, and the last codetrail whose migrations still held the definitions.
    const starts = [...DEFINING_MIGRATIONS, JOURNAL.entries.find((entry) => entry.tag.startsWith('0030'))!.tag]
    const expected = await definitionsOf(fresh.store.pool)
    expect(expected.views.map((view) => view.name)).toContain('analytics.attributed_transactions')
    expect(expected.triggers.length).toBeGreaterThan(10)
    for (const tag of starts) {
      const upgraded = await databaseWith(async (pool) => {
        await migrateBefore(pool, tag)
        await runMigrations(pool)
      })
      expect(await definitionsOf(upgraded), `upgraded from before ${tag}`).toEqual(expected)
    }
  })

  it('change nothing when applied again', async () => {
    const before = await definitionsOf(fresh.store.pool)
    const client = await fresh.store.pool.connect()
    try {
      await applyDefinitions(client)
      await applyDefinitions(client)
    } finally {
      client.release()
    }
    expect(await definitionsOf(fresh.store.pool)).toEqual(before)
    const { rows } = await fresh.store.pool.query('SELECT digest FROM sql_definitions')
    expect(rows).toEqual([{ digest: readDefinitions().digest }])
  })

  it('are not applied again by a start with nothing new, which so waits for no writer', async () => {
    const pool = await databaseWith(runMigrations)
    const writer = await pool.connect()
    try {
      // A writer's open transaction: re-creating the triggers on logs would wait for it to end.
      await writer.query('BEGIN')
      await writer.query('LOCK TABLE logs IN ROW EXCLUSIVE MODE')
      const watch = new AbortController()
      const outcome = await Promise.race([
        runMigrations(pool).then(() => 'migrated'),
        waitingForALock(pool, watch.signal).then(() => 'waited for the writer'),
      ])
      watch.abort()
      expect(outcome).toBe('migrated')

      // Definitions that differ from the ones recorded are applied: behind the writer, once it ends.
      await pool.query(`UPDATE sql_definitions SET digest = 'an earlier codetrail'`)
      const migrating = runMigrations(pool)
      await waitingForALock(pool)
      await writer.query('COMMIT')
      await migrating
      expect((await pool.query('SELECT digest FROM sql_definitions')).rows).toEqual([{ digest: readDefinitions().digest }])
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined)
      writer.release()
    }
  })

  it('stop at a view someone built on one of them, naming it, and change nothing', async () => {
    const pool = await databaseWith(runMigrations)
    await pool.query('CREATE VIEW public.my_report AS SELECT chain_id, count(*) AS n FROM analytics.logs GROUP BY 1')
    await pool.query(`UPDATE sql_definitions SET digest = 'an earlier codetrail'`)
    const before = await definitionsOf(pool)
    await expect(runMigrations(pool)).rejects.toThrow(/analytics\.logs cannot be created again: .*my_report/)
    expect(await definitionsOf(pool)).toEqual(before)
    expect((await pool.query('SELECT digest FROM sql_definitions')).rows).toEqual([{ digest: 'an earlier codetrail' }])
  })
})

/** Resolves once a session of the database waits for a lock another holds (or once `signal` aborts). */
async function waitingForALock(pool: pg.Pool, signal?: AbortSignal): Promise<void> {
  while (!signal?.aborted) {
    const { rows } = await pool.query(
      `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()`,
    )
    if (rows.length > 0) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
