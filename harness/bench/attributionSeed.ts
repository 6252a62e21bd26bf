/**
 * Synthetic attributions for the API bench, generated inside PostgreSQL (`INSERT … SELECT generate_series`).
 *
 * Shape: 10 attributions per block, 2 s blocks ending now; builder codes skewed (the hottest of 1000
 * codes holds ~3 % of rows, the median ~0.07 %); 100,000 senders; every 5th row is a user operation
 * in a bundle transaction; ~0.1 % removed; the newest blocks pending, then confirmed, then finalized.
 * Codes `bc_00000000`… are registered to wallets `0x…01`…. The transactions behind the rows are stored with
 * their keys, for the transaction route. Seeding again appends after the rows there.
 *
 * The bulk path (the bench's): the indexes of `attributions`, `transactions`, their keys and the stats rollup
 * are dropped, the rows inserted by `jobs` connections at once with the triggers off
 * (`session_replication_role = replica`), their transactions after them, then the rollup is counted once from
 * every row (`builder_code_rollup_rebuild()`, beside the triggers in src/store/sql/02-stats-rollup.sql) while the
 * indexes are built again, and every table vacuumed and analyzed.
 * The trigger path (`via: 'triggers'`) inserts the same rows through the triggers, as the indexer writes: the
 * reference the bulk path must equal.
 */
import { setPriority } from 'node:os'
import type pg from 'pg'
import { createStore, ensureMonthPartitions, runMigrations } from '../../src/store/index.js'

const ROWS_PER_BLOCK = 10
/** Block time by default: Base's before 2026-11-05. Longer blocks spread the same rows over more months. */
const BLOCK_SECONDS = 2
const SENDERS = 100_000
const PENDING_BLOCKS = 5
const UNFINALIZED_BLOCKS = 64
/** Rows per statement: bulk statements commit one by one, so a batch is what a failure loses. */
const BULK_BATCH_ROWS = 1_000_000
const TRIGGER_BATCH_ROWS = 500_000
/** The tables a bulk seed writes: their indexes are dropped for the load and built again after. */
const ROLLUP_TABLES = ['builder_code_bucket_senders', 'builder_code_senders', 'builder_code_buckets', 'builder_code_role_buckets']
const SEEDED_TABLES = ['attributions', 'transactions', 'transaction_keys', ...ROLLUP_TABLES]
/** Memory of the bulk path's sessions, each: sorts and hash aggregates, index builds; the rollup's count more (spilled, they write many times their size). */
const BULK_WORK_MEM = '256MB'
const ROLLUP_WORK_MEM = '1GB'
const BULK_MAINTENANCE_WORK_MEM = '512MB'

export type SeedOptions = {
  rows: number
  codes: number
  chainId: number
  /** Connections loading at once (bulk path). */
  jobs?: number
  /** `bulk` (default): triggers off, the rollup counted once; `triggers`: through the triggers, as the indexer writes. */
  via?: 'bulk' | 'triggers'
  /** Lower this process's and its database backends' CPU priority (nice 19; backends on this machine only). */
  nice?: boolean
  /** Block time of the newest seeded block (default: now). */
  headTime?: Date
  /** Seconds between seeded blocks (default {@link BLOCK_SECONDS}). */
  blockSeconds?: number
  say?: (message: string) => void
}

/** Seconds each step took. */
export type SeedFigures = { rows: number; loadSeconds: number; rollupAndIndexSeconds: number; vacuumSeconds: number; totalSeconds: number }

/** The rows `first`…`last` (0-based row numbers) as `SELECT` columns in `attributions`' insert order; `$1`… as {@link rowParameters}. */
const ROWS_SELECT = `SELECT $1::int, tx_hash, user_op_hash, code, 0, block, '0x' || lpad(to_hex(block), 64, 'b'),
    to_timestamp($4::int8 - ($5::int8 - block) * $6), from_address, sender, '0x' || lpad('c0de', 40, '0'), 0,
    ARRAY[code], 21000 + i % 50000,
    CASE WHEN block > $5 - $7 THEN 'pending' WHEN block > $5 - $8 THEN 'confirmed' ELSE 'finalized' END,
    i % 1000 = 999
  FROM (
    SELECT i, i / $9 AS block,
      -- u is a fixed pseudo-random fraction per row; squaring it skews rows toward the low code numbers.
      'bc_' || lpad(to_hex(floor($10 * power(((i * 2654435761) % 4294967296) / 4294967296.0, 2))::int), 8, '0') AS code,
      '0x' || lpad(to_hex(CASE WHEN i % 5 = 4 THEN i - 1 ELSE i END), 64, '0') AS tx_hash,
      CASE WHEN i % 5 = 4 THEN '0x' || lpad(to_hex(i), 64, 'e') ELSE '' END AS user_op_hash,
      '0x' || lpad(to_hex(CASE WHEN i % 5 = 4 THEN 4660 ELSE 1048576 + (i * 7919) % $11 END), 40, '0') AS from_address,
      '0x' || lpad(to_hex(1048576 + (i * 7919) % $11), 40, '0') AS sender
    FROM generate_series($2::int8, $3::int8) AS i
  ) AS g`
const INSERT_ROWS = `INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, code_index, block_number, block_hash,
    block_timestamp, from_address, sender, to_address, schema_id, codes, gas_used, status, removed)
  ${ROWS_SELECT}`

/**
 * The transactions behind the attributions of blocks `$2`…`$3`, with their keys: one per transaction (a bundle's
 * user operation shares its row), suffixed, decoded as schema 0, at its first position in the block; the user
 * operations a bundle carries are not counted (no read the bench times depends on it).
 */
const INSERT_TRANSACTIONS = `WITH stored AS (
    INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, to_address,
      input_size, has_suffix, schema_id, codes, user_operations, gas_used, status, removed)
    SELECT a.chain_id, a.tx_hash, a.block_number, a.block_hash, a.block_timestamp, 0, a.from_address, a.to_address, 160, true, 0, a.codes,
      0, a.gas_used, a.status, a.removed
    FROM attributions a WHERE a.chain_id = $1 AND a.block_number BETWEEN $2 AND $3 AND a.user_op_hash = ''
      -- The first block may hold rows of an earlier seed, whose transactions are stored.
      AND NOT EXISTS (SELECT 1 FROM transaction_keys k WHERE k.chain_id = a.chain_id AND k.hash = a.tx_hash)
    RETURNING chain_id, hash, block_timestamp)
  INSERT INTO transaction_keys (chain_id, hash, block_timestamp) SELECT chain_id, hash, block_timestamp FROM stored`
const transactionParameters = ({ chainId, lastBlock }: Shape, first: number) => [chainId, Math.floor(first / ROWS_PER_BLOCK), lastBlock]

type Shape = { chainId: number; codes: number; headTime: number; lastBlock: number; blockSeconds: number }
const rowParameters = ({ chainId, codes, headTime, lastBlock, blockSeconds }: Shape, from: number, to: number) => [
  chainId,
  from,
  to,
  headTime,
  lastBlock,
  blockSeconds,
  PENDING_BLOCKS,
  UNFINALIZED_BLOCKS,
  ROWS_PER_BLOCK,
  codes,
  SENDERS,
]

/** Seeds `rows` attributions into the database of `databaseUrl` (migrated first), after the rows there. */
export async function seedAttributions(databaseUrl: string, options: SeedOptions): Promise<SeedFigures> {
  const {
    rows,
    codes,
    chainId,
    jobs = 2,
    via = 'bulk',
    nice = false,
    headTime = new Date(),
    blockSeconds = BLOCK_SECONDS,
    say = () => {},
  } = options
  if (nice) setPriority(19)
  const store = createStore({ databaseUrl, max: jobs, applicationName: 'codetrail-seed' })
  const started = performance.now()
  const seconds = (since: number) => (performance.now() - since) / 1000
  try {
    await runMigrations(store.pool)
    await store.pool.query(
      `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source)
       SELECT $1, 'bc_' || lpad(to_hex(c), 8, '0'), '0x' || lpad(to_hex(c + 1), 40, '0'), 'local'
       FROM generate_series(0, $2::int - 1) AS c
       ON CONFLICT DO NOTHING`,
      [chainId, codes],
    )
    const { rows: existing } = await store.pool.query<{ n: string }>(`SELECT count(*)::int8 AS n FROM attributions WHERE chain_id = $1`, [
      chainId,
    ])
    const first = Number(existing[0]!.n)
    const last = first + rows - 1
    const shape: Shape = {
      chainId,
      codes,
      headTime: Math.floor(headTime.getTime() / 1000),
      lastBlock: Math.floor(last / ROWS_PER_BLOCK),
      blockSeconds,
    }
    // A month partition for every month the rows fall in, as the daemon keeps them for the months it writes.
    const earliest = new Date((shape.headTime - (shape.lastBlock - Math.floor(first / ROWS_PER_BLOCK)) * blockSeconds) * 1000)
    for (const table of ['attributions', 'transactions'] as const) await ensureMonthPartitions(store.pool, table, headTime, earliest)
    const batches: [number, number][] = []
    const batchRows = via === 'bulk' ? BULK_BATCH_ROWS : TRIGGER_BATCH_ROWS
    for (let from = first; from <= last; from += batchRows) batches.push([from, Math.min(last, from + batchRows - 1)])
    const progress = (done: number) =>
      say(
        `seeded ${done.toLocaleString('en-US')} / ${rows.toLocaleString('en-US')} rows (${Math.round(done / seconds(started)).toLocaleString('en-US')} rows/s)`,
      )

    if (via === 'triggers') {
      let done = 0
      for (const [from, to] of batches) {
        await store.pool.query(INSERT_ROWS, rowParameters(shape, from, to))
        progress((done += to - from + 1))
      }
      await store.pool.query(INSERT_TRANSACTIONS, transactionParameters(shape, first))
      const vacuumStarted = performance.now()
      await store.pool.query('VACUUM (ANALYZE)')
      const total = seconds(started)
      return {
        rows,
        loadSeconds: total - seconds(vacuumStarted),
        rollupAndIndexSeconds: 0,
        vacuumSeconds: seconds(vacuumStarted),
        totalSeconds: total,
      }
    }

    const sessions = await Promise.all(Array.from({ length: jobs }, () => store.pool.connect()))
    try {
      for (const session of sessions) await prepareBulkSession(session, nice)
      const indexes = await indexesOf(sessions[0]!, SEEDED_TABLES)
      await sessions[0]!.query('BEGIN')
      for (const index of indexes) await sessions[0]!.query(index.drop)
      await sessions[0]!.query('COMMIT')
      say(`dropped ${indexes.length} indexes of ${SEEDED_TABLES.join(', ')} for the load`)

      let done = 0
      await runQueued(
        sessions,
        batches.map(([from, to]) => async (session) => {
          await session.query(INSERT_ROWS, rowParameters(shape, from, to))
          progress((done += to - from + 1))
        }),
      )
      await sessions[0]!.query(INSERT_TRANSACTIONS, transactionParameters(shape, first))
      say('transactions and their keys stored')
      const loadSeconds = seconds(started)

      // The rollup reads attributions while the other session builds its indexes; a constraint's index (its
      // ALTER TABLE would wait for every reader) and the other tables' indexes follow once it is counted.
      const rollupStarted = performance.now()
      await runQueued(sessions, [
        async (session) => {
          await session.query(`SET work_mem = '${ROLLUP_WORK_MEM}'`)
          await session.query('SELECT builder_code_rollup_rebuild()')
          await session.query(`SET work_mem = '${BULK_WORK_MEM}'`)
          say(`rollup counted from the rows in ${seconds(rollupStarted).toFixed(1)} s`)
        },
        ...createdByTable(indexes.filter((index) => index.table === 'attributions' && !index.constraint)),
      ])
      await runQueued(sessions, createdByTable(indexes.filter((index) => index.table !== 'attributions' || index.constraint)))
      const rollupAndIndexSeconds = seconds(rollupStarted)
      say(`rollup and ${indexes.length} indexes built in ${rollupAndIndexSeconds.toFixed(1)} s`)

      // Hint bits and visibility maps for index-only scans, then planner statistics, as autovacuum leaves a
      // running database. Every VACUUM before any ANALYZE: an ANALYZE's snapshot in one session keeps a
      // VACUUM in the other from marking pages all-visible (the rollup's buckets were left a third
      // visible, so the leaderboard read their heap: 55 ms against 17 ms at 10 M rows).
      const vacuumStarted = performance.now()
      const { rows: tables } = await sessions[0]!.query<{ name: string }>(
        `SELECT c.oid::regclass::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm') ORDER BY pg_total_relation_size(c.oid) DESC`,
      )
      for (const step of ['VACUUM', 'ANALYZE'])
        await runQueued(
          sessions,
          tables.map(
            ({ name }) =>
              (session) =>
                session.query(`${step} ${name}`),
          ),
        )
      const vacuumSeconds = seconds(vacuumStarted)
      return { rows, loadSeconds, rollupAndIndexSeconds, vacuumSeconds, totalSeconds: seconds(started) }
    } finally {
      for (const session of sessions) session.release()
    }
  } finally {
    await store.close()
  }
}

type Task = (session: pg.PoolClient) => Promise<unknown>

/** Runs the tasks in order, each session taking the next one as soon as it is free. */
async function runQueued(sessions: pg.PoolClient[], tasks: Task[]): Promise<void> {
  let next = 0
  await Promise.all(
    sessions.map(async (session) => {
      while (next < tasks.length) await tasks[next++]!(session)
    }),
  )
}

/**
 * A bulk session: triggers off, synchronous commit off, memory for the rollup's aggregates and the index
 * builds, no parallel workers (the sessions are the parallelism, and a worker would escape `nice`).
 */
async function prepareBulkSession(session: pg.PoolClient, nice: boolean): Promise<void> {
  await session.query(`SET session_replication_role = replica`)
  await session.query(`SET synchronous_commit = off`)
  await session.query(`SET work_mem = '${BULK_WORK_MEM}'`)
  await session.query(`SET maintenance_work_mem = '${BULK_MAINTENANCE_WORK_MEM}'`)
  await session.query(`SET max_parallel_maintenance_workers = 0`)
  await session.query(`SET max_parallel_workers_per_gather = 0`)
  if (!nice) return
  const { rows } = await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
  try {
    setPriority(rows[0]!.pid, 19)
  } catch {
    // A server on another machine, or one this user may not renice: it keeps its priority.
  }
}

type IndexDefinition = { table: string; constraint: boolean; create: string; drop: string }

/**
 * A task per table that creates its indexes one after another. An index on a partitioned table makes one on
 * each partition, named after the partition and the columns (`…_chain_id_block_number_idx`, then `…_idx1`):
 * two sessions creating two such indexes of one table at once both pick the first name, and one fails on it.
 */
function createdByTable(indexes: readonly IndexDefinition[]): Task[] {
  const tables = Map.groupBy(indexes, (index) => index.table)
  return [...tables.values()].map((list) => async (session) => {
    for (const index of list) await session.query(index.create)
  })
}

/** Every index of `tables`, as statements that drop it and create it again (a constraint's through its constraint). */
async function indexesOf(session: pg.PoolClient, tables: string[]): Promise<IndexDefinition[]> {
  const { rows } = await session.query<IndexDefinition>(
    `SELECT i.indrelid::regclass::text AS table, c.oid IS NOT NULL AS constraint,
       -- A partitioned table's index is defined ON ONLY the table: created again, it covers the partitions too.
       CASE WHEN c.oid IS NULL THEN replace(pg_get_indexdef(i.indexrelid), ' ON ONLY ', ' ON ')
         ELSE format('ALTER TABLE %s ADD CONSTRAINT %I %s', i.indrelid::regclass, c.conname, pg_get_constraintdef(c.oid)) END AS create,
       CASE WHEN c.oid IS NULL THEN format('DROP INDEX %s', i.indexrelid::regclass)
         ELSE format('ALTER TABLE %s DROP CONSTRAINT %I', i.indrelid::regclass, c.conname) END AS drop
     FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.contype IN ('p', 'u', 'x')
     WHERE i.indrelid = ANY($1::regclass[])
     ORDER BY pg_relation_size(i.indexrelid) DESC, 1, 3`,
    [tables],
  )
  return rows
}
