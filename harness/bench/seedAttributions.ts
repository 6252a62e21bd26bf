/**
 * Loads synthetic attributions for API benchmarks into the database named by DATABASE_URL (migrated
 * first) by the bulk path of `harness/bench/attributionSeed.ts`: indexes dropped, rows inserted with the
 * triggers off by `--jobs` connections, the stats rollup counted once, indexes built again, every table
 * vacuumed and analyzed. `--nice` lowers this process's and its database backends' CPU priority;
 * `--via triggers` inserts the same rows through the rollup's triggers instead, with the indexes in place.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/codetrail_bench \
 *     node --import tsx harness/bench/seedAttributions.ts --rows 10000000 [--codes 1000] [--chain-id 8453] [--jobs 2] [--nice] [--via bulk|triggers] [--block-seconds 2]
 */
import { parseArgs } from 'node:util'
import { loadConfig } from '../../src/config/index.js'
import { seedAttributions } from './attributionSeed.js'

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    codes: { type: 'string', default: '1000' },
    'chain-id': { type: 'string', default: '8453' },
    jobs: { type: 'string', default: '2' },
    nice: { type: 'boolean', default: false },
    via: { type: 'string', default: 'bulk' },
    'block-seconds': { type: 'string', default: '2' },
  },
  strict: true,
})

function positive(name: string, value: string): number {
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n <= 0) {
    process.stderr.write(`seed-attributions: --${name} must be a positive integer, got ${JSON.stringify(value)}\n`)
    process.exit(2)
  }
  return n
}

if (values.via !== 'bulk' && values.via !== 'triggers') {
  process.stderr.write(`seed-attributions: --via takes bulk or triggers, got ${JSON.stringify(values.via)}\n`)
  process.exit(2)
}
const rows = positive('rows', values.rows)
const chainId = positive('chain-id', values['chain-id'])
const figures = await seedAttributions(loadConfig().databaseUrl, {
  rows,
  codes: positive('codes', values.codes),
  chainId,
  jobs: positive('jobs', values.jobs),
  nice: values.nice,
  via: values.via,
  blockSeconds: positive('block-seconds', values['block-seconds']),
  say: (message) => process.stdout.write(`${message}\n`),
})
process.stdout.write(
  `done: ${rows.toLocaleString('en-US')} attributions for chain ${chainId} in ${figures.totalSeconds.toFixed(1)} s ` +
    `(rows ${figures.loadSeconds.toFixed(1)} s, rollup and indexes ${figures.rollupAndIndexSeconds.toFixed(1)} s, vacuum and analyze ${figures.vacuumSeconds.toFixed(1)} s)\n`,
)
