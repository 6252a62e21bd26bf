/**
 * npm run test:sim [-- --seeds N] [--first S] [--seed S]...
 *
 * Runs seeds `first … first + N − 1` (or the `--seed`s given) of the seeded simulation and ends with
 * the line `N passed, N failed`; exits 1 if any seed failed.
 */
import { parseArgs } from 'node:util'
import { startVitest } from 'vitest/node'
import type { Reporter, TestModule } from 'vitest/node'

/** Seeds a run takes by default: about ten minutes on a 2-core machine (test/sim/README.md). */
const DEFAULT_SEEDS = 8

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: String(DEFAULT_SEEDS) },
    first: { type: 'string', default: '1' },
    seed: { type: 'string', multiple: true, default: [] },
  },
  strict: true,
})
const count = Number(values.seeds)
const first = Number(values.first)
const seeds = values.seed.length > 0 ? values.seed.map(Number) : Array.from({ length: count }, (_, i) => first + i)
if (seeds.some((s) => !Number.isSafeInteger(s) || s < 0)) {
  process.stderr.write('usage: npm run test:sim -- [--seeds N] [--first S] [--seed S]...\n')
  process.exit(2)
}
process.env.SIM_SEEDS = seeds.join(',')

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
const vitest = await startVitest('test', [], { config: 'test/sim/vitest.config.ts', watch: false, reporters: ['default', tally] })
await vitest?.close()
// Seeds that never reported (a crash of the run itself) count as failed.
failed = Math.max(failed, seeds.length - passed)
process.stdout.write(`\n${passed} passed, ${failed} failed\n`)
process.exit(failed > 0 ? 1 : 0)
