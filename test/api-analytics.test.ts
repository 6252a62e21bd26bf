import { readFileSync } from 'node:fs'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const DOC = new URL('../docs/analytics.md', import.meta.url)
const BASE_TABLES = ['logs', 'blocks', 'transactions', 'builder_codes', 'attributions', 'sync_intervals', 'chain_state', 'reorgs']
const PERMISSION_DENIED = '42501'
const NOT_UPDATABLE = '55000'

let db: TestDatabase
let client: pg.Client

beforeAll(async () => {
  db = await createTestDatabase()
  await db.store.pool.query(`
    INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source)
      VALUES (8453, 'bc_k3x9a2mf', '0xd8da6bf26964af9d7eed9e03e53415d37aa96045', 'local');
    INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, code_index, block_number, block_hash, block_timestamp,
        from_address, sender, schema_id, codes, gas_used, status, removed)
      SELECT 8453, '0x' || lpad(to_hex(i), 64, '0'), CASE WHEN i % 4 = 0 THEN '0x' || lpad(to_hex(i), 64, 'e') ELSE '' END,
        CASE WHEN i % 3 = 0 THEN 'bc_k3x9a2mf' ELSE 'otherapp' END, 0, i, '0x' || lpad(to_hex(i), 64, 'b'),
        now() - (40 - i) * interval '1 hour', '0xd8da6bf26964af9d7eed9e03e53415d37aa96045',
        CASE WHEN i % 2 = 0 THEN '0xd8da6bf26964af9d7eed9e03e53415d37aa96045' ELSE '0x' || lpad(to_hex(i % 5), 40, '0') END,
        0, ARRAY['bc_k3x9a2mf'], 21000, CASE WHEN i > 36 THEN 'pending' WHEN i > 30 THEN 'confirmed' ELSE 'finalized' END, i % 11 = 0
      FROM generate_series(1, 40) AS i;
    INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
        address, topic0, data, status, removed)
      SELECT 8453, i, CASE WHEN i = 40 THEN '0x' || repeat('0', 64) ELSE '0x' || lpad(to_hex(i), 64, 'b') END, now(),
        '0x' || lpad(to_hex(i), 64, '0'), 0, 0, 0, '0x4200000000000000000000000000000000000006', '0x' || repeat('a', 64), '0x',
        CASE WHEN i = 40 THEN 'pending' ELSE 'confirmed' END, i % 13 = 0
      FROM generate_series(1, 40) AS i;`)
  client = new pg.Client({ connectionString: db.url })
  await client.connect()
})

afterAll(async () => {
  await client?.end()
  await db?.drop()
})

/** Runs `sql` as analytics_reader inside a transaction that is rolled back; resolves to the error code or the rows. */
async function asReader(sql: string): Promise<{ rows: Record<string, unknown>[] } | { code: string }> {
  await client.query('BEGIN')
  try {
    await client.query('SET LOCAL ROLE analytics_reader')
    const { rows } = await client.query(sql)
    return { rows }
  } catch (error) {
    return { code: (error as { code: string }).code }
  } finally {
    await client.query('ROLLBACK')
  }
}

describe('analytics_reader', () => {
  it('selects every analytics view', async () => {
    for (const view of ['analytics.logs', 'analytics.attributed_transactions', 'analytics.builder_code_daily']) {
      const result = await asReader(`SELECT * FROM ${view}`)
      expect('rows' in result && result.rows.length > 0, view).toBe(true)
    }
  })

  it('cannot read any base table', async () => {
    for (const table of BASE_TABLES)
      expect(await asReader(`SELECT * FROM public.${table} LIMIT 1`), table).toEqual({ code: PERMISSION_DENIED })
    expect(await asReader('SELECT * FROM drizzle.__drizzle_migrations')).toEqual({ code: PERMISSION_DENIED })
  })

  it('cannot write anything: views, tables, schemas', async () => {
    const writes = [
      `INSERT INTO analytics.logs (chain_id) VALUES (1)`,
      `UPDATE analytics.logs SET removed = true`,
      `DELETE FROM analytics.logs`,
      `DELETE FROM analytics.attributed_transactions`,
      `INSERT INTO public.builder_codes (chain_id, builder_code, wallet_address, source) VALUES (1, 'bc_x', '0x00', 'local')`,
      `UPDATE public.attributions SET removed = true`,
      `TRUNCATE public.logs`,
      `CREATE TABLE public.scratch (x int)`,
      `CREATE TABLE analytics.scratch (x int)`,
      `CREATE VIEW analytics.mine AS SELECT 1`,
      `DROP VIEW analytics.logs`,
      `ALTER VIEW analytics.logs RENAME TO gone`,
      `COMMENT ON VIEW analytics.logs IS 'mine'`,
    ]
    for (const sql of writes) {
      const result = await asReader(sql)
      // Permission denied, or (a view joining two tables) not updatable at all.
      expect('code' in result && [PERMISSION_DENIED, NOT_UPDATABLE].includes(result.code), sql).toBe(true)
    }
  })

  it('has a comment on every column of every analytics view', async () => {
    const { rows } = await db.store.pool.query(`
      SELECT c.relname AS view, a.attname AS column, col_description(c.oid, a.attnum) AS comment
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
      WHERE n.nspname = 'analytics' AND c.relkind = 'v' AND a.attnum > 0 AND NOT a.attisdropped`)
    expect(rows.length).toBeGreaterThan(30)
    expect(rows.filter((row) => !row.comment).map((row) => `${row.view}.${row.column}`)).toEqual([])
  })

  it('runs every query of docs/analytics.md', async () => {
    const queries = [...readFileSync(DOC, 'utf8').matchAll(/```sql\n([\s\S]*?)```/g)].map((match) => match[1]!)
    expect(queries.length).toBeGreaterThanOrEqual(8)
    for (const sql of queries) {
      const result = await asReader(sql)
      expect(result, sql).toHaveProperty('rows')
    }
    const share = await asReader(queries.find((sql) => sql.includes('own_code_percent'))!)
    expect('rows' in share && share.rows.length).toBeGreaterThan(0)
  })
})
