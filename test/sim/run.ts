/**
 * npm run test:sim [-- --seeds N] [--first S] [--seed S]... [--verbose] [--keep-db]
 * npm run test:sim:delivery [-- …the same]: the delivery simulation (test/sim/delivery), with `--delivery`.
 *
 * Runs seeds `first … first + N − 1` (or the `--seed`s given) of the seeded simulation and ends with
 * the line `N passed, N failed`; exits 1 if any seed failed. `--verbose` prints every seed's schedule
 * and run, not only failed ones'; `--keep-db` keeps each seed's database for a look afterwards.
 */
import { parseArgs } from 'node:util'
import { startVitest } from 'vitest/node'
import type { Reporter, TestModule } from 'vitest/node'

/** Seeds a run takes by default: about ten minutes on a 2-core machine (test/sim/README.md). */
const DEFAULT_SEEDS = 10
/** The delivery simulation's default: about 4 minutes on a 2-core machine. */
const DEFAULT_DELIVERY_SEEDS = 3

const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    first: { type: 'string', default: '1' },
    seed: { type: 'string', multiple: true, default: [] },
    verbose: { type: 'boolean', default: false },
    'keep-db': { type: 'boolean', default: false },
    delivery: { type: 'boolean', default: false },
  },
  strict: true,
})
const count = Number(values.seeds ?? (values.delivery ? DEFAULT_DELIVERY_SEEDS : DEFAULT_SEEDS))
const first = Number(values.first)
const seeds = values.seed.length > 0 ? values.seed.map(Number) : Array.from({ length: count }, (_, i) => first + i)
if (seeds.some((s) => !Number.isSafeInteger(s) || s < 0)) {
  process.stderr.write('usage: npm run test:sim -- [--seeds N] [--first S] [--seed S]... [--verbose] [--keep-db]\n')
  process.exit(2)
}
process.env.SIM_SEEDS = seeds.join(',')
if (values.verbose) process.env.SIM_VERBOSE = '1'
if (values['keep-db']) process.env.SIM_KEEP_DB = '1'

let passed = 0
let failed = 0
const tally: Reporter = {
  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        if (test.result().state === 'passed') passed++
        else failed++
      }
    }
  },
}
const vitest = await startVitest('test', [], {
  config: values.delivery ? 'test/sim/delivery/vitest.config.ts' : 'test/sim/vitest.config.ts',
  watch: false,
  reporters: ['default', tally],
})
await vitest?.close()
// Seeds that never reported (a crash of the run itself) count as failed.
failed = Math.max(failed, seeds.length - passed)
process.stdout.write(`\n${passed} passed, ${failed} failed\n`)
process.exit(failed > 0 ? 1 : 0)
