import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

/** The seeded simulation (test/sim/run.ts): seeds one after another in a single fork, each with its own node, daemon and backfills. */
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['test/sim/seeds.sim.ts'],
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    sequence: { concurrent: false },
  },
})
