import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

/** The delivery simulation (test/sim/run.ts --delivery): seeds one after another in a single fork. */
export default defineConfig({
  root: fileURLToPath(new URL('../../..', import.meta.url)),
  test: {
    include: ['test/sim/delivery/seeds.sim.ts'],
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    sequence: { concurrent: false },
  },
})
