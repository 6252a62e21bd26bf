import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { transactionsStoredElsewhere } from '../src/store/chunks.js'
import type { TransactionRow } from '../src/store/logRows.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
const STORED = 30_000
const READ = 400
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`

type PlanNode = { 'Relation Name'?: string; 'Actual Rows': number; 'Actual Loops': number; Plans?: PlanNode[] }
/** Rows the plan read from `table`, over every loop of every node on it. */
const rowsReadFrom = (node: PlanNode, table: string): number =>
  (node['Relation Name'] === table ? node['Actual Rows'] * node['Actual Loops'] : 0) +
  (node.Plans ?? []).reduce((sum, child) => sum + rowsReadFrom(child, table), 0)

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

describe('a range job’s check of transactions stored in another block', () => {
  it('looks each transaction up by key on a table never analyzed (defect: a walk of the whole table per transaction read)', async () => {
    // A backfill's first chunks near the head: `transactions` just filled, no statistics yet.
    await db.store.pool.query(
      `INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix, status)
       SELECT $1, lpad(to_hex(n), 64, '0'), n, lpad(to_hex(n), 64, '0'), now(), 0, '0xaa', 0, false, 'confirmed' FROM generate_series(1, $2::int) AS n`,
      [CHAIN_ID, STORED],
    )
    await db.store.pool.query(`UPDATE transactions SET hash = '0x' || hash, block_hash = '0x' || block_hash`)
    const { rows: analyzed } = await db.store.pool.query<{ reltuples: number }>(
      `SELECT reltuples FROM pg_class WHERE oid = 'transactions'::regclass`,
    )
    expect(analyzed[0]!.reltuples).toBe(-1)
    // The range read the newest stored transactions in their own blocks, and one of them in another.
    const read: TransactionRow[] = Array.from({ length: READ }, (_, i) => {
      const n = STORED - i
      return {
        transactionHash: hash(n),
        blockNumber: n,
        blockHash: hash(n),
        blockTimestamp: 1_795_000_000,
        blockTimestampMs: null,
        transactionIndex: 0,
      }
    })
    read[READ - 1] = { ...read[READ - 1]!, blockNumber: STORED + 1, blockHash: hash(STORED + 1) }

    const client = await db.store.pool.connect()
    try {
      const plans: PlanNode[] = []
      const explaining: Pick<pg.PoolClient, 'query'> = {
        query: (async (text: string, values: unknown[]) => {
          const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values)
          plans.push((rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan)
          return client.query(text, values)
        }) as pg.PoolClient['query'],
      }
      expect(await transactionsStoredElsewhere(explaining, CHAIN_ID, read, null)).toEqual({
        hash: hash(STORED - READ + 1),
        readIn: STORED + 1,
        storedIn: STORED - READ + 1,
      })
      expect(await transactionsStoredElsewhere(explaining, CHAIN_ID, read.slice(0, -1), null)).toBeUndefined()
      // At most one row per transaction read, never the chain's whole table.
      expect(plans).toHaveLength(2)
      for (const plan of plans) expect(rowsReadFrom(plan, 'transactions')).toBeLessThanOrEqual(READ)
      // Finalized transactions are not asked about at all.
      expect(await transactionsStoredElsewhere(explaining, CHAIN_ID, read, STORED + 1)).toBeUndefined()
      expect(plans).toHaveLength(2)
    } finally {
      client.release()
    }
  })
})
