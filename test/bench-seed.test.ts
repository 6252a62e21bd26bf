import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { seedAttributions, type SeedOptions } from '../harness/bench/attributionSeed.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const HEAD_TIME = new Date(Date.UTC(2026, 10, 20, 0, 30))
/** Two seeds, the second appending: 30,000 rows over 3,000 blocks (100 minutes), so over several hours. */
const SEEDS: Pick<SeedOptions, 'rows' | 'headTime'>[] = [
  { rows: 20_000, headTime: HEAD_TIME },
  { rows: 10_000, headTime: new Date(HEAD_TIME.getTime() + 3 * 3_600_000) },
]
const SHAPE = { codes: 50, chainId: 8453 }

let viaTriggers: TestDatabase
let bulk: TestDatabase

beforeAll(async () => {
  ;[viaTriggers, bulk] = await Promise.all([createTestDatabase(), createTestDatabase()])
  for (const seed of SEEDS) {
    await seedAttributions(viaTriggers.url, { ...SHAPE, ...seed, via: 'triggers' })
    await seedAttributions(bulk.url, { ...SHAPE, ...seed, via: 'bulk', jobs: 2 })
  }
})
afterAll(async () => {
  await Promise.all([viaTriggers?.drop(), bulk?.drop()])
})

/** A table's every row (`columns` of it), in key order, as text. */
async function rowsOf(db: TestDatabase, table: string, order: string, columns = 't'): Promise<string[]> {
  const { rows } = await db.store.pool.query<{ row: string }>(`SELECT (${columns})::text AS row FROM ${table} t ORDER BY ${order}`)
  return rows.map((r) => r.row)
}

describe('the bench seeder', () => {
  it('builds by its bulk path (triggers off, the rollup counted once) the rollup the triggers keep on the same rows', async () => {
    // The same rows (but for updated_at, the time of the write)…
    const attributions = [
      'attributions',
      'chain_id, tx_hash, user_op_hash, builder_code, role',
      `t.chain_id, t.tx_hash, t.user_op_hash, t.builder_code, t.role, t.block_number, t.block_timestamp, t.sender, t.from_address,
       t.codes, t.gas_used, t.status, t.removed`,
    ] as const
    expect(await rowsOf(bulk, ...attributions)).toEqual(await rowsOf(viaTriggers, ...attributions))
    expect((await rowsOf(bulk, ...attributions)).length).toBe(30_000)
    // …the same transactions behind them, one per transaction (a bundle's user operation shares it), each with its key…
    const transactions = [
      'transactions',
      'chain_id, hash',
      't.chain_id, t.hash, t.block_number, t.block_timestamp, t.status, t.removed',
    ] as const
    expect(await rowsOf(bulk, ...transactions)).toEqual(await rowsOf(viaTriggers, ...transactions))
    expect((await rowsOf(bulk, ...transactions)).length).toBe(24_000)
    const { rows: unmatched } = await bulk.store.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM attributions a
       WHERE NOT EXISTS (SELECT 1 FROM transaction_keys k JOIN transactions t ON t.chain_id = k.chain_id AND t.hash = k.hash
                         AND t.block_timestamp = k.block_timestamp
                         WHERE k.chain_id = a.chain_id AND k.hash = a.tx_hash AND k.block_timestamp = a.block_timestamp)`,
    )
    expect(unmatched).toEqual([{ n: 0 }])
    // …and the same rollup, row for row.
    const tables = {
      builder_code_buckets: 'chain_id, builder_code, bucket, start',
      builder_code_bucket_senders: 'chain_id, builder_code, bucket, start, sender',
      builder_code_senders: 'chain_id, builder_code, sender',
      builder_code_role_buckets: 'chain_id, builder_code, bucket, start, role',
    }
    for (const [table, order] of Object.entries(tables)) {
      const expected = await rowsOf(viaTriggers, table, order)
      expect(expected.length, table).toBeGreaterThan(0)
      expect(await rowsOf(bulk, table, order), table).toEqual(expected)
    }
  })

  it('leaves the indexes it dropped for the load as it found them', async () => {
    // Every index of the database, the seeded tables' among them. A partition's index takes a name PostgreSQL makes
    // up in the order the parent's indexes are built (`…_idx`, `…_idx1`), so partitions' indexes are compared by
    // what they index.
    const indexes = async (db: TestDatabase) =>
      (await rowsOf(db, 'pg_indexes', 'indexname', 't.indexname, t.indexdef'))
        .map((row) =>
          row.replace(/^\((\w+?_(p\d{4}_\d{2}|default)_\w+),"CREATE (UNIQUE )?INDEX \1 /, '(<partition index>,"CREATE $3INDEX '),
        )
        .sort()
    const found = await indexes(bulk)
    expect(found.filter((row) => row.startsWith('(<partition index>')).length).toBeGreaterThan(0)
    expect(found).toEqual(await indexes(viaTriggers))
  })
})
