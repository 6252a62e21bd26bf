import { drizzle } from 'drizzle-orm/node-postgres'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builderCodeStatsReport, leaderboard, listAttributions, roundToBuckets } from '../src/store/reads/attributions.js'
import { countWalletAttributions, findBuilderCode, findBuilderCodeByWallet } from '../src/store/reads/builderCodes.js'
import { getIndexedHead } from '../src/store/reads/health.js'
import { listLogs } from '../src/store/reads/logs.js'
import { getSyncStatus, openRepairsIn, PENDING_RATE_WINDOW_SECONDS } from '../src/store/reads/status.js'
import { getTransactionAttribution } from '../src/store/reads/transactions.js'
import {
  createStore,
  ensureMonthPartitions,
  latestEventId,
  listDeliveries,
  owedEvents,
  readEvents,
  schema,
  type Database,
} from '../src/store/index.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 8453
const OTHER_CHAIN_ID = 10
/** Tables that grow with history or with registrations: a plan may reach them only through an index. */
const LARGE = new Set([
  'builder_codes',
  'logs',
  'transactions',
  'attributions',
  'builder_code_buckets',
  'builder_code_role_buckets',
  'builder_code_bucket_senders',
  'builder_code_senders',
  'webhook_events',
  'webhook_deliveries',
])
const LOGS = 200_000
const ATTRIBUTIONS = 120_000
const OTHER_ATTRIBUTIONS = 30_000
const EVENTS = 60_000
/** Codes nobody has used; with the 500 used, as many as a join's generic plan hashed whole rather than looked up. */
const IDLE_CODES = 500
const T0 = Date.UTC(2026, 9, 1) / 1000

let db: TestDatabase
/** The statements the API queries ran since the last `take()`, each with its values and its plan for them. */
let plans: { text: string; values: readonly unknown[]; plan: unknown }[] = []
let explained: Database
/** The same pool as `explained`, for the reads that take a pool: the stream's and delivery's. */
let explainedPool: pg.Pool
let seededPartitions = new Set<string>()

const hash = (expression: string) => `'0x' || md5(${expression}) || md5('x' || ${expression})`

beforeAll(async () => {
  db = await createTestDatabase()
  const pool = db.store.pool
  // Logs span October to December 2026, a partition each.
  await ensureMonthPartitions(pool, 'logs', new Date(T0 * 1000))
  await pool.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
       address, topic0, topic1, topic2, topic3, data, status)
     SELECT ${CHAIN_ID}, i / 20, ${hash('(i / 20)::text')}, to_timestamp(${T0} + i * 30), ${hash('(i / 2)::text')}, i % 20, i % 20, i % 2,
       '0x' || lpad(to_hex(i % 300), 40, '0'), '0x' || lpad(to_hex(i % 40), 64, '0'), ${hash('(i % 5000)::text')},
       ${hash('(i % 7000)::text')}, CASE WHEN i % 3 = 0 THEN '0x' || lpad(to_hex(i % 9000), 64, '0') END, '0x',
       CASE WHEN i > ${LOGS - 200} THEN 'confirmed' ELSE 'finalized' END
     FROM generate_series(1, ${LOGS}) i`,
  )
  // Attributions and their transactions over the same months, a partition each.
  await ensureMonthPartitions(pool, 'transactions', new Date(T0 * 1000))
  await pool.query(
    `INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix, status)
     SELECT ${CHAIN_ID}, ${hash('i::text')}, i / 10, ${hash('(i / 10)::text')}, to_timestamp(${T0} + i * 60), i % 10, '0x' || lpad(to_hex(i % 1000), 40, '0'), 100, true, 'finalized'
     FROM generate_series(1, ${ATTRIBUTIONS}) i`,
  )
  await ensureMonthPartitions(pool, 'attributions', new Date(T0 * 1000))
  await pool.query(
    `INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, role, code_index, block_number, block_hash, block_timestamp,
       from_address, sender, schema_id, codes, gas_used, status)
     SELECT ${CHAIN_ID}, ${hash('i::text')}, '', 'code_' || (i % 500), (ARRAY['', 'app', 'wallet', 'service'])[1 + i % 4], 0, i / 10, ${hash('(i / 10)::text')},
       to_timestamp(${T0} + i * 60), '0x' || lpad(to_hex(i % 1000), 40, '0'), '0x' || lpad(to_hex(i % 1000), 40, '0'), 2, ARRAY['code_' || (i % 500)], 21000,
       'finalized'
     FROM generate_series(1, ${ATTRIBUTIONS}) i`,
  )
  await pool.query(
    `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source)
     SELECT ${CHAIN_ID}, 'code_' || i, '0x' || lpad(to_hex(i + 65536), 40, '0'), 'local' FROM generate_series(0, 499) i`,
  )
  // Codes registered by wallets that have not transacted (yet): the codes grow with registrations, not with attributions.
  await pool.query(
    `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source)
     SELECT ${CHAIN_ID}, 'idle_' || i, '0x' || lpad(to_hex(i + 1048576), 40, '0'), 'local' FROM generate_series(0, ${IDLE_CODES - 1}) i`,
  )
  // A second chain's attributions, for the reads across chains.
  await pool.query(
    `INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix, status)
     SELECT ${OTHER_CHAIN_ID}, ${hash('i::text')}, i / 10, ${hash('(i / 10)::text')}, to_timestamp(${T0} + i * 240), i % 10, '0x' || lpad(to_hex(i % 1000), 40, '0'), 100, true, 'finalized'
     FROM generate_series(1, ${OTHER_ATTRIBUTIONS}) i`,
  )
  await pool.query(
    `INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, role, code_index, block_number, block_hash, block_timestamp,
       from_address, sender, schema_id, codes, gas_used, status)
     SELECT ${OTHER_CHAIN_ID}, ${hash('i::text')}, '', 'code_' || (i % 300), '', 0, i / 10, ${hash('(i / 10)::text')},
       to_timestamp(${T0} + i * 240), '0x' || lpad(to_hex(i % 700), 40, '0'), '0x' || lpad(to_hex(i % 700), 40, '0'), 0, ARRAY['code_' || (i % 300)], 21000,
       'finalized'
     FROM generate_series(1, ${OTHER_ATTRIBUTIONS}) i`,
  )
  await pool.query(`INSERT INTO transaction_keys SELECT chain_id, hash, block_timestamp FROM transactions`)
  // Published webhook events over the same months, a partition each.
  await ensureMonthPartitions(pool, 'webhook_events', new Date(T0 * 1000))
  await pool.query(
    `INSERT INTO webhook_events (type, chain_id, tx_hash, user_op_hash, builder_code, sender, block_number, block_timestamp, status, removed, created_at)
     SELECT 'attribution.confirmed', ${CHAIN_ID}, ${hash('i::text')}, '', 'code_' || (i % 500), '0x', i / 10, to_timestamp(${T0} + i * 120),
       'confirmed', false, to_timestamp(${T0} + i * 120)
     FROM generate_series(1, ${EVENTS}) i`,
  )
  await pool.query(
    `INSERT INTO webhook_subscriptions (id, url, secret, events) VALUES ('wh_00000000000000f1', 'http://127.0.0.1:9/', 'whsec_x', '{}')`,
  )
  await pool.query(
    `INSERT INTO webhook_outstanding (subscription_id, event_id, tx_hash) SELECT 'wh_00000000000000f1', id, tx_hash FROM webhook_events WHERE id % 1000 = 0`,
  )
  await ensureMonthPartitions(pool, 'webhook_deliveries', new Date(T0 * 1000))
  await pool.query(
    `INSERT INTO webhook_deliveries (subscription_id, event_id, ok, duration_ms, created_at)
     SELECT 'wh_00000000000000f1', id, true, 1, created_at FROM webhook_events`,
  )
  await pool.query('ANALYZE')
  // The partitions that hold the seeded history (a scan of an empty one, ahead or the default, costs nothing).
  const { rows: seeded } = await pool.query<{ relname: string }>(
    `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent IN ('logs'::regclass, 'attributions'::regclass, 'transactions'::regclass, 'webhook_events'::regclass,
       'webhook_deliveries'::regclass)
       AND c.reltuples > 0`,
  )
  seededPartitions = new Set(seeded.map((row) => row.relname))
  expect([...seededPartitions].sort()).toEqual([
    'attributions_p2026_10',
    'attributions_p2026_11',
    'attributions_p2026_12',
    'logs_p2026_10',
    'logs_p2026_11',
    'logs_p2026_12',
    'transactions_p2026_10',
    'transactions_p2026_11',
    'transactions_p2026_12',
    'webhook_deliveries_p2026_10',
    'webhook_deliveries_p2026_11',
    'webhook_deliveries_p2026_12',
    'webhook_events_p2026_10',
    'webhook_events_p2026_11',
    'webhook_events_p2026_12',
  ])
  const real = db.store.pool
  const proxy = new Proxy(real, {
    get(target, property) {
      if (property === 'query')
        return async (config: string | pg.QueryConfig, values?: unknown[]) => {
          const text = typeof config === 'string' ? config : config.text
          const parameters = typeof config === 'string' ? values : (config.values ?? values)
          plans.push({ text, values: parameters ?? [], plan: await genericPlan(target, text, parameters ?? []) })
          return target.query(config as pg.QueryConfig, values)
        }
      const value = Reflect.get(target, property, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  explained = drizzle(proxy, { schema }) as unknown as Database
  explainedPool = proxy
}, 600_000)

afterAll(async () => {
  await db?.drop()
})

/** A value as an SQL literal: `EXECUTE` takes its arguments in the statement's text. */
function literal(client: pg.PoolClient, value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  if (Array.isArray(value))
    return client.escapeLiteral(`{${value.map((item) => `"${String(item).replaceAll(/["\\]/g, '\\$&')}"`).join(',')}}`)
  return client.escapeLiteral(value instanceof Date ? value.toISOString() : String(value))
}

/**
 * The plan the API runs a statement by: its connections plan each prepared statement once, whatever
 * the values (`genericPlans` of createStore), so the plan checked is the generic one, not one made for
 * the values at hand.
 */
async function genericPlan(pool: pg.Pool, text: string, values: readonly unknown[], { analyze = false } = {}): Promise<unknown> {
  const client = await pool.connect()
  try {
    await client.query('SET plan_cache_mode = force_generic_plan')
    await client.query(`PREPARE explained AS ${text}`)
    const args = values.length > 0 ? `(${values.map((value) => literal(client, value)).join(', ')})` : ''
    const { rows } = await client.query(`EXPLAIN (${analyze ? 'ANALYZE, ' : ''}FORMAT JSON) EXECUTE explained${args}`)
    await client.query('DEALLOCATE explained')
    await client.query('RESET plan_cache_mode')
    return rows[0]['QUERY PLAN']
  } finally {
    client.release()
  }
}

type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: PlanNode[] }

function* nodes(node: PlanNode): Generator<PlanNode> {
  yield node
  for (const child of node.Plans ?? []) yield* nodes(child)
}

/** Runs `run` and returns the large tables its statements read by a sequential scan (none expected). */
async function sequentialScans(run: () => Promise<unknown>): Promise<string[]> {
  plans = []
  await run()
  expect(plans.length).toBeGreaterThan(0)
  return plans.flatMap(({ plan }) =>
    [...nodes((plan as [{ Plan: PlanNode }])[0].Plan)]
      .filter(
        (node) =>
          node['Node Type'] === 'Seq Scan' && (LARGE.has(node['Relation Name'] ?? '') || seededPartitions.has(node['Relation Name'] ?? '')),
      )
      .map((node) => node['Relation Name']!),
  )
}

/**
 * The partitions of the month-partitioned `table` that a plan reads; with `ran`, of a plan run (`ANALYZE`), those
 * it scanned at least once (a partition pruned at run time is in the plan, never scanned).
 */
function partitionsIn(plan: unknown, table: 'logs' | 'attributions' | 'transactions', { ran = false } = {}): string[] {
  const partition = new RegExp(`^${table}_(p\\d{4}_\\d{2}|default)$`)
  const read = [...nodes((plan as [{ Plan: PlanNode }])[0].Plan)]
    .filter((node) => !ran || (node['Actual Loops'] ?? 0) > 0)
    .map((node) => node['Relation Name'] ?? '')
    .filter((relation) => partition.test(relation))
  return [...new Set(read)].sort()
}

/** The partitions of `table` a statement's plan reads. */
async function partitionsRead(table: 'logs' | 'attributions', text: string, values: unknown[]): Promise<string[]> {
  const { rows } = await db.store.pool.query({ text: `EXPLAIN (FORMAT JSON) ${text}`, values })
  return partitionsIn(rows[0]['QUERY PLAN'], table)
}

describe('API query plans on a seeded database with statistics', () => {
  const someAddress = `0x${'7'.padStart(40, '0')}`
  const someTopic0 = `0x${'5'.padStart(64, '0')}`
  const page = { chainId: CHAIN_ID, topics: [], includeRemoved: false, limit: 100 }
  const logFilters: [string, () => Promise<Parameters<typeof listLogs>[1]>][] = [
    ['address', async () => ({ ...page, addresses: [someAddress] })],
    ['topic0', async () => ({ ...page, topics: [[someTopic0]] })],
    ['no filter', async () => page],
    ['no filter, removed rows included', async () => ({ ...page, includeRemoved: true })],
    [
      'no filter, a cursor deep in history',
      async () => ({ ...page, after: [9_000, 3, `0x${'0'.repeat(64)}`, `0x${'0'.repeat(64)}`, 0] as const }),
    ],
    ['block range', async () => ({ ...page, fromBlock: 5_000, toBlock: 6_000 })],
    ['status pending', async () => ({ ...page, statuses: ['pending' as const] })],
    ['status confirmed and a block range', async () => ({ ...page, statuses: ['confirmed' as const], fromBlock: 9_000, toBlock: 9_100 })],
    ['address and topic1', async () => ({ ...page, addresses: [someAddress], topics: [undefined, [`0x${'1'.padStart(64, '0')}`]] })],
    [
      'topic0 and topic3, removed rows included',
      async () => ({ ...page, includeRemoved: true, topics: [[someTopic0], undefined, undefined, [`0x${'3'.padStart(64, '0')}`]] }),
    ],
  ]
  for (const [name, parameters] of logFilters)
    it(`GET /v1/logs by ${name} reads logs through an index`, async () => {
      const given = await parameters()
      expect(await sequentialScans(() => listLogs(explained, given))).toEqual([])
    })

  it('the status counts the pre-confirmed logs of the last seconds: pending, dropped and claimed, in unfinalized blocks', async () => {
    const chain = 777
    await db.store.pool.query(`INSERT INTO chain_state (chain_id, finalized_block, preconfirmations) VALUES ($1, 100, true)`, [chain])
    const log = (n: number, block: number, status: string, removed: boolean, seen: string, updated: string) =>
      db.store.pool.query(
        `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
           address, data, status, removed, seen_at, updated_at)
         VALUES ($1, $2, $3, now(), $4, 0, $5, 0, $6, '0x', $7, $8, now() - $9::interval, now() - $10::interval)`,
        [
          chain,
          block,
          status === 'pending' ? `0x${'0'.repeat(64)}` : `0x${'b'.repeat(64)}`,
          `0x${n.toString(16).padStart(64, '0')}`,
          n,
          someAddress,
          status,
          removed,
          seen,
          updated,
        ],
      )
    await log(1, 101, 'pending', false, '1 s', '1 s') // pending
    await log(2, 102, 'pending', false, '2 s', '2 s') // pending
    await log(3, 102, 'pending', true, '3 s', '1 s') // dropped
    await log(4, 103, 'confirmed', false, '4 s', '1 s') // claimed by its block
    await log(5, 103, 'confirmed', false, '4 s', '4 s') // stored confirmed: not pre-confirmed
    await log(6, 100, 'finalized', false, '4 s', '1 s') // claimed, but finalized since
    await log(7, 104, 'pending', false, '1 min', '1 min') // seen before the window
    try {
      expect((await getSyncStatus(db.store.db, chain)).pendingLogsPerSecond).toBe(4 / PENDING_RATE_WINDOW_SECONDS)
    } finally {
      await db.store.pool.query(`DELETE FROM logs WHERE chain_id = $1`, [chain])
      await db.store.pool.query(`DELETE FROM chain_state WHERE chain_id = $1`, [chain])
    }
  })

  it('the log list, the transaction route, the code and wallet routes and the status prepare their statements once per connection and plan them once (defect: planned on every request)', async () => {
    // One connection as the API opens them. Planned afresh, a statement over every month of logs cost 3.7–4.8 ms
    // of backend CPU per request against 0.4–0.5 ms prepared (eighteen months).
    const api = createStore({ databaseUrl: db.url, max: 1, genericPlans: true, utcSessions: true })
    try {
      const { rows } = await db.store.pool.query(`SELECT hash FROM transactions WHERE chain_id = $1 LIMIT 3`, [CHAIN_ID])
      for (const [i, { hash }] of rows.entries()) {
        await listLogs(api.db, { ...page, limit: 10 + i })
        await listLogs(api.db, { ...page, topics: [[someTopic0, `0x${String(i).padStart(64, '0')}`]], limit: 10 + i })
        expect((await getTransactionAttribution(api.db, CHAIN_ID, hash))?.transaction.hash).toBe(hash)
        expect((await getSyncStatus(api.db, CHAIN_ID)).reorgsLastHour).toBe(0)
        const wallet = `0x${(i + 65536).toString(16).padStart(40, '0')}`
        expect((await findBuilderCodeByWallet(api.db, CHAIN_ID, wallet))?.builderCode).toBe(`code_${i}`)
        expect(
          (await countWalletAttributions(api.db, { chainId: CHAIN_ID, walletAddress: wallet, builderCode: `code_${i}` })).pending,
        ).toBe(0)
        expect((await findBuilderCode(api.db, CHAIN_ID, `code_${i}`))?.walletAddress).toBe(wallet)
      }
      const { rows: prepared } = await api.pool.query<{ reads: string; plans: number }>(
        `SELECT CASE WHEN statement LIKE '%from "logs"%' THEN 'logs' WHEN statement LIKE '%from transactions t%' THEN 'transaction'
           WHEN statement LIKE '%from chain_state%' OR statement LIKE '%join chain_state%' THEN 'status'
           WHEN statement LIKE '%registry_codes%' THEN 'code' WHEN statement LIKE '%from builder_codes where%' THEN 'code of a wallet'
           WHEN statement LIKE '%sender = $%' THEN 'wallet attributions' END AS reads,
           generic_plans::int AS plans
         FROM pg_prepared_statements ORDER BY 1, 2`,
      )
      // The unfiltered list's canonical and pending parts, the list by topic0, the status, the transaction, the code and the
      // wallet route's two reads: each run three times.
      expect(prepared).toEqual([
        { reads: 'code', plans: 3 },
        { reads: 'code of a wallet', plans: 3 },
        { reads: 'logs', plans: 3 },
        { reads: 'logs', plans: 3 },
        { reads: 'logs', plans: 3 },
        { reads: 'status', plans: 3 },
        { reads: 'transaction', plans: 3 },
        { reads: 'wallet attributions', plans: 3 },
      ])
    } finally {
      await api.close()
    }
  })

  it('a log read bounded in time reads only the partitions of its months, through their indexes', async () => {
    const november = [new Date(Date.UTC(2026, 10, 3)), new Date(Date.UTC(2026, 10, 4))]
    const byTime = `SELECT count(*) FROM analytics.logs WHERE chain_id = $1 AND block_timestamp >= $2 AND block_timestamp < $3`
    expect(await partitionsRead('logs', byTime, [CHAIN_ID, ...november])).toEqual(['logs_p2026_11'])
    const byAddressAndTime = `SELECT * FROM analytics.logs WHERE chain_id = $1 AND address = $2 AND block_timestamp >= $3 AND block_timestamp < $4
      ORDER BY block_number LIMIT 100`
    expect(await partitionsRead('logs', byAddressAndTime, [CHAIN_ID, someAddress, ...november])).toEqual(['logs_p2026_11'])
    // Without a time bound every month is read, each through its index (the list tests above: no sequential scan).
    expect(
      await partitionsRead('logs', `SELECT * FROM logs WHERE chain_id = $1 AND address = $2 ORDER BY block_number LIMIT 100`, [
        CHAIN_ID,
        someAddress,
      ]),
    ).toEqual(expect.arrayContaining(['logs_default', 'logs_p2026_10', 'logs_p2026_11', 'logs_p2026_12']))
  })

  it('an attribution read bounded in time reads only the partitions of its months: the SQL views, and the list by the values it runs with', async () => {
    const november = [new Date(Date.UTC(2026, 10, 3)), new Date(Date.UTC(2026, 10, 4))]
    const byTime = `SELECT count(*) FROM analytics.attributed_transactions WHERE chain_id = $1 AND block_timestamp >= $2 AND block_timestamp < $3`
    expect(await partitionsRead('attributions', byTime, [CHAIN_ID, ...november])).toEqual(['attributions_p2026_11'])
    const byCodeAndTime = `SELECT builder_code, count(DISTINCT sender) FROM analytics.attributed_transactions
      WHERE chain_id = $1 AND builder_code = $2 AND block_timestamp >= $3 AND block_timestamp < $4 GROUP BY 1`
    expect(await partitionsRead('attributions', byCodeAndTime, [CHAIN_ID, 'code_7', ...november])).toEqual(['attributions_p2026_11'])
    // The API plans a statement once for every value (a generic plan); its months are pruned as it starts.
    plans = []
    await listAttributions(explained, { chainId: CHAIN_ID, since: november[0], until: november[1], includeRemoved: false, limit: 100 })
    const list = plans.find(({ text }) => text.includes('"attributions"'))!
    // Each read of the partitioned table (the page's, and the seeks for the first and last block in the range) and
    // the months it keeps: the page's keeps November alone.
    const appends = [...nodes((list.plan as [{ Plan: PlanNode }])[0].Plan)].filter((node) => 'Subplans Removed' in node)
    const kept = appends.map((node) => partitionsIn([{ Plan: node }], 'attributions'))
    expect(kept).toContainEqual(['attributions_p2026_11'])
    expect(kept.every((months) => months.length < 5)).toBe(true)
  })

  it('the attribution list reads its months newest first and stops where the page is full: older months are never read', async () => {
    const [october, november, december] = ['attributions_p2026_10', 'attributions_p2026_11', 'attributions_p2026_12']
    // The filters, and the months each of the first two pages reads (a page is 100 rows).
    const cases: [Omit<Parameters<typeof listAttributions>[1], 'chainId' | 'includeRemoved' | 'limit'>, string[], string[]][] = [
      [{}, [december], [december]],
      [{ role: 'wallet' }, [december], [december]],
      // code_7 has a row every 500 minutes: a hundred of them reach back five weeks.
      [{ builderCode: 'code_7' }, [november, december], [october, november]],
      [{ walletAddress: `0x${(7 + 65536).toString(16).padStart(40, '0')}` }, [november, december], [october, november]],
    ]
    for (const [given, ...monthsRead] of cases) {
      plans = []
      const first = await listAttributions(explained, { chainId: CHAIN_ID, includeRemoved: false, limit: 100, ...given })
      const end = first.end!
      const next = await listAttributions(explained, {
        chainId: CHAIN_ID,
        includeRemoved: false,
        limit: 100,
        ...given,
        after: end.key,
        afterTime: end.time,
      })
      expect(next.end!.time <= end.time).toBe(true)
      const pages = plans.filter(({ text }) => text.includes('"attributions"'))
      expect(pages).toHaveLength(2)
      for (const [index, { text, values, plan }] of pages.entries()) {
        // The months are scanned one after another by an Append, never merged: a Merge Append starts a scan in every
        // month. (The next page's plan holds no month after its cursor's: pruned as it starts.)
        const monthsUnder = (node: PlanNode) =>
          (node.Plans ?? []).filter((child) => /^attributions_p\d{4}_\d{2}$/.test(child['Relation Name'] ?? ''))
        const appends = [...nodes((plan as [{ Plan: PlanNode }])[0].Plan)].filter((node) => monthsUnder(node).length > 0)
        expect(appends.map((node) => node['Node Type'])).toEqual(['Append'])
        expect(monthsUnder(appends[0]!).length).toBeGreaterThan(1)
        const analyzed = (await genericPlan(db.store.pool, text, values, { analyze: true })) as [{ Plan: PlanNode }]
        const read = [...nodes(analyzed[0].Plan)]
          .filter((node) => seededPartitions.has(node['Relation Name'] ?? '') && (node['Actual Loops'] ?? 0) > 0)
          .map((node) => node['Relation Name']!)
        expect([...new Set(read)].sort(), `${JSON.stringify(given)}, page ${index + 1}`).toEqual(monthsRead[index])
      }
    }
  })

  const attributionFilters: [string, Omit<Parameters<typeof listAttributions>[1], 'chainId' | 'includeRemoved' | 'limit'>][] = [
    ['no filter', {}],
    ['builderCode', { builderCode: 'code_7' }],
    ['walletAddress', { walletAddress: `0x${(7 + 65536).toString(16).padStart(40, '0')}` }],
    ['role', { role: 'wallet' }],
    ['a missing code and a role', { builderCode: 'code_none', role: 'app' }],
    ['since and until', { since: new Date((T0 + 1000) * 1000), until: new Date((T0 + 2000) * 1000) }],
    ['block range', { fromBlock: 100, toBlock: 200 }],
    ['status', { statuses: ['pending'] }],
  ]
  for (const [name, given] of attributionFilters)
    it(`GET /v1/attributions by ${name} reads attributions through an index`, async () => {
      expect(
        await sequentialScans(() => listAttributions(explained, { chainId: CHAIN_ID, includeRemoved: false, limit: 100, ...given })),
      ).toEqual([])
    })

  it('the stats, the leaderboard, a code, a transaction, the head and the repairs read through indexes and rollups', async () => {
    for (const interval of ['hour', 'day'] as const) {
      const { since, until } = roundToBuckets(interval, new Date(T0 * 1000), new Date((T0 + 30 * 86_400) * 1000))
      expect(
        await sequentialScans(() =>
          builderCodeStatsReport(explained, { chainId: CHAIN_ID, builderCode: 'code_3', interval, since, until }),
        ),
      ).toEqual([])
    }
    const { since, until } = roundToBuckets('hour', new Date(T0 * 1000), new Date((T0 + 86_400) * 1000))
    expect(await sequentialScans(() => leaderboard(explained, { chainId: CHAIN_ID, since, until, limit: 20 }))).toEqual([])
    expect(await sequentialScans(() => findBuilderCode(explained, CHAIN_ID, 'code_3'))).toEqual([])
    expect(
      await sequentialScans(() => findBuilderCodeByWallet(explained, CHAIN_ID, `0x${(3 + 65536).toString(16).padStart(40, '0')}`)),
    ).toEqual([])
    const { rows } = await db.store.pool.query(`SELECT hash FROM transactions LIMIT 1`)
    expect(await sequentialScans(() => getTransactionAttribution(explained, CHAIN_ID, rows[0].hash))).toEqual([])
    expect(await sequentialScans(() => getIndexedHead(explained, CHAIN_ID))).toEqual([])
    // The status as the follower leaves the chain: finality 64 blocks below its head, pre-confirmations probed.
    await db.store.pool.query(
      `INSERT INTO chain_state (chain_id, head_block, live_block, finalized_block, preconfirmations)
       SELECT $1, max(block_number), max(block_number), max(block_number) - 64, true FROM logs WHERE chain_id = $1`,
      [CHAIN_ID],
    )
    expect(await sequentialScans(() => getSyncStatus(explained, CHAIN_ID))).toEqual([])
    await db.store.pool.query(`DELETE FROM chain_state WHERE chain_id = $1`, [CHAIN_ID])
    expect(await sequentialScans(() => openRepairsIn(explained, CHAIN_ID, 0, 10_000))).toEqual([])
  })

  it('a transaction read by hash looks into the one month its key names, in transactions and in attributions', async () => {
    const { rows } = await db.store.pool.query(
      `SELECT hash, to_char(block_timestamp AT TIME ZONE 'UTC', '"p"YYYY_MM') AS month FROM transactions
       WHERE chain_id = $1 ORDER BY block_timestamp LIMIT 1 OFFSET 50000`,
      [CHAIN_ID],
    )
    const { hash: stored, month } = rows[0] as { hash: string; month: string }
    plans = []
    const found = await getTransactionAttribution(explained, CHAIN_ID, stored)
    expect(found?.transaction.hash).toBe(stored)
    expect(found?.matches).toHaveLength(1)
    // One statement, run under its generic plan: the months it scans (a month pruned at run time scans nothing).
    expect(plans).toHaveLength(1)
    const plan = await genericPlan(db.store.pool, plans[0]!.text, plans[0]!.values, { analyze: true })
    expect(partitionsIn(plan, 'transactions', { ran: true })).toEqual([`transactions_${month}`])
    expect(partitionsIn(plan, 'attributions', { ran: true })).toEqual([`attributions_${month}`])
  })

  it('the stats and the leaderboard across chains read through indexes and rollups', async () => {
    const chains = [CHAIN_ID, OTHER_CHAIN_ID]
    for (const [interval, days] of [
      ['hour', 1],
      ['day', 30],
      ['day', 400],
    ] as const) {
      const { since, until } = roundToBuckets(interval, new Date(T0 * 1000), new Date((T0 + days * 86_400) * 1000))
      expect(
        await sequentialScans(() => builderCodeStatsReport(explained, { chainId: chains, builderCode: 'code_3', interval, since, until })),
      ).toEqual([])
    }
    const { since, until } = roundToBuckets('hour', new Date(T0 * 1000), new Date((T0 + 86_400) * 1000))
    expect(await sequentialScans(() => leaderboard(explained, { chainId: chains, since, until, limit: 20 }))).toEqual([])
  })

  it("analytics.builder_code_daily reads a range of days from the rollup's day buckets through an index, never the attributions", async () => {
    // The last two weeks of the seeded history, as the analytics guide's first query asks.
    const { rows } = await db.store.pool.query({
      text: `EXPLAIN (FORMAT JSON) SELECT * FROM analytics.builder_code_daily WHERE chain_id = $1 AND day >= $2 ORDER BY day DESC, tx_count DESC`,
      values: [CHAIN_ID, '2026-12-10'],
    })
    const read = [...nodes((rows[0]['QUERY PLAN'] as [{ Plan: PlanNode }])[0].Plan)]
      .filter((node) => node['Relation Name'] !== undefined)
      .map((node) => `${node['Node Type']} ${node['Relation Name']}`)
    expect(read).toEqual([expect.stringMatching(/^(Index|Index Only|Bitmap Heap) Scan builder_code_buckets$/)])
  })

  it("the stream, a subscription's owed events and deliveries, and the newest event id read the webhook tables through their partitions' indexes", async () => {
    expect(await sequentialScans(() => readEvents(explainedPool, { after: 0, limit: 100 }))).toEqual([])
    expect(
      await sequentialScans(() => readEvents(explainedPool, { after: EVENTS - 500, limit: 100, filter: { builderCodes: ['code_3'] } })),
    ).toEqual([])
    expect(await sequentialScans(() => owedEvents(explainedPool, 'wh_00000000000000f1', 100))).toEqual([])
    expect(await sequentialScans(() => latestEventId(explainedPool))).toEqual([])
    expect(await sequentialScans(() => listDeliveries(explainedPool, 'wh_00000000000000f1', 50))).toEqual([])
  })
})
