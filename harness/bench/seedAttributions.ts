/**
 * Loads synthetic attributions for API benchmarks, generated inside PostgreSQL (`INSERT … SELECT
 * generate_series`), into the database named by DATABASE_URL (migrated first).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/codetrail_bench \
 *     node --import tsx harness/bench/seedAttributions.ts --rows 10000000 [--codes 1000] [--chain-id 8453]
 *
 * Shape: 10 attributions per block, 2 s blocks ending now; builder codes skewed (the hottest of 1000
 * codes holds ~3 % of rows, the median ~0.07 %); 100,000 senders; every 5th row is a user operation
 * in a bundle transaction; ~0.1 % removed; the newest blocks pending, then confirmed, then finalized.
 * Codes `bc_00000000`… are registered to wallets `0x…01`…. Re-running appends after the rows there.
 */
import { parseArgs } from 'node:util'
import { loadConfig } from '../../src/config/index.js'
import { createStore, runMigrations } from '../../src/store/index.js'

const ROWS_PER_BLOCK = 10
const BLOCK_SECONDS = 2
const SENDERS = 100_000
const BATCH_ROWS = 500_000
const PENDING_BLOCKS = 5
const UNFINALIZED_BLOCKS = 64

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    codes: { type: 'string', default: '1000' },
    'chain-id': { type: 'string', default: '8453' },
  },
  strict: true,
})
const rows = positive('rows', values.rows)
const codes = positive('codes', values.codes)
const chainId = positive('chain-id', values['chain-id'])

function positive(name: string, value: string): number {
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n <= 0) {
    process.stderr.write(`seed-attributions: --${name} must be a positive integer, got ${JSON.stringify(value)}\n`)
    process.exit(2)
  }
  return n
}

const config = loadConfig()
const store = createStore({ databaseUrl: config.databaseUrl, max: 1, applicationName: 'codetrail-seed' })
const started = performance.now()
try {
  await runMigrations(store.pool)
  await store.pool.query(
    `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source)
     SELECT $1, 'bc_' || lpad(to_hex(c), 8, '0'), '0x' || lpad(to_hex(c + 1), 40, '0'), 'local'
     FROM generate_series(0, $2::int - 1) AS c
     ON CONFLICT DO NOTHING`,
    [chainId, codes],
  )
  const { rows: existing } = await store.pool.query<{ n: number }>(`SELECT count(*)::int8 AS n FROM attributions WHERE chain_id = $1`, [
    chainId,
  ])
  const first = existing[0]!.n
  const last = first + rows - 1
  const lastBlock = Math.floor(last / ROWS_PER_BLOCK)
  const headTime = Math.floor(Date.now() / 1000)
  for (let from = first; from <= last; from += BATCH_ROWS) {
    const to = Math.min(last, from + BATCH_ROWS - 1)
    // u is a fixed pseudo-random fraction per row; squaring it skews rows toward the low code numbers.
    await store.pool.query(
      `INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, code_index, block_number, block_hash,
         block_timestamp, from_address, sender, to_address, schema_id, codes, gas_used, status, removed)
       SELECT $1, tx_hash, user_op_hash, code, 0, block, '0x' || lpad(to_hex(block), 64, 'b'),
         to_timestamp($4::int8 - ($5::int8 - block) * $6), from_address, sender, '0x' || lpad('c0de', 40, '0'), 0,
         ARRAY[code], 21000 + i % 50000,
         CASE WHEN block > $5 - $7 THEN 'pending' WHEN block > $5 - $8 THEN 'confirmed' ELSE 'finalized' END,
         i % 1000 = 999
       FROM (
         SELECT i, i / $9 AS block,
           'bc_' || lpad(to_hex(floor($10 * power(((i * 2654435761) % 4294967296) / 4294967296.0, 2))::int), 8, '0') AS code,
           '0x' || lpad(to_hex(CASE WHEN i % 5 = 4 THEN i - 1 ELSE i END), 64, '0') AS tx_hash,
           CASE WHEN i % 5 = 4 THEN '0x' || lpad(to_hex(i), 64, 'e') ELSE '' END AS user_op_hash,
           '0x' || lpad(to_hex(CASE WHEN i % 5 = 4 THEN 4660 ELSE 1048576 + (i * 7919) % $11 END), 40, '0') AS from_address,
           '0x' || lpad(to_hex(1048576 + (i * 7919) % $11), 40, '0') AS sender
         FROM generate_series($2::int8, $3::int8) AS i
       ) AS g`,
      [chainId, from, to, headTime, lastBlock, BLOCK_SECONDS, PENDING_BLOCKS, UNFINALIZED_BLOCKS, ROWS_PER_BLOCK, codes, SENDERS],
    )
    const done = to - first + 1
    const seconds = (performance.now() - started) / 1000
    process.stdout.write(
      `seeded ${done.toLocaleString('en-US')} / ${rows.toLocaleString('en-US')} rows (${Math.round(done / seconds).toLocaleString('en-US')} rows/s)\n`,
    )
  }
  // Every table, the rollups the triggers filled included, as autovacuum leaves them on a running
  // database: planner statistics, and visibility maps for index-only scans.
  await store.pool.query('VACUUM (ANALYZE)')
  process.stdout.write(
    `done: ${rows.toLocaleString('en-US')} attributions for chain ${chainId} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  )
} finally {
  await store.close()
}
