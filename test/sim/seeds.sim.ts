/**
 * The seeded simulation as vitest cases, one per seed of `SIM_SEEDS` (set by test/sim/run.ts).
 * Run: npm run test:sim [-- --seeds N | --seed S] [--verbose]
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { startPrivateRedis, type PrivateRedis } from '../faults/helpers/privateServices.js'
import { formatReport, runSeed } from './seed.js'

const SEED_TIMEOUT_MS = 600_000
const seeds = (process.env.SIM_SEEDS ?? '1').split(',').map(Number)

let redis: PrivateRedis
beforeAll(async () => {
  redis = await startPrivateRedis()
})
afterAll(() => redis?.stop())

describe('seeded simulation: every filter equals the node', () => {
  for (const seed of seeds) {
    it(
      `seed ${seed}`,
      async () => {
        const result = await runSeed(seed, redis)
        if (result.differences.length > 0) throw new Error(formatReport(result))
        console.info(process.env.SIM_VERBOSE ? formatReport(result) : `seed ${seed} passed in ${result.seconds.toFixed(0)} s`)
      },
      SEED_TIMEOUT_MS,
    )
  }
})
