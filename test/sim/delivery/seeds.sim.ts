/**
 * The delivery simulation as vitest cases, one per seed of `SIM_SEEDS` (set by test/sim/run.ts --delivery).
 * Run: npm run test:sim:delivery [-- --seeds N | --seed S] [--verbose]
 */
import { afterAll, beforeAll, describe, it } from 'vitest'
import { startPrivateRedis, type PrivateRedis } from '../../faults/helpers/privateServices.js'
import { formatReport } from '../seed.js'
import { runDeliverySeed } from './seed.js'

const SEED_TIMEOUT_MS = 600_000
const seeds = (process.env.SIM_SEEDS ?? '1').split(',').map(Number)

let redis: PrivateRedis
beforeAll(async () => {
  redis = await startPrivateRedis()
})
afterAll(() => redis?.stop())

describe('delivery simulation: every receiver and stream client holds exactly the events the chain implies', () => {
  for (const seed of seeds) {
    it(
      `seed ${seed}`,
      async () => {
        const result = await runDeliverySeed(seed, redis)
        const report = formatReport(result).replace('npm run test:sim --', 'npm run test:sim:delivery --')
        if (result.differences.length > 0) throw new Error(report)
        console.info(process.env.SIM_VERBOSE ? report : `seed ${seed} passed in ${result.seconds.toFixed(0)} s`)
      },
      SEED_TIMEOUT_MS,
    )
  }
})
