import fc from 'fast-check'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builderCodeStatsReport, leaderboard, roundToBuckets, type StatsInterval } from '../src/store/reads/attributions.js'
import { upsertAttributions, type TransactionPosition } from '../src/store/attributions.js'
import { applyReorg } from '../src/reorg/index.js'
import { advanceFinality, ensureMonthPartitions, runMigrations, storeTipBlocks, withTransaction } from '../src/store/index.js'
import { STATUSES, type Status } from '../src/store/schema.js'
import { seededRandom } from '../harness/random.js'
import { createEmptyDatabase, createTestDatabase, dropDatabase, migrateBefore, type TestDatabase } from '../harness/services.js'
import { waitUntilBlocked } from './helpers/locks.js'

const CHAIN_ID = 8453
const OTHER_CHAIN_ID = 10
const CODES = ['bc_aaaaaaa1', 'bc_bbbbbbb2', 'bc_ccccccc3']
const SENDERS = [1, 2, 3, 4, 5].map((n) => `0x${n.toString(16).padStart(40, '0')}`)
/** Two days before a month ends: rows move between the month partitions of `attributions` as they change block. */
const T0 = Date.UTC(2025, 1, 27) / 1000
/** Blocks every 20 minutes over 3 days: several rows share a block time, hours and days hold several blocks. */
const BLOCK_SECONDS = 1200
const BLOCKS = 216
const STEPS = 160

const hex = (n: number, length: number, fill = '0') => `0x${n.toString(16).padStart(length, fill)}`

type Key = { chainId: number; txHash: string; userOpHash: string; builderCode: string }

let db: TestDatabase
let random: () => number
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
const int = (below: number) => Math.floor(random() * below)

beforeAll(async () => {
  db = await createTestDatabase()
  await ensureMonthPartitions(db.store.pool, 'attributions', new Date(T0 * 1000))
})
afterAll(async () => {
  await db?.drop()
})

/** A key from a small space, so inserts and upserts often meet rows already there. */
function randomKey(): Key {
  return {
    chainId: random() < 0.1 ? OTHER_CHAIN_ID : CHAIN_ID,
    txHash: hex(int(40), 64),
    userOpHash: random() < 0.3 ? hex(int(2), 64, 'e') : '',
    builderCode: pick(CODES),
  }
}

function randomRow(key: Key = randomKey()) {
  const block = int(BLOCKS)
  return {
    chain_id: key.chainId,
    tx_hash: key.txHash,
    user_op_hash: key.userOpHash,
    builder_code: key.builderCode,
    code_index: 0,
    block_number: block,
    block_hash: hex(block, 64, 'b'),
    block_timestamp: new Date((T0 + block * BLOCK_SECONDS) * 1000).toISOString(),
    from_address: pick(SENDERS),
    sender: pick(SENDERS),
    schema_id: 0,
    codes: [key.builderCode],
    gas_used: random() < 0.2 ? null : 21_000 + int(10_000),
    status: pick(STATUSES),
    removed: random() < 0.15,
  }
}

/** Up to `limit` stored keys at random. */
async function storedKeys(limit: number): Promise<Key[]> {
  const { rows } = await db.store.pool.query<Key>(
    `SELECT chain_id AS "chainId", tx_hash AS "txHash", user_op_hash AS "userOpHash", builder_code AS "builderCode"
     FROM attributions ORDER BY md5(tx_hash || user_op_hash || builder_code || $1) LIMIT $2`,
    [random(), limit],
  )
  return rows
}

/** Runs `statement(where)`, `where` being a condition that selects the rows of `keys`. */
async function onKeys(client: pg.Pool | pg.PoolClient, keys: Key[], statement: (where: string) => string): Promise<void> {
  await client.query(
    statement(`(chain_id, tx_hash, user_op_hash, builder_code) IN (
       SELECT k."chainId", k."txHash", k."userOpHash", k."builderCode" FROM jsonb_to_recordset($1::jsonb)
         AS k("chainId" int, "txHash" text, "userOpHash" text, "builderCode" text))`),
    [JSON.stringify(keys)],
  )
}

async function insertRows(client: pg.Pool | pg.PoolClient, rows: (ReturnType<typeof randomRow> & { role?: string })[]): Promise<void> {
  // Rows without roles leave the column out: the table before migration 0011 has none.
  const role = rows.some((row) => row.role !== undefined) ? ['role, ', `coalesce(role, ''), `] : ['', '']
  // A key already stored, at any time (the primary key holds the partition column since migration 0036), is left
  // as it is, as the indexer's writers keep it.
  const keyOf = (row: string) =>
    `${row}.chain_id, ${row}.tx_hash, ${row}.user_op_hash, ${row}.builder_code${role[0] ? `, coalesce(${row}.role, '')` : ''}`
  await client.query(
    `INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, ${role[0]}code_index, block_number, block_hash, block_timestamp,
       from_address, sender, schema_id, codes, gas_used, status, removed)
     SELECT DISTINCT ON (${keyOf('r')}) chain_id, tx_hash, user_op_hash, builder_code, ${role[1]}code_index, block_number, block_hash, block_timestamp,
       from_address, sender, schema_id, codes, gas_used, status, removed
     FROM jsonb_populate_recordset(null::attributions, $1::jsonb) r
     WHERE NOT EXISTS (SELECT 1 FROM attributions a WHERE (${keyOf('a')}) = (${keyOf('r')}))
     ON CONFLICT DO NOTHING`,
    [JSON.stringify(rows)],
  )
}

/** Moves transactions to random blocks through the indexer's own upsert (inserting the rows it does not hold yet). */
async function upsertThroughStore(): Promise<string> {
  const rows = Array.from({ length: 1 + int(10) }, () => ({ ...randomKey(), chainId: CHAIN_ID }))
  const positions = new Map<string, TransactionPosition>()
  for (const row of rows) {
    const block = int(BLOCKS)
    positions.set(row.txHash, {
      hash: row.txHash,
      blockNumber: block,
      blockHash: hex(block, 64, 'b'),
      blockTimestamp: T0 + block * BLOCK_SECONDS,
      transactionIndex: 0,
      status: pick(STATUSES),
    })
  }
  const unique = [...new Map(rows.map((row) => [`${row.txHash}|${row.userOpHash}|${row.builderCode}`, row])).values()]
  const entries = unique.map((row) => ({
    ...row,
    codeIndex: 0,
    role: null,
    registry: null,
    sender: pick(SENDERS),
    schemaId: 0,
    codes: [row.builderCode],
    from: pick(SENDERS),
    to: null,
  }))
  const gasUsed = new Map(rows.filter(() => random() < 0.5).map((row) => [row.txHash, 30_000 + int(1000)]))
  // All new rows go in by COPY, a batch meeting stored ones by the upsert: the walk takes both paths.
  await withTransaction(db.store.pool, (client) => upsertAttributions(client, CHAIN_ID, entries, positions, gasUsed))
  return `upsertAttributions ${unique.length}`
}

/** One random write to `attributions`, as one multi-row statement (or one transaction of several); returns what it did. */
async function randomWrite(forced?: number): Promise<string> {
  const pool = db.store.pool
  const choice = forced ?? int(9)
  const keys = await storedKeys(1 + int(8))
  switch (choice) {
    case 0: {
      const rows = Array.from({ length: 1 + int(12) }, () => randomRow())
      await insertRows(pool, rows)
      return `insert ${rows.length}`
    }
    case 1:
      return upsertThroughStore()
    case 2:
      await onKeys(pool, keys, (where) => `UPDATE attributions SET removed = true, updated_at = now() WHERE ${where}`)
      return `remove ${keys.length}`
    case 3:
      await onKeys(pool, keys, (where) => `UPDATE attributions SET removed = false, updated_at = now() WHERE ${where}`)
      return `restore ${keys.length}`
    case 4: {
      const status: Status = pick(STATUSES)
      const shift = pick([0, 0, BLOCK_SECONDS, -3 * BLOCK_SECONDS, 86_400])
      await onKeys(
        pool,
        keys,
        (where) =>
          `UPDATE attributions SET status = '${status}', block_timestamp = block_timestamp + interval '${shift} seconds' WHERE ${where}`,
      )
      return `move ${keys.length} to ${status} ${shift}s`
    }
    case 5:
      await onKeys(pool, keys, (where) => `DELETE FROM attributions WHERE ${where}`)
      return `delete ${keys.length}`
    case 6: {
      const fork = BLOCKS - 1 - int(20)
      await applyReorg(pool, {
        chainId: CHAIN_ID,
        followerFilterId: 'all',
        forkBlock: { number: fork, hash: hex(fork, 64, 'b') },
        depth: 1,
        oldHash: 'x',
        newHash: 'y',
      })
      return `reorg above ${fork}`
    }
    case 7: {
      const from = int(BLOCKS)
      await advanceFinality(pool, CHAIN_ID, [from, from + int(40)])
      return `finalize above ${from}`
    }
    case 9: {
      // The tip's drop: pre-confirmed rows announced up to a sealed block and not in it.
      const block = int(BLOCKS)
      const { dropped } = await storeTipBlocks(pool, {
        chainId: CHAIN_ID,
        filterId: 'all',
        blocks: [{ number: block, hash: hex(block, 64, 'b'), parentHash: hex(block - 1, 64, 'b'), timestamp: T0 + block * BLOCK_SECONDS }],
        rows: [],
        finalizedBlock: null,
      })
      return `drop up to ${block} (${dropped} logs)`
    }
    case 10: {
      const rows = Array.from({ length: 1 + int(12) }, () => ({ ...randomRow(), role: pick(['', 'app', 'wallet', 'service']) }))
      await insertRows(pool, rows)
      return `insert ${rows.length} with roles`
    }
    default: {
      // Several statements in one transaction: each fires the triggers with its own rows.
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await onKeys(client, keys, (where) => `UPDATE attributions SET removed = NOT removed WHERE ${where}`)
        await insertRows(
          client,
          Array.from({ length: 1 + int(5) }, () => randomRow()),
        )
        await onKeys(client, keys.slice(0, 2), (where) => `UPDATE attributions SET sender = '${pick(SENDERS)}' WHERE ${where}`)
        await client.query('COMMIT')
      } finally {
        client.release()
      }
      return `transaction on ${keys.length}`
    }
  }
}

const COUNTED = `FROM attributions a CROSS JOIN (VALUES ('hour'), ('day')) AS b(bucket) WHERE NOT a.removed`
const START = `extract(epoch from date_trunc(b.bucket, a.block_timestamp, 'UTC'))::int8`

/** The rollup tables beside the same figures computed from the rows. */
async function rollupAndRecomputation(pool: pg.Pool) {
  const query = async (sql: string) => (await pool.query(sql)).rows
  return {
    buckets: await query(
      `SELECT chain_id, builder_code, bucket, extract(epoch from start)::int8 AS start, attributions, pending, gas_used::text, senders
       FROM builder_code_buckets WHERE (attributions, pending, gas_used, senders) <> (0, 0, 0, 0) ORDER BY 1, 2, 3, 4`,
    ),
    expectedBuckets: await query(
      `SELECT a.chain_id, a.builder_code, b.bucket, ${START} AS start, count(*)::int8 AS attributions,
         count(*) FILTER (WHERE a.status = 'pending')::int8 AS pending, coalesce(sum(a.gas_used), 0)::text AS gas_used,
         count(DISTINCT a.sender)::int8 AS senders
       ${COUNTED} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    ),
    confirmed: await query(
      `SELECT chain_id, builder_code, bucket, extract(epoch from start)::int8 AS start, confirmed_tx_count, confirmed_senders,
         confirmed_transactions, confirmed_user_operations, confirmed_gas_used::text, confirmed_gas_rows
       FROM builder_code_buckets
       WHERE (confirmed_tx_count, confirmed_senders, confirmed_transactions, confirmed_user_operations, confirmed_gas_used, confirmed_gas_rows)
         <> (0, 0, 0, 0, 0, 0)
       ORDER BY 1, 2, 3, 4`,
    ),
    expectedConfirmed: await query(
      `SELECT a.chain_id, a.builder_code, b.bucket, ${START} AS start, count(DISTINCT (a.tx_hash, a.user_op_hash))::int8 AS confirmed_tx_count,
         count(DISTINCT a.sender)::int8 AS confirmed_senders, count(DISTINCT a.tx_hash)::int8 AS confirmed_transactions,
         count(*) FILTER (WHERE a.user_op_hash <> '')::int8 AS confirmed_user_operations,
         coalesce(sum(a.gas_used), 0)::text AS confirmed_gas_used, count(a.gas_used)::int8 AS confirmed_gas_rows
       ${COUNTED} AND a.status <> 'pending' GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    ),
    daily: await query(`SELECT * FROM analytics.builder_code_daily ORDER BY day, chain_id, builder_code`),
    // The view as it was defined before the rollup kept it: every row grouped.
    expectedDaily: await query(
      `SELECT date_trunc('day', a.block_timestamp AT TIME ZONE 'UTC')::date AS day, a.chain_id, a.builder_code,
         count(DISTINCT (a.tx_hash, a.user_op_hash))::bigint AS tx_count, count(DISTINCT a.sender)::bigint AS distinct_senders,
         count(DISTINCT a.tx_hash)::bigint AS distinct_transactions, count(*) FILTER (WHERE a.user_op_hash <> '')::bigint AS user_operations,
         sum(a.gas_used)::numeric AS gas_used
       FROM attributions a WHERE a.status IN ('confirmed', 'finalized') AND NOT a.removed
       GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    ),
    members: await query(
      `SELECT chain_id, builder_code, bucket, extract(epoch from start)::int8 AS start, sender, n, pending
       FROM builder_code_bucket_senders ORDER BY 1, 2, 3, 4, 5`,
    ),
    expectedMembers: await query(
      `SELECT a.chain_id, a.builder_code, b.bucket, ${START} AS start, a.sender, count(*)::int AS n,
         count(*) FILTER (WHERE a.status = 'pending')::int AS pending
       ${COUNTED} GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`,
    ),
    senders: await query(
      `SELECT chain_id, builder_code, sender, n, extract(epoch from last_seen)::int8 AS last_seen FROM builder_code_senders ORDER BY 1, 2, 3`,
    ),
    expectedSenders: await query(
      `SELECT chain_id, builder_code, sender, count(*)::int8 AS n, extract(epoch from max(block_timestamp))::int8 AS last_seen
       FROM attributions WHERE NOT removed GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    ),
    latest: await query(
      `SELECT chain_id, builder_code, bucket, extract(epoch from start)::int8 AS start, latest_senders
       FROM builder_code_buckets WHERE latest_senders <> 0 ORDER BY 1, 2, 3, 4`,
    ),
    expectedLatest: await query(
      `SELECT a.chain_id, a.builder_code, b.bucket, extract(epoch from date_trunc(b.bucket, a.last_seen, 'UTC'))::int8 AS start,
         count(*)::int8 AS latest_senders
       FROM (SELECT chain_id, builder_code, max(block_timestamp) AS last_seen FROM attributions WHERE NOT removed GROUP BY chain_id, builder_code, sender) a
       CROSS JOIN (VALUES ('hour'), ('day')) AS b(bucket)
       GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
    ),
    roles: await query(
      `SELECT chain_id, builder_code, role, bucket, extract(epoch from start)::int8 AS start, attributions, pending
       FROM builder_code_role_buckets WHERE (attributions, pending) <> (0, 0) ORDER BY 1, 2, 3, 4, 5`,
    ),
    expectedRoles: await query(
      `SELECT a.chain_id, a.builder_code, a.role, b.bucket, ${START} AS start, count(*)::int8 AS attributions,
         count(*) FILTER (WHERE a.status = 'pending')::int8 AS pending
       ${COUNTED} GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`,
    ),
    leftovers: await query(
      `SELECT count(*)::int AS n FROM builder_code_buckets WHERE attributions = 0 AND (pending, gas_used, senders, latest_senders, confirmed_tx_count,
         confirmed_senders, confirmed_transactions, confirmed_user_operations, confirmed_gas_used, confirmed_gas_rows) <> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)`,
    ),
  }
}

async function expectRollupExact(context: string, pool = db.store.pool): Promise<void> {
  const found = await rollupAndRecomputation(pool)
  expect(found.buckets, context).toEqual(found.expectedBuckets)
  expect(found.members, context).toEqual(found.expectedMembers)
  expect(found.confirmed, context).toEqual(found.expectedConfirmed)
  expect(found.daily, context).toEqual(found.expectedDaily)
  expect(found.senders, context).toEqual(found.expectedSenders)
  expect(found.latest, context).toEqual(found.expectedLatest)
  expect(found.roles, context).toEqual(found.expectedRoles)
  expect(found.leftovers, context).toEqual([{ n: 0 }])
  // One row per attribution, whichever months its moves took it through.
  const { rows: twice } = await pool.query(
    `SELECT chain_id, tx_hash, user_op_hash, builder_code, role FROM attributions GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1`,
  )
  expect(twice, context).toEqual([])
}

/** The stats as the route answered them before the rollup: straight from the rows (across chains, a sender counts once per chain). */
async function statsFromRows(chainIds: readonly number[], builderCode: string, interval: StatsInterval, since: Date, until: Date) {
  type Row = { start: number | null; attributions: number; confirmed: number; pending: number; distinctSenders: number; gasUsed: string }
  const { rows } = await db.store.pool.query<Row>(
    `SELECT extract(epoch from date_trunc($5, block_timestamp, 'UTC'))::int8 * 1000 AS start, count(*)::int8 AS attributions,
       count(*) FILTER (WHERE status <> 'pending')::int8 AS confirmed, count(*) FILTER (WHERE status = 'pending')::int8 AS pending,
       count(DISTINCT (chain_id, sender))::int8 AS "distinctSenders", coalesce(sum(gas_used), 0)::text AS "gasUsed"
     FROM attributions WHERE chain_id = ANY($1::int[]) AND builder_code = $2 AND block_timestamp >= $3 AND block_timestamp < $4 AND NOT removed
     GROUP BY GROUPING SETS ((1), ()) ORDER BY 1 NULLS FIRST`,
    [chainIds, builderCode, since, until, interval],
  )
  const [{ start: _, ...total }, ...buckets] = rows as [Row, ...Row[]]
  return { total, buckets }
}

async function expectStatsMatchRows(context: string): Promise<void> {
  const interval = pick(['hour', 'day'] as const)
  const code = pick(CODES)
  const from = T0 + int(BLOCKS * BLOCK_SECONDS) - 86_400
  // Half the ranges end after every row (the senders' latest times answer), half inside the data (the rows answer).
  const to = random() < 0.5 ? T0 + 5 * 86_400 : from + 1 + int(2 * 86_400)
  const { since, until } = roundToBuckets(interval, new Date(from * 1000), new Date(to * 1000))
  // One chain, or both chains summed.
  const chainIds = pick([[CHAIN_ID], [CHAIN_ID, OTHER_CHAIN_ID]])
  const chainId = chainIds.length === 1 ? chainIds[0]! : chainIds
  const { stats } = await builderCodeStatsReport(db.store.db, { chainId, builderCode: code, interval, since, until })
  const expected = await statsFromRows(chainIds, code, interval, since, until)
  const label = `${context}: chains ${chainIds.join(',')} ${code} ${interval} ${since.toISOString()} ${until.toISOString()}`
  expect(stats.total, label).toEqual(expected.total)
  expect(
    stats.buckets.filter((bucket) => bucket.attributions > 0),
    label,
  ).toEqual(expected.buckets)
  // The leaderboard over the same range, of any length (it ranks a power of two of codes, then keeps `limit`).
  const limit = 1 + int(CODES.length)
  const board = await leaderboard(db.store.db, { chainId, since, until, limit })
  const { rows: ranked } = await db.store.pool.query<{ builderCode: string; attributions: number }>(
    `SELECT builder_code AS "builderCode", count(*)::int8 AS attributions FROM attributions
     WHERE chain_id = ANY($1::int[]) AND block_timestamp >= $2 AND block_timestamp < $3 AND NOT removed
     GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $4`,
    [chainIds, since, until, limit],
  )
  expect(
    board.map(({ builderCode, attributions }) => ({ builderCode, attributions })),
    `${label} leaderboard of ${limit}`,
  ).toEqual(ranked)
}

describe('stats rollup', () => {
  it('equals a recomputation from the rows after every random multi-row write', async () => {
    random = seededRandom(8021)
    await insertRows(
      db.store.pool,
      Array.from({ length: 60 }, () => randomRow()),
    )
    await expectRollupExact('initial insert')
    const done: string[] = []
    for (let step = 0; step < STEPS; step++) {
      done.push(await randomWrite())
      const context = `step ${step}: ${done.slice(-3).join(' → ')}`
      await expectRollupExact(context)
      await expectStatsMatchRows(context)
    }
    // The walk must have met every kind of change, not only inserts.
    const { rows } = await db.store.pool.query(
      `SELECT count(*) FILTER (WHERE removed)::int AS removed, count(*)::int AS total FROM attributions`,
    )
    expect(rows[0].removed).toBeGreaterThan(0)
    expect(rows[0].total).toBeGreaterThan(rows[0].removed)
    expect(new Set(done.map((entry) => entry.split(' ')[0])).size).toBe(9)
    // Its rows sit in both months around T0, so moves crossed partitions.
    const { rows: months } = await db.store.pool.query(`SELECT DISTINCT tableoid::regclass::text AS month FROM attributions ORDER BY 1`)
    expect(months.map((row) => row.month)).toEqual(['attributions_p2025_02', 'attributions_p2025_03'])
  })

  it('equals a recount from the rows after any sequence of inserts, reorgs, status changes, finality, drops and deletes', async () => {
    const write = fc.record({ choice: fc.integer({ min: 0, max: 10 }), seed: fc.integer() })
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.array(write, { minLength: 1, maxLength: 12 }), async (seed, writes) => {
        await db.store.pool.query('TRUNCATE attributions')
        random = seededRandom(seed)
        await insertRows(
          db.store.pool,
          Array.from({ length: 1 + int(30) }, () => ({ ...randomRow(), role: pick(['', 'app', 'wallet']) })),
        )
        const done: string[] = []
        for (const { choice, seed } of writes) {
          random = seededRandom(seed)
          done.push(await randomWrite(choice))
        }
        await expectRollupExact(done.join(' → '))
        await expectStatsMatchRows(done.join(' → '))
      }),
      { numRuns: 40 },
    )
  })

  it('stays exact when transactions write the same buckets and senders at once', async () => {
    random = seededRandom(4337)
    const code = 'bc_race0001'
    const key = (tx: number): Key => ({ chainId: CHAIN_ID, txHash: hex(1000 + tx, 64), userOpHash: '', builderCode: code })
    const row = (tx: number, block: number) => ({
      ...randomRow(key(tx)),
      block_number: block,
      block_hash: hex(block, 64, 'b'),
      block_timestamp: new Date((T0 + block * BLOCK_SECONDS) * 1000).toISOString(),
      sender: SENDERS[0]!,
      removed: false,
    })
    const [first, second] = [await db.store.pool.connect(), await db.store.pool.connect()]
    /** Resolves once `client`'s statement waits for a lock another transaction holds. */
    const blocked = async (client: pg.PoolClient) => {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
      return () => waitUntilBlocked(db.store.pool, rows[0]!.pid)
    }
    try {
      const secondBlocked = await blocked(second)
      const firstBlocked = await blocked(first)
      // Both add the same sender to the same hour and day: the second waits for the first's rows and counts it once.
      await first.query('BEGIN')
      await insertRows(first, [row(1, 100)])
      await second.query('BEGIN')
      const inserting = insertRows(second, [row(2, 100)])
      await secondBlocked()
      await first.query('COMMIT')
      await inserting
      await second.query('COMMIT')
      await expectRollupExact('two inserts of one sender in one hour')

      // One adds an earlier row of the sender while the other takes its latest rows away: the latest time is
      // found again among rows that include the one committed meanwhile.
      await second.query('BEGIN')
      await insertRows(second, [row(3, 90)])
      await first.query('BEGIN')
      const removing = onKeys(first, [key(1), key(2)], (where) => `UPDATE attributions SET removed = true WHERE ${where}`)
      await firstBlocked()
      await second.query('COMMIT')
      await removing
      await first.query('COMMIT')
      await expectRollupExact('a removal racing an insert')
      const { rows } = await db.store.pool.query(`SELECT n, last_seen FROM builder_code_senders WHERE builder_code = $1`, [code])
      expect(rows).toEqual([{ n: 1, last_seen: new Date((T0 + 90 * BLOCK_SECONDS) * 1000) }])
    } finally {
      first.release()
      second.release()
    }
  })

  it("keeps the daily figures exact when a write restores a transaction's stored rows and adds new ones of the same code", async () => {
    await db.store.pool.query('TRUNCATE attributions')
    random = seededRandom(77)
    const txHash = hex(77, 64)
    const block = 12
    // The app row was stored and a reorg took it away; the transaction comes back with the code as app and wallet.
    await insertRows(db.store.pool, [
      {
        ...randomRow({ chainId: CHAIN_ID, txHash, userOpHash: '', builderCode: CODES[0]! }),
        role: 'app',
        removed: true,
        status: 'confirmed',
      },
    ])
    const position: TransactionPosition = {
      hash: txHash,
      blockNumber: block,
      blockHash: hex(block, 64, 'b'),
      blockTimestamp: T0 + block * BLOCK_SECONDS,
      transactionIndex: 0,
      status: 'confirmed',
    }
    const entry = (role: 'app' | 'wallet') => ({
      txHash,
      userOpHash: '',
      builderCode: CODES[0]!,
      codeIndex: 0,
      role,
      registry: null,
      sender: SENDERS[0]!,
      schemaId: 2,
      codes: [CODES[0]!],
      from: SENDERS[0]!,
      to: null,
    })
    await withTransaction(db.store.pool, (client) =>
      upsertAttributions(client, CHAIN_ID, [entry('app'), entry('wallet')], new Map([[txHash, position]]), new Map()),
    )
    await expectRollupExact('a stored row restored beside a new one')
    const { rows } = await db.store.pool.query(`SELECT tx_count, distinct_transactions FROM analytics.builder_code_daily`)
    expect(rows).toEqual([{ tx_count: 1, distinct_transactions: 1 }])
  })

  it('empties with the table on TRUNCATE', async () => {
    await db.store.pool.query('TRUNCATE attributions')
    await expectRollupExact('after TRUNCATE')
    const { rows } = await db.store.pool.query(`SELECT count(*)::int AS n FROM builder_code_buckets`)
    expect(rows).toEqual([{ n: 0 }])
    random = seededRandom(1)
    await insertRows(
      db.store.pool,
      Array.from({ length: 20 }, () => randomRow()),
    )
    await expectRollupExact('insert after TRUNCATE')
  })

  it("answers a code's roles in the order app, wallet, service, none, per bucket, in total and on the leaderboard", async () => {
    const code = 'bc_roleorder'
    // Two hours, each with the four roles, stored in the reverse order.
    const rows = ['', 'service', 'wallet', 'app'].flatMap((role, r) =>
      [0, 3].map((block) => ({
        chain_id: CHAIN_ID,
        tx_hash: hex(10_000 + r * 10 + block, 64),
        user_op_hash: '',
        builder_code: code,
        role,
        code_index: 0,
        block_number: block,
        block_hash: hex(block, 64, 'b'),
        block_timestamp: new Date((T0 + block * BLOCK_SECONDS) * 1000).toISOString(),
        from_address: SENDERS[0]!,
        sender: SENDERS[r]!,
        schema_id: 2,
        codes: [code],
        gas_used: 21_000,
        status: 'finalized' as Status,
        removed: false,
      })),
    )
    await insertRows(db.store.pool, rows)
    const range = roundToBuckets('hour', new Date(T0 * 1000), new Date((T0 + 2 * 3600) * 1000))
    const { roles } = await builderCodeStatsReport(db.store.db, { chainId: CHAIN_ID, builderCode: code, interval: 'hour', ...range })
    const inOrder = [
      { role: 'app', attributions: 2, confirmed: 2, pending: 0 },
      { role: 'wallet', attributions: 2, confirmed: 2, pending: 0 },
      { role: 'service', attributions: 2, confirmed: 2, pending: 0 },
      { role: null, attributions: 2, confirmed: 2, pending: 0 },
    ]
    expect(roles.total).toEqual(inOrder)
    const perHour = inOrder.map((counts) => ({ ...counts, attributions: 1, confirmed: 1 }))
    expect([...roles.buckets]).toEqual([
      [T0 * 1000, perHour],
      [(T0 + 3600) * 1000, perHour],
    ])
    const board = await leaderboard(db.store.db, { chainId: CHAIN_ID, ...range, limit: 100 })
    expect(board.find((row) => row.builderCode === code)?.roles).toEqual(inOrder)
    await expectRollupExact('rows in every role')
  })

  it('ranks a leaderboard of any length: the first codes of the whole ranking, however many are asked for', async () => {
    // Six codes in one hour, the nth with n + 1 attributions.
    const codes = Array.from({ length: 6 }, (_, n) => `bc_rank${n}`)
    const rows = codes.flatMap((code, n) =>
      Array.from({ length: n + 1 }, (_, i) => ({
        chain_id: CHAIN_ID,
        tx_hash: hex(20_000 + n * 10 + i, 64),
        user_op_hash: '',
        builder_code: code,
        role: '',
        code_index: 0,
        block_number: 0,
        block_hash: hex(0, 64, 'b'),
        block_timestamp: new Date(T0 * 1000).toISOString(),
        from_address: SENDERS[0]!,
        sender: SENDERS[i % SENDERS.length]!,
        schema_id: 0,
        codes: [code],
        gas_used: 21_000,
        status: 'finalized' as Status,
        removed: false,
      })),
    )
    await insertRows(db.store.pool, rows)
    const range = roundToBuckets('hour', new Date(T0 * 1000), new Date((T0 + 3600) * 1000))
    const whole = await leaderboard(db.store.db, { chainId: CHAIN_ID, ...range, limit: 100 })
    expect(whole.filter((row) => codes.includes(row.builderCode)).map((row) => [row.builderCode, row.attributions])).toEqual(
      codes.map((code, n) => [code, n + 1]).reverse(),
    )
    for (const limit of [1, 2, 3, 5, 6, 7]) {
      const board = await leaderboard(db.store.db, { chainId: CHAIN_ID, ...range, limit })
      expect(board, `limit ${limit}`).toEqual(whole.slice(0, limit))
    }
  })

  it('fills the rollup from the rows stored before its migration', async () => {
    const { name, url } = await createEmptyDatabase()
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    try {
      await migrateBefore(pool, '0007')
      random = seededRandom(7)
      await insertRows(
        pool,
        Array.from({ length: 200 }, () => randomRow()),
      )
      await runMigrations(pool)
      await expectRollupExact('after the migration', pool)
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM builder_code_senders`)
      expect(rows[0].n).toBeGreaterThan(10)
    } finally {
      await pool.end()
      await dropDatabase(name)
    }
  })
})
