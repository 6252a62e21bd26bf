import type { Reporter, TestModule } from 'vitest/node'

/** Ends the run with one plain `tests: N passed, N failed` line, readable by any CI that greps for it. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === 'passed') passed++
        else if (state === 'failed') failed++
        else skipped++
      }
    }
    // After vitest's own summary, which it prints once every reporter has had this hook.
    const line = `tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`
    process.once('beforeExit', () => process.stdout.write(`\n${line}\n`))
  }
}
