import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { knownTransactions } from '../src/store/attributions.js'
import { transactionsStoredElsewhere } from '../src/store/chunks.js'
import { ensureMonthPartitions } from '../src/store/index.js'
import type { TransactionRow } from '../src/store/logRows.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
const STORED = 30_000
const READ = 400
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`

type PlanNode = {
  'Relation Name'?: string
  'Actual Rows': number
  'Actual Loops': number
  'Rows Removed by Filter'?: number
  Plans?: PlanNode[]
}
/** Whether the plan node reads `table` or one of its month partitions. */
const readsTable = (node: PlanNode, table: string): boolean =>
  node['Relation Name'] === table ||
  node['Relation Name']?.startsWith(`${table}_p`) === true ||
  node['Relation Name'] === `${table}_default`

/** Rows the plan read from `table` (or its month partitions), kept or filtered out, over every loop of every node on it. */
const rowsReadFrom = (node: PlanNode, table: string): number =>
  (readsTable(node, table) ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'] : 0) +
  (node.Plans ?? []).reduce((sum, child) => sum + rowsReadFrom(child, table), 0)

/** Scans of `table` (or its month partitions) the plan ran, over every loop (a partition pruned at run time runs none). */
const scansOf = (node: PlanNode, table: string): number =>
  (readsTable(node, table) ? node['Actual Loops'] : 0) + (node.Plans ?? []).reduce((sum, child) => sum + scansOf(child, table), 0)

/** A client whose queries also run under `EXPLAIN ANALYZE`, their plans pushed to `plans`. */
const explainingClient = (client: pg.PoolClient, plans: PlanNode[]): Pick<pg.PoolClient, 'query'> => ({
  query: (async (text: string, values: unknown[]) => {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values)
    plans.push((rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan)
    return client.query(text, values)
  }) as pg.PoolClient['query'],
})

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
    await db.store.pool.query(`INSERT INTO transaction_keys SELECT chain_id, hash, block_timestamp FROM transactions`)
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
      const explaining = explainingClient(client, plans)
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

describe('the attributor’s look for transactions decoded before', () => {
  it('probes one key per hash asked, and for a stored one the month its key names, never a month read whole (defect: every month scanned)', async () => {
    // Twelve months of 10,000 transactions each, with their keys, analyzed.
    const pool = db.store.pool
    await ensureMonthPartitions(pool, 'transactions', new Date('2025-12-15T00:00:00Z'), new Date('2025-01-01T00:00:00Z'))
    await pool.query(
      `WITH stored AS (
         INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix,
           status, gas_used)
         SELECT $1, '0xe' || lpad(to_hex(n), 63, '0'), n, '0x' || lpad(to_hex(n), 64, '0'), timestamptz '2025-01-01' + n * interval '262 s', 0, '0xaa',
           0, false, 'finalized', 21000
         FROM generate_series(1, 120000) AS n
         RETURNING chain_id, hash, block_timestamp)
       INSERT INTO transaction_keys SELECT chain_id, hash, block_timestamp FROM stored`,
      [CHAIN_ID + 1],
    )
    await pool.query('ANALYZE transactions')
    await pool.query('ANALYZE transaction_keys')
    // A range's 3,000 transactions, ten of them stored before.
    const stored = Array.from({ length: 10 }, (_, i) => `0xe${(i * 11_000 + 7).toString(16).padStart(63, '0')}`)
    const asked = [...stored, ...Array.from({ length: 2_990 }, (_, i) => hash(1_000_000 + i))]
    const client = await pool.connect()
    try {
      const plans: PlanNode[] = []
      const known = await knownTransactions(explainingClient(client, plans) as pg.PoolClient, CHAIN_ID + 1, asked)
      expect([...known.keys()].sort()).toEqual([...stored].sort())
      expect([...known.values()].every((row) => row.gasUsed === 21000 && !row.attributed)).toBe(true)
      expect(plans).toHaveLength(1)
      // Each stored hash is found in its month; a month is never read whole (it holds 10,000).
      expect(rowsReadFrom(plans[0]!, 'transactions')).toBeLessThanOrEqual(stored.length)
      // One month looked into per stored hash (the one its key names), not each of the 18 partitions.
      expect(scansOf(plans[0]!, 'transactions')).toBe(stored.length)
    } finally {
      client.release()
    }
  })
})
