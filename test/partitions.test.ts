/**
 * `logs` is partitioned by month of block time, and the webhook tables by month of their rows' creation:
 * months are created ahead (moving rows the default partition holds for them), pending logs whose time
 * changes stay one row per (transaction, ordinal) as they move between months, and retention drops a
 * whole month when every row of it may go or is one of a few it must keep, which move into the default
 * partition. `attributions` and `transactions` are partitioned by month of block time too, and stay one row per
 * attribution and per transaction as the transaction moves between months, however its writers race; retention
 * drops months of transactions, the attributed ones moved to the default partition, with their keys.
 */
import { createHash } from 'node:crypto'
import pg from 'pg'
import { encodeAbiParameters, toEventSelector } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builderCodesRegistryAbi } from '../src/attribution/registry.js'
import { applyDefinitions, readDefinitions } from '../src/store/migrate.js'
import { createDispatcher } from '../src/delivery/dispatcher.js'
import {
  ensureMonthPartitions,
  owedEvents,
  pruneRawHistory,
  readEvents,
  runMigrations,
  toLogRows,
  upsertPendingLogs,
  withTransaction,
  type LogInput,
} from '../src/store/index.js'
import { upsertAttributions, upsertTransactions, type TransactionPosition } from '../src/store/attributions.js'
import { waitUntilBlocked } from './helpers/locks.js'
import { decodedTransaction } from './helpers/transactions.js'
import type { Status } from '../src/store/schema.js'
import { silentLogger } from '../src/internal/logger.js'
import { createEmptyDatabase, createTestDatabase, dropDatabase, migrateBefore, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 8453
const REGISTRY = '0x00000000000000000000000000000000000b0c0d'
const CODE_REGISTERED = toEventSelector(builderCodesRegistryAbi[0]!)
const ZERO_HASH = `0x${'0'.repeat(64)}`
const hex = (n: number, digits = 64) => `0x${n.toString(16).padStart(digits, '0')}`
const at = (iso: string) => Date.parse(iso) / 1000

let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
  await db.store.pool.query(`INSERT INTO builder_code_registries (chain_id, address, start_block) VALUES ($1, $2, 0)`, [CHAIN_ID, REGISTRY])
})

afterAll(async () => {
  await db?.drop()
})

/** Inserts `n` logs of chain `chainId` at blocks `first`…, each at time `time`, through the parent. */
async function insertLogs(chainId: number, first: number, n: number, time: string, extra: { status?: string; address?: string } = {}) {
  await db.store.pool.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
       address, topic0, data, status)
     SELECT $1, b, '0x' || md5(b::text) || md5('h' || b), $3::timestamptz, '0x' || md5('t' || b) || md5('u' || b), 0, 0, 0, $4, $5, '0x', $6
     FROM generate_series($2::int, $2::int + $7::int - 1) b`,
    [chainId, first, time, extra.address ?? `0x${'aa'.repeat(20)}`, hex(1), extra.status ?? 'finalized', n],
  )
}

/** How many rows of `table` matching `where` each of its partitions holds. */
async function partitionsOf(where: string, params: unknown[] = [], { table = 'logs', pool = db.store.pool } = {}) {
  const { rows } = await pool.query<{ partition: string; n: number }>(
    `SELECT tableoid::regclass::text AS partition, count(*)::int AS n FROM ${table} WHERE ${where} GROUP BY 1 ORDER BY 1`,
    params,
  )
  return rows
}

describe('logs partitioned by month', () => {
  it('converts the logs of a deployment: every row moved into its month, keys and registry tokens as they were', async () => {
    const { name, url } = await createEmptyDatabase()
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    try {
      await migrateBefore(pool, '0033_logs_partitions')
      // The registry's triggers on logs, as that deployment had them. Today's other definitions read columns later
      // migrations add, so the views over the registry's go until runMigrations below applies every definition.
      const definitions = readDefinitions()
      const registry = { files: definitions.files.filter(({ name }) => name === '01-registry.sql'), digest: 'registry only' }
      await pool.query('DROP SCHEMA IF EXISTS analytics CASCADE')
      const client = await pool.connect()
      await applyDefinitions(client, registry).finally(() => client.release())
      await pool.query(`INSERT INTO builder_code_registries (chain_id, address, start_block) VALUES ($1, $2, 0)`, [CHAIN_ID, REGISTRY])
      await pool.query(
        `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
           address, topic0, topic1, data, status)
         SELECT $1, b, '0x' || md5(b::text) || md5('h' || b), timestamptz '2021-03-30' + b * interval '1 hour', '0x' || md5('t' || b) || md5('u' || b),
           0, 0, 0, CASE WHEN b = 7 THEN $2 ELSE '0x' || repeat('ab', 20) END, $3, $4, CASE WHEN b = 7 THEN $5 ELSE '0x' END,
           CASE WHEN b > 90 THEN 'pending' ELSE 'finalized' END
         FROM generate_series(1, 100) b`,
        [CHAIN_ID, REGISTRY, CODE_REGISTERED, hex(5), encodeAbiParameters([{ type: 'string' }], ['bc_kept'])],
      )
      const codes = async () => (await pool.query(`SELECT builder_code FROM registry_codes`)).rows
      expect(await codes()).toEqual([{ builder_code: 'bc_kept' }])

      await runMigrations(pool)
      const { rows } = await pool.query(`SELECT tableoid::regclass::text AS partition, count(*)::int AS n FROM logs GROUP BY 1 ORDER BY 1`)
      // 30 March 2021 + 1…100 hours: 47 rows in March, 53 in April.
      expect(rows).toEqual([
        { partition: 'logs_p2021_03', n: 47 },
        { partition: 'logs_p2021_04', n: 53 },
      ])
      expect(await codes()).toEqual([{ builder_code: 'bc_kept' }])
      // The canonical key holds: the same log again is refused.
      await expect(pool.query(`INSERT INTO logs SELECT * FROM logs WHERE chain_id = $1 AND block_number = 3`, [CHAIN_ID])).rejects.toThrow(
        /logs_p2021_03_chain_id_block_number_block_hash_log_index_b_idx|duplicate key/,
      )
    } finally {
      await pool.end()
      await dropDatabase(name)
    }
  })

  it('creates this month and the two after it once, moving rows logs_default holds for them, registry tokens untouched', async () => {
    const pool = db.store.pool
    // May 2020 has no partition yet: its rows, a registration among them, land in logs_default.
    await insertLogs(CHAIN_ID, 500_000, 5, '2020-05-10T00:00:00Z')
    await pool.query(
      `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
         address, topic0, topic1, data, status)
       VALUES ($1, 500100, $2, '2020-05-20T00:00:00Z', $3, 0, 0, 0, $4, $5, $6, $7, 'finalized')`,
      [CHAIN_ID, hex(0xb100), hex(0xc100), REGISTRY, CODE_REGISTERED, hex(77), encodeAbiParameters([{ type: 'string' }], ['bc_moved'])],
    )
    const codes = async () =>
      (await pool.query(`SELECT builder_code, registered_block::int FROM registry_codes WHERE chain_id = $1`, [CHAIN_ID])).rows
    expect(await codes()).toEqual([{ builder_code: 'bc_moved', registered_block: 500100 }])
    expect(await partitionsOf('block_number >= 500000 AND block_number < 600000')).toEqual([{ partition: 'logs_default', n: 6 }])

    expect(await ensureMonthPartitions(pool, 'logs', new Date('2020-05-15T00:00:00Z'))).toEqual([
      'logs_p2020_05',
      'logs_p2020_06',
      'logs_p2020_07',
    ])
    expect(await ensureMonthPartitions(pool, 'logs', new Date('2020-05-31T23:00:00Z'))).toEqual([])
    expect(await partitionsOf('block_number >= 500000 AND block_number < 600000')).toEqual([{ partition: 'logs_p2020_05', n: 6 }])
    expect(await codes()).toEqual([{ builder_code: 'bc_moved', registered_block: 500100 }])
    // The moved partition carries the indexes and the registry triggers of logs: a log that reorgs away takes its code with it.
    await pool.query(`UPDATE logs SET removed = true WHERE chain_id = $1 AND block_number = 500100`, [CHAIN_ID])
    expect(await codes()).toEqual([])
    // A new month's rows go to their partition.
    await insertLogs(CHAIN_ID, 600_000, 3, '2020-06-02T00:00:00Z')
    expect(await partitionsOf('block_number >= 600000 AND block_number < 700000')).toEqual([{ partition: 'logs_p2020_06', n: 3 }])
  })

  it('keeps one pending row per (transaction, ordinal) while polls move it across months, however they race', async () => {
    const chainId = 77
    const pending = (block: number, time: string, logIndex = 0): LogInput => ({
      address: `0x${'cc'.repeat(20)}`,
      topics: [hex(0xabc)],
      data: hex(block),
      blockNumber: `0x${block.toString(16)}`,
      blockHash: ZERO_HASH,
      blockTimestamp: `0x${at(time).toString(16)}`,
      transactionHash: hex(0x7e57),
      transactionIndex: '0x0',
      logIndex: `0x${logIndex.toString(16)}`,
    })
    const rows = (block: number, time: string) => toLogRows([pending(block, time)])
    await ensureMonthPartitions(db.store.pool, 'logs', new Date('2020-06-15T00:00:00Z'))
    expect(await upsertPendingLogs(db.store.pool, chainId, rows(10, '2020-06-30T23:59:59Z'))).toBe(1)
    expect(await partitionsOf('chain_id = $1', [chainId])).toEqual([{ partition: 'logs_p2020_06', n: 1 }])
    // The next poll has it in a block of July: the same row moves to July's partition.
    expect(await upsertPendingLogs(db.store.pool, chainId, rows(11, '2020-07-01T00:00:01Z'))).toBe(1)
    expect(await partitionsOf('chain_id = $1', [chainId])).toEqual([{ partition: 'logs_p2020_07', n: 1 }])
    // Polls landing together, each moving it somewhere else: still one row.
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        upsertPendingLogs(db.store.pool, chainId, rows(12 + i, i % 2 === 0 ? '2020-06-30T23:59:58Z' : '2020-07-01T00:00:02Z')),
      ),
    )
    const { rows: after } = await db.store.pool.query(`SELECT count(*)::int AS n FROM logs WHERE chain_id = $1`, [chainId])
    expect(after[0].n).toBe(1)
  })

  it('retention drops a month when every row of it may go or is one of a few kept (moved to logs_default), and deletes in batches elsewhere', async () => {
    const pool = db.store.pool
    expect(await ensureMonthPartitions(pool, 'logs', new Date('2020-01-15T00:00:00Z'))).toEqual([
      'logs_p2020_01',
      'logs_p2020_02',
      'logs_p2020_03',
    ])
    await ensureMonthPartitions(pool, 'logs', new Date('2020-03-15T00:00:00Z'))
    const chainId = 9
    await pool.query(`INSERT INTO chain_state (chain_id, finalized_block) VALUES ($1, 1000)`, [chainId])
    // January: finalized rows, and a pre-confirmed row dropped at a height now finalized (terminal). Goes whole.
    await insertLogs(chainId, 100, 20, '2020-01-10T00:00:00Z')
    await insertLogs(chainId, 150, 1, '2020-01-11T00:00:00Z', { status: 'pending' })
    await pool.query(`UPDATE logs SET removed = true, block_hash = $2 WHERE chain_id = $1 AND status = 'pending'`, [chainId, ZERO_HASH])
    // February: one of the registry's logs among finalized rows (of another chain: partitions hold every chain). Goes; the registry's log moves.
    await insertLogs(chainId, 200, 20, '2020-02-10T00:00:00Z')
    await insertLogs(CHAIN_ID, 250, 1, '2020-02-11T00:00:00Z', { address: REGISTRY })
    // March: one confirmed row not finalized yet. Stays.
    await insertLogs(chainId, 300, 20, '2020-03-10T00:00:00Z')
    await insertLogs(chainId, 2000, 1, '2020-03-11T00:00:00Z', { status: 'confirmed' })
    // April: rows under an open repair. Goes; those rows move.
    await insertLogs(chainId, 400, 20, '2020-04-10T00:00:00Z')
    await pool.query(`INSERT INTO sync_repairs (chain_id, filter_id, from_block, to_block, reason) VALUES ($1, 'f', 405, 406, 'reorg')`, [
      chainId,
    ])
    // June (ends after the cutoff) stays whatever it holds.

    const registryCodes = async () =>
      (await pool.query(`SELECT chain_id, builder_code, registered_block::int FROM registry_codes ORDER BY 1, 2`)).rows
    const codesBefore = await registryCodes()

    const pruned = await pruneRawHistory(pool, chainId, new Date('2020-06-01T00:00:00Z'))
    // May (with the rows and registry log of the test above) ends at the cutoff: it goes too, its registry log moved.
    expect([pruned.partitions, pruned.moved]).toEqual([['logs_p2020_01', 'logs_p2020_02', 'logs_p2020_04', 'logs_p2020_05'], 4])
    const { rows: months } = await pool.query(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'logs'::regclass AND c.relname LIKE 'logs_p2020%' ORDER BY 1`,
    )
    expect(months.map((row) => row.relname)).toEqual(['logs_p2020_03', 'logs_p2020_06', 'logs_p2020_07', 'logs_p2020_08'])
    // The batched delete took the rest of what may go: March's finalized rows.
    expect(await partitionsOf('chain_id = $1', [chainId])).toEqual([
      { partition: 'logs_default', n: 2 },
      { partition: 'logs_p2020_03', n: 1 },
    ])
    // January 21, February 20, March 20 (deleted), April 18, and May's 5 of chain 8453 (finalized, not the registry's).
    expect(pruned.logs).toBe(21 + 20 + 20 + 18 + 5)
    expect(await partitionsOf('chain_id = $1 AND address = $2', [CHAIN_ID, REGISTRY])).toEqual([{ partition: 'logs_default', n: 2 }])
    // Moved, not removed and inserted again: the codes the registry's logs hold are as they were.
    expect(await registryCodes()).toEqual(codesBefore)
  })
})

/** Inserts one event per time of `times`, of builder code `code`, through the parent; returns their ids in order. */
async function insertEvents(pool: pg.Pool, code: string, times: readonly string[]): Promise<number[]> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO webhook_events (type, chain_id, tx_hash, user_op_hash, builder_code, sender, block_number, block_timestamp, status, removed, created_at)
     SELECT 'attribution.confirmed', $1, '0x' || md5(t::text), '', $2, '0x', 1, t, 'confirmed', false, t
     FROM unnest($3::timestamptz[]) WITH ORDINALITY AS u(t, n) ORDER BY n RETURNING id`,
    [CHAIN_ID, code, times],
  )
  return rows.map((row) => Number(row.id))
}

/** Inserts one delivery record of `eventId` to `subscriptionId` per time of `times`; returns their ids in order. */
async function insertDeliveries(pool: pg.Pool, subscriptionId: string, eventId: number, times: readonly string[]): Promise<number[]> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (subscription_id, event_id, ok, duration_ms, created_at)
     SELECT $1, $2, true, 1, t FROM unnest($3::timestamptz[]) WITH ORDINALITY AS u(t, n) ORDER BY n RETURNING id`,
    [subscriptionId, eventId, times],
  )
  return rows.map((row) => Number(row.id))
}

const hours = (from: string, n: number) => Array.from({ length: n }, (_, i) => new Date(Date.parse(from) + i * 3_600_000).toISOString())

describe('webhook events partitioned by month', () => {
  it('converts the events and delivery records of a deployment into months, and never gives an id twice', async () => {
    const { name, url } = await createEmptyDatabase()
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    try {
      await migrateBefore(pool, '0034_webhook_partitions')
      // 31 March 2021 22:00 + 0…4 hours: 2 events in March, 3 in April; the newest is pruned, so the sequence is ahead of the rows.
      const ids = await insertEvents(pool, 'bc_converted', hours('2021-03-31T22:00:00Z', 5))
      await pool.query(`DELETE FROM webhook_events WHERE id = $1`, [ids.at(-1)])
      await pool.query(
        `INSERT INTO webhook_subscriptions (id, url, secret, events) VALUES ('wh_00000000000000c1', 'http://127.0.0.1:9/', 'whsec_x', '{}')`,
      )
      await insertDeliveries(pool, 'wh_00000000000000c1', ids[0]!, ['2021-03-15T00:00:00Z', '2021-04-15T00:00:00Z'])

      await runMigrations(pool)
      expect(await partitionsOf('builder_code = $1', ['bc_converted'], { table: 'webhook_events', pool })).toEqual([
        { partition: 'webhook_events_p2021_03', n: 2 },
        { partition: 'webhook_events_p2021_04', n: 2 },
      ])
      expect((await readEvents(pool, { after: 0, limit: 10 })).map((e) => e.id)).toEqual(ids.slice(0, 4))
      // The next event's id follows the last one given, not the last one kept: a receiver never sees an id twice.
      expect(await insertEvents(pool, 'bc_converted', ['2021-04-02T00:00:00Z'])).toEqual([ids.at(-1)! + 1])
      // The key holds within a month.
      await expect(
        pool.query(`INSERT INTO webhook_events OVERRIDING SYSTEM VALUE SELECT * FROM webhook_events WHERE id = $1`, [ids[0]]),
      ).rejects.toThrow(/duplicate key/)
      // Delivery records likewise; deleting their subscription still takes them with it.
      expect(await partitionsOf('subscription_id = $1', ['wh_00000000000000c1'], { table: 'webhook_deliveries', pool })).toEqual([
        { partition: 'webhook_deliveries_p2021_03', n: 1 },
        { partition: 'webhook_deliveries_p2021_04', n: 1 },
      ])
      expect(await insertDeliveries(pool, 'wh_00000000000000c1', ids[0]!, ['2021-04-16T00:00:00Z'])).toEqual([3])
      await pool.query(`DELETE FROM webhook_subscriptions`)
      expect(await partitionsOf('subscription_id = $1', ['wh_00000000000000c1'], { table: 'webhook_deliveries', pool })).toEqual([])
    } finally {
      await pool.end()
      await dropDatabase(name)
    }
  })

  it('drops a month whose events are handed out, moving those still owed to an enabled subscription; a month not handed out stays; delivery records go by month', async () => {
    const pool = db.store.pool
    const code = 'bc_event_months'
    // An event of a month with no partition yet lands in webhook_events_default, and moves when its month is made.
    const january = await insertEvents(pool, code, hours('2019-01-10T00:00:00Z', 10))
    expect(await partitionsOf('builder_code = $1', [code], { table: 'webhook_events', pool })).toEqual([
      { partition: 'webhook_events_default', n: 10 },
    ])
    expect(await ensureMonthPartitions(pool, 'webhook_events', new Date('2019-01-15T00:00:00Z'))).toEqual([
      'webhook_events_p2019_01',
      'webhook_events_p2019_02',
      'webhook_events_p2019_03',
    ])
    expect(await ensureMonthPartitions(pool, 'webhook_events', new Date('2019-01-31T00:00:00Z'))).toEqual([])
    const february = await insertEvents(pool, code, hours('2019-02-10T00:00:00Z', 10))
    const march = await insertEvents(pool, code, hours('2019-03-10T00:00:00Z', 5))
    expect(await partitionsOf('builder_code = $1', [code], { table: 'webhook_events', pool })).toEqual([
      { partition: 'webhook_events_p2019_01', n: 10 },
      { partition: 'webhook_events_p2019_02', n: 10 },
      { partition: 'webhook_events_p2019_03', n: 5 },
    ])
    // The dispatcher has handed out January and February; March not yet.
    await pool.query(`UPDATE webhook_cursor SET event_id = $1 WHERE name = 'dispatch'`, [february.at(-1)])
    const [owed, gone] = [january[3]!, january[4]!]
    await pool.query(
      `INSERT INTO webhook_subscriptions (id, url, secret, events, disabled_at) VALUES
         ('wh_00000000000000e1', 'http://127.0.0.1:9/', 'whsec_x', '{attribution.confirmed}', NULL),
         ('wh_00000000000000e2', 'http://127.0.0.1:9/', 'whsec_x', '{attribution.confirmed}', now())`,
    )
    await pool.query(
      `INSERT INTO webhook_outstanding (subscription_id, event_id, tx_hash) VALUES ('wh_00000000000000e1', $1, 'x'), ('wh_00000000000000e2', $2, 'x')`,
      [owed, gone],
    )
    await ensureMonthPartitions(pool, 'webhook_deliveries', new Date('2019-01-15T00:00:00Z'))
    await insertDeliveries(pool, 'wh_00000000000000e1', owed, hours('2019-01-10T00:00:00Z', 3))
    await insertDeliveries(pool, 'wh_00000000000000e1', owed, hours('2019-03-10T00:00:00Z', 2))
    try {
      const pruned = await createDispatcher({ pool, logger: silentLogger, enqueue: async () => {}, retentionDays: 30 }).prune()
      expect(pruned).toEqual({
        events: 19,
        deliveries: 5,
        partitions: [
          'webhook_events_p2019_01',
          'webhook_events_p2019_02',
          'webhook_deliveries_p2019_01',
          'webhook_deliveries_p2019_02',
          'webhook_deliveries_p2019_03',
        ],
        moved: 1,
      })
      // The owed event moved into webhook_events_default, unchanged, and is still delivered; March stays whole.
      expect(await partitionsOf('builder_code = $1', [code], { table: 'webhook_events', pool })).toEqual([
        { partition: 'webhook_events_default', n: 1 },
        { partition: 'webhook_events_p2019_03', n: 5 },
      ])
      expect((await readEvents(pool, { after: 0, limit: 100, filter: { builderCodes: [code] } })).map((e) => e.id)).toEqual([
        owed,
        ...march,
      ])
      expect((await owedEvents(pool, 'wh_00000000000000e1', 10)).map((e) => [e.id, e.createdAt.toISOString()])).toEqual([
        [owed, '2019-01-10T03:00:00.000Z'],
      ])
    } finally {
      await pool.query(`DELETE FROM webhook_subscriptions`)
    }
  })

  it('leaves a month to the batched delete while a long read holds the table, and drops it at the next pass', async () => {
    const pool = db.store.pool
    const code = 'bc_event_held'
    await ensureMonthPartitions(pool, 'webhook_events', new Date('2018-01-15T00:00:00Z'))
    const ids = await insertEvents(pool, code, hours('2018-01-10T00:00:00Z', 4))
    await pool.query(`UPDATE webhook_cursor SET event_id = greatest(event_id, $1) WHERE name = 'dispatch'`, [ids.at(-1)])
    const prune = () => createDispatcher({ pool, logger: silentLogger, enqueue: async () => {}, retentionDays: 30 }).prune()
    // A report's transaction reading webhook_events: the detach's lock on the parent waits for it, so the detach gives up.
    const report = await pool.connect()
    try {
      await report.query('BEGIN')
      await report.query('SELECT count(*) FROM webhook_events')
      const held = await prune()
      expect(held.partitions).not.toContain('webhook_events_p2018_01')
    } finally {
      await report.query('COMMIT')
      report.release()
    }
    // The batched delete took its events meanwhile (row locks only); the empty month goes at the next pass.
    expect(await partitionsOf('builder_code = $1', [code], { table: 'webhook_events' })).toEqual([])
    const next = await prune()
    // (With March 2019 of the test above, handed out now that the cursor has moved past it.)
    expect(next.partitions).toEqual([
      'webhook_events_p2018_01',
      'webhook_events_p2018_02',
      'webhook_events_p2018_03',
      'webhook_events_p2019_03',
    ])
  })
})

describe('attributions partitioned by month', () => {
  const CODE = 'bc_months01'
  const SENDER = `0x${'5e'.repeat(20)}`

  it('converts the attributions of a deployment: every row moved into its month, the rollup and the views as they were', async () => {
    const { name, url } = await createEmptyDatabase()
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    try {
      await migrateBefore(pool, '0036_attributions_partitions')
      const client = await pool.connect()
      await applyDefinitions(client, readDefinitions()).finally(() => client.release())
      // 30 March 2021 + 1…100 hours, a transaction an hour: 47 in March, 53 in April.
      await pool.query(
        `INSERT INTO attributions (chain_id, tx_hash, builder_code, code_index, block_number, block_hash, block_timestamp, from_address,
           sender, schema_id, codes, status, removed)
         SELECT $1, '0x' || md5('t' || b) || md5('u' || b), $2, 0, b, '0x' || md5(b::text) || md5('h' || b),
           timestamptz '2021-03-30' + b * interval '1 hour', $3, $3, 0, ARRAY[$2], 'finalized', b % 10 = 0
         FROM generate_series(1, 100) b`,
        [CHAIN_ID, CODE, SENDER],
      )
      const rollup = async () =>
        (await pool.query(`SELECT * FROM builder_code_buckets WHERE builder_code = $1 ORDER BY bucket, start`, [CODE])).rows
      const daily = async () => (await pool.query(`SELECT * FROM analytics.builder_code_daily ORDER BY day`)).rows
      const before = { rollup: await rollup(), daily: await daily() }
      expect(before.daily.map((row) => row.tx_count)).toEqual([21, 22, 21, 22, 4])

      await runMigrations(pool)
      expect(await partitionsOf('true', [], { table: 'attributions', pool })).toEqual([
        { partition: 'attributions_p2021_03', n: 47 },
        { partition: 'attributions_p2021_04', n: 53 },
      ])
      expect(await rollup()).toEqual(before.rollup)
      expect(await daily()).toEqual(before.daily)
      const { rows: views } = await pool.query(`SELECT count(*)::int AS n FROM analytics.attributed_transactions`)
      expect(views).toEqual([{ n: 100 }])
      // The rollup's triggers are back on the partitioned table: a new row counts.
      await pool.query(
        `INSERT INTO attributions (chain_id, tx_hash, builder_code, code_index, block_number, block_hash, block_timestamp, from_address,
           sender, schema_id, codes, status)
         VALUES ($1, $2, $3, 0, 101, $4, timestamptz '2021-04-03 05:00Z', $5, $5, 0, ARRAY[$3], 'finalized')`,
        [CHAIN_ID, hex(101), CODE, hex(101), SENDER],
      )
      expect((await daily()).map((row) => row.tx_count)).toEqual([21, 22, 21, 22, 5])
    } finally {
      await pool.end()
      await dropDatabase(name)
    }
  })

  /** A transaction attributed to CODE, decoded as a writer that had not seen it stored decodes it. */
  const TX = hex(0xa77)
  const decoded = decodedTransaction(TX, { from: SENDER, hasSuffix: true, schemaId: 0, codes: [CODE] })
  const entry = {
    txHash: TX,
    userOpHash: '',
    builderCode: CODE,
    codeIndex: 0,
    role: null,
    registry: null,
    sender: SENDER,
    schemaId: 0,
    codes: [CODE],
  }
  /** Stores TX and its attribution at `block` and time `time` as the attributor's write does, in the caller's transaction. */
  const storeAt = async (client: pg.PoolClient, block: number, time: string, status: Status) => {
    const position: TransactionPosition = {
      hash: TX,
      blockNumber: block,
      blockHash: hex(block),
      blockTimestamp: Date.parse(time) / 1000,
      transactionIndex: 0,
      status,
    }
    const positions = new Map([[TX, position]])
    const { decodedStored } = await upsertTransactions(client, CHAIN_ID, [decoded], positions, new Map())
    await upsertAttributions(client, CHAIN_ID, [{ ...entry, from: SENDER, to: null }], positions, new Map(), {
      transactionsStored: decodedStored,
    })
  }
  /** Where TX's rows are: its attribution's and its transaction's. */
  const stored = async () =>
    (
      await db.store.pool.query(
        `SELECT tableoid::regclass::text AS partition, block_number::int, status FROM attributions WHERE tx_hash = $1
         UNION ALL SELECT tableoid::regclass::text, block_number::int, status FROM transactions WHERE hash = $1 ORDER BY 1`,
        [TX],
      )
    ).rows
  /** TX's key and the time it names: its transaction row's, after every write (reads by hash look into that month only). */
  const keyTime = async () =>
    (
      await db.store.pool.query(
        `SELECT k.block_timestamp = t.block_timestamp AS "rowTime", to_char(k.block_timestamp AT TIME ZONE 'UTC', 'YYYY_MM') AS month
         FROM transaction_keys k LEFT JOIN transactions t ON t.chain_id = k.chain_id AND t.hash = k.hash WHERE k.hash = $1`,
        [TX],
      )
    ).rows
  const rowsIn = (month: string, block: number, status: Status) => [
    { partition: `attributions_p${month}`, block_number: block, status },
    { partition: `transactions_p${month}`, block_number: block, status },
  ]

  /** Runs `first` in an open transaction, then `second` in another, which waits on the first's locks; commits the first, then the second. */
  const race = async (first: (client: pg.PoolClient) => Promise<unknown>, second: (client: pg.PoolClient) => Promise<unknown>) => {
    const pool = db.store.pool
    const [one, other] = [await pool.connect(), await pool.connect()]
    try {
      await one.query('BEGIN')
      await first(one)
      await other.query('BEGIN')
      const { rows } = await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      const waiting = second(other)
      await waitUntilBlocked(pool, rows[0]!.pid)
      await one.query('COMMIT')
      await waiting
      await other.query('COMMIT')
    } finally {
      one.release()
      other.release()
    }
  }

  it('keeps one row per attribution and per transaction when the transaction moves to another month, also when two writers race', async () => {
    const pool = db.store.pool
    await ensureMonthPartitions(pool, 'attributions', new Date('2026-01-15T00:00:00Z'))
    await ensureMonthPartitions(pool, 'transactions', new Date('2026-01-15T00:00:00Z'))
    // First seen pending at the end of January, then decoded afresh (its writer read it as unknown) in a block in February.
    await withTransaction(pool, (client) => storeAt(client, 10, '2026-01-31T23:59:59Z', 'pending'))
    expect(await stored()).toEqual(rowsIn('2026_01', 10, 'pending'))
    expect(await keyTime()).toEqual([{ rowTime: true, month: '2026_01' }])
    await withTransaction(pool, (client) => storeAt(client, 11, '2026-02-01T00:00:01Z', 'confirmed'))
    expect(await stored()).toEqual(rowsIn('2026_02', 11, 'confirmed'))
    expect(await keyTime()).toEqual([{ rowTime: true, month: '2026_02' }])
    // A stale pre-confirmation of it moves nothing, the key's time included.
    await withTransaction(pool, (client) => storeAt(client, 12, '2026-02-01T00:00:02Z', 'pending'))
    expect(await stored()).toEqual(rowsIn('2026_02', 11, 'confirmed'))
    expect(await keyTime()).toEqual([{ rowTime: true, month: '2026_02' }])

    // Two writers that both decoded it afresh, at once: a reorg moves it back into January while a stale range
    // write holds February. The second waits on the first's key in `transaction_keys`, then moves the rows it stored.
    await pool.query(`DELETE FROM attributions WHERE tx_hash = $1`, [TX])
    await pool.query(`DELETE FROM transactions WHERE hash = $1`, [TX])
    await pool.query(`DELETE FROM transaction_keys WHERE hash = $1`, [TX])
    await race(
      (first) => storeAt(first, 12, '2026-02-01T00:00:03Z', 'confirmed'),
      (second) => storeAt(second, 9, '2026-01-31T23:59:57Z', 'confirmed'),
    )
    expect(await stored()).toEqual(rowsIn('2026_01', 9, 'confirmed'))
    expect(await keyTime()).toEqual([{ rowTime: true, month: '2026_01' }])
    const { rows: buckets } = await pool.query(
      `SELECT start, attributions::int FROM builder_code_buckets WHERE builder_code = $1 AND bucket = 'day' AND attributions > 0`,
      [CODE],
    )
    expect(buckets).toEqual([{ start: new Date('2026-01-31T00:00:00Z'), attributions: 1 }])
  })

  it('a write that only moves the transaction waits for a writer moving it to another month, then moves it again', async () => {
    const pool = db.store.pool
    await ensureMonthPartitions(pool, 'transactions', new Date('2026-03-15T00:00:00Z'), new Date('2026-01-01T00:00:00Z'))
    await ensureMonthPartitions(pool, 'attributions', new Date('2026-03-15T00:00:00Z'), new Date('2026-01-01T00:00:00Z'))
    await withTransaction(pool, (client) => storeAt(client, 20, '2026-02-10T00:00:00Z', 'confirmed'))
    // A range job's write moves it to January; the tip's write, which knows it decoded (a move only), moves it to
    // March meanwhile. The move waits on the key the first writer holds, then finds the row where it went.
    const position: TransactionPosition = {
      hash: TX,
      blockNumber: 22,
      blockHash: hex(22),
      blockTimestamp: at('2026-03-10T00:00:00Z'),
      transactionIndex: 0,
      status: 'confirmed',
    }
    await race(
      (first) => storeAt(first, 21, '2026-01-10T00:00:00Z', 'confirmed'),
      (second) => upsertTransactions(second, CHAIN_ID, [], new Map([[TX, position]]), new Map()),
    )
    expect(await stored()).toEqual(rowsIn('2026_03', 22, 'confirmed'))
    expect(await keyTime()).toEqual([{ rowTime: true, month: '2026_03' }])
  })
})

describe('transactions partitioned by month', () => {
  /** Inserts `n` transactions of chain `chainId` at blocks `first`…, each at time `time`, with their keys, as the writers store them. */
  async function insertTransactions(pool: pg.Pool, chainId: number, first: number, n: number, time: string, status = 'finalized') {
    await pool.query(
      `WITH stored AS (
         INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size,
           has_suffix, status)
         SELECT $1, '0x' || md5('t' || b) || md5('u' || b), b, '0x' || md5(b::text) || md5('h' || b), $3::timestamptz, 0, $4, 100, false, $5
         FROM generate_series($2::int, $2::int + $6::int - 1) b
         RETURNING chain_id, hash, block_timestamp)
       INSERT INTO transaction_keys SELECT chain_id, hash, block_timestamp FROM stored`,
      [chainId, first, time, `0x${'f1'.repeat(20)}`, status, n],
    )
  }
  const txHash = (block: number) =>
    `0x${createHash('md5').update(`t${block}`).digest('hex')}${createHash('md5').update(`u${block}`).digest('hex')}`
  /** Keys without their transaction, transactions without their key, keys naming another time than their row's (none expected). */
  const unmatchedKeys = async (pool: pg.Pool) =>
    (
      await pool.query(
        `SELECT count(*) FILTER (WHERE t.hash IS NULL)::int AS keys, count(*) FILTER (WHERE k.hash IS NULL)::int AS transactions,
           count(*) FILTER (WHERE k.block_timestamp <> t.block_timestamp)::int AS "otherTime"
         FROM transaction_keys k FULL JOIN transactions t ON t.chain_id = k.chain_id AND t.hash = k.hash`,
      )
    ).rows[0]

  it('converts the transactions of a deployment: every row moved into its month with its key, and a writer moves a converted one', async () => {
    const { name, url } = await createEmptyDatabase()
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    try {
      await migrateBefore(pool, '0037_transactions_partitions')
      // 30 March 2021 + 1…100 hours, a transaction an hour: 47 in March, 53 in April.
      await pool.query(
        `INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size,
           has_suffix, status, gas_used)
         SELECT $1, '0x' || md5('t' || b) || md5('u' || b), b, '0x' || md5(b::text) || md5('h' || b), timestamptz '2021-03-30' + b * interval '1 hour',
           0, $2, 100, false, 'finalized', 21000
         FROM generate_series(1, 100) b`,
        [CHAIN_ID, `0x${'f1'.repeat(20)}`],
      )
      await runMigrations(pool)
      expect(await partitionsOf('true', [], { table: 'transactions', pool })).toEqual([
        { partition: 'transactions_p2021_03', n: 47 },
        { partition: 'transactions_p2021_04', n: 53 },
      ])
      expect(await unmatchedKeys(pool)).toEqual({ keys: 0, transactions: 0, otherTime: 0 })
      // A writer that had not seen transaction 5 stored (a range job decoding it afresh) after a reorg that put it in
      // April: the converted row moves there, it is not stored twice.
      const position: TransactionPosition = {
        hash: txHash(5),
        blockNumber: 1_000,
        blockHash: hex(1_000),
        blockTimestamp: at('2021-04-20T00:00:00Z'),
        transactionIndex: 3,
        status: 'confirmed',
      }
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const { decodedStored } = await upsertTransactions(
          client,
          CHAIN_ID,
          [decodedTransaction(txHash(5))],
          new Map([[txHash(5), position]]),
          new Map(),
        )
        await client.query('COMMIT')
        expect(decodedStored).toBe(true)
      } finally {
        client.release()
      }
      const { rows } = await pool.query(
        `SELECT tableoid::regclass::text AS partition, block_number::int, transaction_index, status, gas_used::int FROM transactions WHERE hash = $1`,
        [txHash(5)],
      )
      expect(rows).toEqual([
        { partition: 'transactions_p2021_04', block_number: 1_000, transaction_index: 3, status: 'confirmed', gas_used: 21000 },
      ])
      expect(await unmatchedKeys(pool)).toEqual({ keys: 0, transactions: 0, otherTime: 0 })
    } finally {
      await pool.end()
      await dropDatabase(name)
    }
  })

  it('retention drops a month of transactions, moving the attributed ones to transactions_default with their keys, and deletes the keys of the rest', async () => {
    const pool = db.store.pool
    const chainId = 7_000
    await ensureMonthPartitions(pool, 'transactions', new Date('2019-05-15T00:00:00Z'), new Date('2019-01-01T00:00:00Z'))
    await pool.query(`INSERT INTO chain_state (chain_id, finalized_block) VALUES ($1, 10000)`, [chainId])
    // January: 20 finalized. Goes.
    await insertTransactions(pool, chainId, 100, 20, '2019-01-10T00:00:00Z')
    // February: 20 finalized, one of them attributed. Goes; the attributed one moves with its key.
    await insertTransactions(pool, chainId, 200, 20, '2019-02-10T00:00:00Z')
    await pool.query(
      `INSERT INTO attributions (chain_id, tx_hash, builder_code, code_index, block_number, block_hash, block_timestamp, from_address, sender,
         schema_id, codes, status)
       VALUES ($1, $2, 'bc_kept', 0, 205, $3, '2019-02-10T00:00:00Z', $4, $4, 0, ARRAY['bc_kept'], 'finalized')`,
      [chainId, txHash(205), hex(205), `0x${'f1'.repeat(20)}`],
    )
    // March: one transaction not finalized yet. Stays whole.
    await insertTransactions(pool, chainId, 300, 20, '2019-03-10T00:00:00Z')
    await insertTransactions(pool, chainId, 2_000, 1, '2019-03-11T00:00:00Z', 'confirmed')

    const pruned = await pruneRawHistory(pool, chainId, new Date('2019-06-01T00:00:00Z'))
    expect(pruned.partitions.filter((partition) => partition.startsWith('transactions_'))).toEqual([
      'transactions_p2019_01',
      'transactions_p2019_02',
      'transactions_p2019_04',
      'transactions_p2019_05',
    ])
    // 20 + 19 by the drops, March's 20 finalized by the batched delete.
    expect(pruned.transactions).toBe(20 + 19 + 20)
    expect(await partitionsOf('chain_id = $1', [chainId], { table: 'transactions' })).toEqual([
      { partition: 'transactions_default', n: 1 },
      { partition: 'transactions_p2019_03', n: 1 },
    ])
    expect((await pool.query(`SELECT hash FROM transactions_default WHERE chain_id = $1`, [chainId])).rows).toEqual([{ hash: txHash(205) }])
    // Every key left has its transaction, and every transaction its key: a transaction stored again later is new.
    expect(await unmatchedKeys(pool)).toEqual({ keys: 0, transactions: 0, otherTime: 0 })
    expect((await pool.query(`SELECT count(*)::int AS n FROM transaction_keys WHERE chain_id = $1`, [chainId])).rows).toEqual([{ n: 2 }])
  })
})
