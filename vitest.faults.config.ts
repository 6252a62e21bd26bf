import { defineConfig } from 'vitest/config'

/**
 * The fault suite (`npm run test:faults`): processes killed, services restarted, a faulty or absent
 * node, reorgs and pending churn. Files run one after another, one fork at a time: each case starts its
 * own daemons, node and sometimes private PostgreSQL/Redis servers, and the machine has two cores.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 240_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    sequence: { concurrent: false },
    reporters: ['verbose', './test/helpers/summaryReporter.ts'],
  },
})
