/**
 * RETENTION_LOGS_DAYS: raw history older than the cutoff goes in short batches (a transaction with its key),
 * and only what nothing needs any more: never attributions or their transactions, the rollups, the registry's
 * logs, rows of blocks an open repair covers, or rows not finalized yet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pruneRawHistory } from '../src/store/index.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 8453
const REGISTRY = `0x${'ee'.repeat(20)}`
const DAY = 86_400
const NOW = Math.floor(Date.now() / 1000)
let db: TestDatabase

const hash = (expression: string) => `'0x' || md5(${expression}) || md5('x' || ${expression})`

/** Blocks 1–100 are 40 days old, 101–120 one day old; block n holds logs n·10 … n·10+4 and transaction n. */
const ageOf = (block: string) =>
  `to_timestamp(CASE WHEN ${block} <= 100 THEN ${NOW - 40 * DAY} + ${block} ELSE ${NOW - DAY} + ${block} END)`

beforeAll(async () => {
  db = await createTestDatabase()
  const pool = db.store.pool
  await pool.query(`INSERT INTO builder_code_registries (chain_id, address, start_block) VALUES ($1, $2, 0)`, [CHAIN_ID, REGISTRY])
  await pool.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
       address, topic0, data, status, removed)
     SELECT ${CHAIN_ID}, b, ${hash('b::text')}, ${ageOf('b')}, ${hash("'t' || b")}, 0, i, i,
       CASE WHEN b = 7 THEN '${REGISTRY}' ELSE '0x' || lpad(to_hex(i), 40, '0') END, '0x' || lpad(to_hex(i), 64, '0'), '0x',
       CASE WHEN b > 115 THEN 'confirmed' ELSE 'finalized' END, b = 9
     FROM generate_series(1, 120) b, generate_series(0, 4) i`,
  )
  // A pre-confirmed log of an old block number that never sealed: not finalized, so kept.
  await pool.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal, address, data, status, removed)
     VALUES (${CHAIN_ID}, 3, '0x${'0'.repeat(64)}', ${ageOf('3')}, ${hash("'dropped'")}, 0, 0, 0, '0x${'11'.repeat(20)}', '0x', 'pending', true)`,
  )
  // With their keys, as the writers store them.
  await pool.query(
    `WITH stored AS (
       INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix, status)
       SELECT ${CHAIN_ID}, ${hash("'t' || b")}, b, ${hash('b::text')}, ${ageOf('b')}, 0, '0x' || lpad(to_hex(b), 40, '0'), 100, b % 10 = 0,
         CASE WHEN b > 115 THEN 'confirmed' ELSE 'finalized' END
       FROM generate_series(1, 120) b
       RETURNING chain_id, hash, block_timestamp)
     INSERT INTO transaction_keys SELECT chain_id, hash, block_timestamp FROM stored`,
  )
  // Every tenth transaction is attributed.
  await pool.query(
    `INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, role, code_index, block_number, block_hash, block_timestamp,
       from_address, sender, schema_id, codes, gas_used, status)
     SELECT ${CHAIN_ID}, ${hash("'t' || b")}, '', 'kept_code', '', 0, b, ${hash('b::text')}, ${ageOf('b')},
       '0x' || lpad(to_hex(b), 40, '0'), '0x' || lpad(to_hex(b), 40, '0'), 0, ARRAY['kept_code'], 21000, CASE WHEN b > 115 THEN 'confirmed' ELSE 'finalized' END
     FROM generate_series(10, 120, 10) b`,
  )
  // An open repair over blocks 40–42: their rows may be read again.
  await pool.query(`INSERT INTO sync_repairs (chain_id, filter_id, from_block, to_block, reason) VALUES ($1, 'f', 40, 42, 'reorg')`, [
    CHAIN_ID,
  ])
}, 60_000)

afterAll(async () => {
  await db?.drop()
})

async function snapshot() {
  const { rows } = await db.store.pool.query<{
    logs: string
    transactions: string
    attributions: string
    buckets: string
    kept_blocks: number[]
  }>(
    `SELECT (SELECT count(*) FROM logs) AS logs, (SELECT count(*) FROM transactions) AS transactions, (SELECT count(*) FROM attributions) AS attributions,
       (SELECT sum(attributions) FROM builder_code_buckets WHERE bucket = 'day') AS buckets,
       (SELECT array_agg(DISTINCT block_number::int ORDER BY block_number::int) FROM logs WHERE block_number <= 100) AS kept_blocks`,
  )
  return rows[0]!
}

describe('retention of raw history', () => {
  it('deletes only finalized logs and unattributed transactions older than the cutoff, outside repairs and the registry', async () => {
    const before = await snapshot()
    expect(Number(before.buckets)).toBe(12)

    const pruned = await pruneRawHistory(db.store.pool, CHAIN_ID, new Date((NOW - 30 * DAY) * 1000), 7)

    // Old blocks 1–100: 5 logs each, but block 7 (the registry's) and blocks 40–42 (an open repair) stay;
    // block 9's removed rows go with the rest. The dropped pending log of block 3 stays.
    expect(pruned.logs).toBe((100 - 4) * 5)
    // Old transactions 1–100 without attributions (90 of them), but 40–42 stay (40 is attributed anyway).
    expect(pruned.transactions).toBe(90 - 2)
    const after = await snapshot()
    expect(after.kept_blocks).toEqual([3, 7, 40, 41, 42])
    expect(Number(after.logs)).toBe(Number(before.logs) - pruned.logs)
    expect(after.attributions).toBe(before.attributions)
    expect(after.buckets).toBe(before.buckets)
    const { rows } = await db.store.pool.query(
      `SELECT count(*)::int AS n FROM transactions t WHERE EXISTS (SELECT 1 FROM attributions a WHERE a.tx_hash = t.hash)`,
    )
    expect(rows[0].n).toBe(12)
    // Each deleted transaction's key went with it; the kept ones keep theirs.
    const { rows: keys } = await db.store.pool.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM transactions t WHERE t.hash = k.hash))::int AS unmatched
       FROM transaction_keys k`,
    )
    expect(keys).toEqual([{ n: 120 - pruned.transactions, unmatched: 0 }])

    // A second pass finds nothing more to delete.
    expect(await pruneRawHistory(db.store.pool, CHAIN_ID, new Date((NOW - 30 * DAY) * 1000), 7)).toEqual({
      logs: 0,
      transactions: 0,
      partitions: [],
      moved: 0,
    })
  })
})
