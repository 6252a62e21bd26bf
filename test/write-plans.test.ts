/**
 * Writes that find transactions by hash (the gas fill, registry answers, a pending poll's check for confirmed
 * transactions, a known transaction's move) look into the months the transactions' keys name, not into every
 * month of `transactions` and `attributions`. Each writer runs against twelve months of rows with its statements
 * also run under `EXPLAIN ANALYZE` (inside a savepoint rolled back, so each write happens once); the months a plan
 * read are the partitions its scans ran in.
 */
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeRegistryAnswers, upsertTransactions } from '../src/store/attributions.js'
import { ensureMonthPartitions, storeGasUsed, toLogRows, upsertPendingLogs, ZERO_HASH } from '../src/store/index.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 8453
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
/** Transaction n of the seed: 10,000 a month over 2025, block n at `2025-01-01 + n × 262 s`. */
const SEEDED = 120_000
const timeOf = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 262_000)
/** The first seeded transaction of a month of 2025 (0-based). */
const firstIn = (month: number) => Math.ceil((Date.UTC(2025, month, 1) - Date.UTC(2025, 0, 1)) / 262_000)

type PlanNode = { 'Relation Name'?: string; 'Actual Loops': number; Plans?: PlanNode[] }
type Explained = { text: string; plan: PlanNode }

/** The month partitions of `table` whose scans ran in `plan` (a month pruned, or never started, ran none). */
function monthsRead(plan: PlanNode, table: 'transactions' | 'attributions'): string[] {
  const months = new Set<string>()
  const walk = (node: PlanNode) => {
    const name = node['Relation Name']
    if (name !== undefined && (name.startsWith(`${table}_p`) || name === `${table}_default`) && node['Actual Loops'] > 0) months.add(name)
    for (const child of node.Plans ?? []) walk(child)
  }
  walk(plan)
  return [...months].sort()
}

/** The one statement explained whose text starts with `start` (whitespace ignored). */
function planOf(explained: readonly Explained[], start: string): PlanNode {
  const found = explained.filter((e) => e.text.replace(/\s+/g, ' ').trim().startsWith(start))
  expect(found.map((e) => e.text.slice(0, 60))).toHaveLength(1)
  return found[0]!.plan
}

/**
 * A client whose statements with parameters also run under `EXPLAIN ANALYZE` first, inside a savepoint rolled
 * back (the caller's transaction must be open), pushed to `explained`; `COPY` streams and the rest pass through.
 */
function explainingClient(client: pg.PoolClient, explained: Explained[]): pg.PoolClient {
  const query = async (text: unknown, values?: unknown[]) => {
    if (typeof text === 'string' && values !== undefined && /^\s*(UPDATE|WITH|SELECT|INSERT)/i.test(text)) {
      await client.query('SAVEPOINT explained')
      const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values)
      await client.query('ROLLBACK TO SAVEPOINT explained')
      explained.push({ text, plan: (rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan })
    }
    return (client.query as (text: unknown, values?: unknown[]) => Promise<unknown>)(text, values)
  }
  return new Proxy(client, { get: (target, key) => (key === 'query' ? query : Reflect.get(target, key)) })
}

/** A pool handing out one explaining client, for writers that open their own transaction. */
function explainingPool(pool: pg.Pool, explained: Explained[]): pg.Pool {
  return { connect: async () => explainingClient(await pool.connect(), explained) } as unknown as pg.Pool
}

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
  const pool = db.store.pool
  for (const table of ['transactions', 'attributions'] as const)
    await ensureMonthPartitions(pool, table, new Date('2025-12-15T00:00:00Z'), new Date('2025-01-01T00:00:00Z'))
  // 120,000 transactions over 2025 with their keys; every tenth attributed, its gas used not read yet.
  await pool.query(
    `WITH stored AS (
       INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix,
         status, registry_address, registry_chain_id, codes)
       SELECT $1, '0x' || lpad(to_hex(n), 64, '0'), n, '0x' || lpad(to_hex(n), 64, '0'), timestamptz '2025-01-01Z' + n * interval '262 s', 0,
         '0x' || repeat('aa', 20), 100, true, 'confirmed', '0x' || repeat('bb', 20), 8453, ARRAY['code']
       FROM generate_series(0, $2::int - 1) AS n
       RETURNING chain_id, hash, block_timestamp)
     INSERT INTO transaction_keys SELECT chain_id, hash, block_timestamp FROM stored`,
    [CHAIN_ID, SEEDED],
  )
  await pool.query(
    `INSERT INTO attributions (chain_id, tx_hash, builder_code, code_index, block_number, block_hash, block_timestamp, from_address, sender,
       schema_id, codes, status)
     SELECT chain_id, hash, 'code', 0, block_number, block_hash, block_timestamp, from_address, from_address, 0, ARRAY['code'], status
     FROM transactions WHERE chain_id = $1 AND block_number % 10 = 0`,
    [CHAIN_ID],
  )
  await pool.query('ANALYZE transactions, transaction_keys, attributions')
}, 120_000)
afterAll(async () => {
  await db?.drop()
})

/** Runs `write` with an explaining client inside a transaction that commits, and returns what it answered. */
async function explainedWrite<T>(explained: Explained[], write: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.store.pool.connect()
  try {
    await client.query('BEGIN')
    const result = await write(explainingClient(client, explained))
    await client.query('COMMIT')
    return result
  } finally {
    client.release()
  }
}

describe('writes by hash', () => {
  it('the gas fill updates a page of June in June alone (defect: every month probed)', async () => {
    const june = Array.from({ length: 50 }, (_, i) => Math.ceil(firstIn(5) / 10) * 10 + 10 * i)
    const reads = june.map((n) => ({ hash: hash(n), blockHash: hash(n), gasUsed: 30_000 + n }))
    const explained: Explained[] = []
    expect(await explainedWrite(explained, (client) => storeGasUsed(client, CHAIN_ID, reads))).toBe(50)
    const { rows } = await db.store.pool.query<{ hash: string; tx: string; attribution: string }>(
      `SELECT t.hash, t.gas_used AS tx, a.gas_used AS attribution FROM transactions t JOIN attributions a ON a.chain_id = t.chain_id AND a.tx_hash = t.hash
       WHERE t.chain_id = $1 AND t.hash = ANY($2::text[])`,
      [CHAIN_ID, reads.map((r) => r.hash)],
    )
    expect(rows.map((row) => [row.hash, Number(row.tx), Number(row.attribution)]).sort()).toEqual(
      reads.map((r) => [r.hash, r.gasUsed, r.gasUsed]).sort(),
    )
    expect(monthsRead(planOf(explained, 'UPDATE transactions t SET gas_used'), 'transactions')).toEqual(['transactions_p2025_06'])
    expect(monthsRead(planOf(explained, 'UPDATE attributions a SET gas_used'), 'attributions')).toEqual(['attributions_p2025_06'])
  })

  it('registry answers update their transactions in the months between their keys’ (defect: every month probed)', async () => {
    const answered = [firstIn(2) + 5, firstIn(3) + 5]
    const explained: Explained[] = []
    await explainedWrite(explained, (client) =>
      storeRegistryAnswers(
        client,
        CHAIN_ID,
        answered.map((n) => ({ hash: hash(n), verified: true, reason: null })),
      ),
    )
    const { rows } = await db.store.pool.query<{ n: number }>(
      `SELECT block_number::int AS n FROM transactions WHERE chain_id = $1 AND registry_verified ORDER BY 1`,
      [CHAIN_ID],
    )
    expect(rows.map((row) => row.n)).toEqual(answered)
    expect(monthsRead(planOf(explained, 'UPDATE transactions t SET registry_verified'), 'transactions')).toEqual([
      'transactions_p2025_03',
      'transactions_p2025_04',
    ])
  })

  it('a pending poll looks for confirmed transactions in their keys’ months, and for new ones in none (defect: every month probed)', async () => {
    const confirmed = firstIn(4) + 3
    const log = (transaction: number, logIndex: number) => ({
      address: `0x${'cc'.repeat(20)}`,
      topics: [hash(0xabc)],
      data: '0x',
      blockNumber: `0x${(SEEDED + 10).toString(16)}`,
      blockHash: ZERO_HASH,
      blockTimestamp: `0x${Math.floor(Date.UTC(2025, 11, 20) / 1000).toString(16)}`,
      transactionHash: hash(transaction),
      transactionIndex: `0x${logIndex.toString(16)}`,
      logIndex: `0x${logIndex.toString(16)}`,
    })
    await ensureMonthPartitions(db.store.pool, 'logs', new Date('2025-12-15T00:00:00Z'))
    // Two transactions the index has never seen (past the seeded ones), and a stale answer for one it holds confirmed in May.
    const explained: Explained[] = []
    const polled = toLogRows([log(0xf0001, 0), log(0xf0002, 1), log(confirmed, 2)])
    expect(await upsertPendingLogs(explainingPool(db.store.pool, explained), CHAIN_ID, polled)).toBe(2)
    const { rows } = await db.store.pool.query<{ hash: string }>(
      `SELECT transaction_hash AS hash FROM logs WHERE chain_id = $1 AND status = 'pending' ORDER BY 1`,
      [CHAIN_ID],
    )
    expect(rows.map((row) => row.hash)).toEqual([hash(0xf0001), hash(0xf0002)])
    // (The update met no stored pending row to move, so it read no transaction at all.)
    expect(monthsRead(planOf(explained, 'INSERT INTO logs'), 'transactions')).toEqual(['transactions_p2025_05'])
    // The next poll holds new transactions only, one of them moved to another log index: no month of `transactions` is read.
    const fresh: Explained[] = []
    expect(await upsertPendingLogs(explainingPool(db.store.pool, fresh), CHAIN_ID, toLogRows([log(0xf0001, 3), log(0xf0003, 4)]))).toBe(2)
    for (const statement of ['UPDATE logs SET', 'INSERT INTO logs'])
      expect(monthsRead(planOf(fresh, statement), 'transactions')).toEqual([])
  })

  it('a known transaction moves out of the month its key names, which alone is looked into (defect: every month probed)', async () => {
    const n = Math.ceil(firstIn(8) / 10) * 10 + 20 // attributed (a multiple of ten), stored in September
    const moved = new Date(Date.UTC(2025, 9, 2))
    const explained: Explained[] = []
    await explainedWrite(explained, (client) =>
      upsertTransactions(
        client,
        CHAIN_ID,
        [],
        new Map([
          [
            hash(n),
            {
              hash: hash(n),
              blockNumber: SEEDED + 20,
              blockHash: hash(SEEDED + 20),
              blockTimestamp: moved.getTime() / 1000,
              transactionIndex: 1,
              status: 'confirmed' as const,
            },
          ],
        ]),
        new Map(),
      ),
    )
    expect(timeOf(n).getUTCMonth()).toBe(8)
    const { rows } = await db.store.pool.query<{ place: string }>(
      `SELECT 'transaction ' || tableoid::regclass || ' ' || block_number AS place FROM transactions WHERE chain_id = $1 AND hash = $2
       UNION ALL SELECT 'attribution ' || tableoid::regclass || ' ' || block_number FROM attributions WHERE chain_id = $1 AND tx_hash = $2
       UNION ALL SELECT 'key ' || (block_timestamp = $3) FROM transaction_keys WHERE chain_id = $1 AND hash = $2`,
      [CHAIN_ID, hash(n), moved],
    )
    expect(rows.map((row) => row.place).sort()).toEqual([
      `attribution attributions_p2025_10 ${SEEDED + 20}`,
      'key true',
      `transaction transactions_p2025_10 ${SEEDED + 20}`,
    ])
    expect(monthsRead(planOf(explained, 'WITH moved AS ( UPDATE transactions'), 'transactions')).toEqual(['transactions_p2025_09'])
    expect(monthsRead(planOf(explained, 'UPDATE attributions SET'), 'attributions')).toEqual(['attributions_p2025_09'])
  })
})
