/**
 * Start-up time of the daemon (`--role all`) from spawn to the first 200 from `/healthz`: TypeScript
 * through tsx against the compiled JavaScript of `dist/` (`npm run build` first), alternating runs
 * against one node and one migrated database, so both pay the same no-op migration.
 *
 *   npm run build && node --import tsx harness/bench/startup.ts [--runs 5]
 */
import { spawn } from 'node:child_process'
import { parseArgs } from 'node:util'
import { freePort, startAnvil } from '../devnet/anvil.js'
import { createStore, runMigrations } from '../../src/store/index.js'
import { ROOT } from '../processes.js'
import { cpuSecondsOf } from './processStats.js'
import { createBenchDatabase, createRedisPrefix } from '../services.js'
import { sleep } from '../../src/utils/loop.js'

const POLL_MS = 10
const VARIANTS = {
  tsx: ['--import', 'tsx', 'src/main.ts'],
  compiled: ['dist/src/main.js'],
} as const

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } })
const runs = Number(values.runs)
const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Milliseconds from spawning the daemon to its first healthy answer, and the CPU seconds it spent by then; the daemon is stopped afterwards. */
async function timeToHealthy(nodeArgs: readonly string[], env: Record<string, string>): Promise<{ ms: number; cpuSeconds: number }> {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, nodeArgs, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the daemon exited with ${child.exitCode} before it was healthy`)
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.ok,
        () => false,
      )
      if (ok) return { ms: performance.now() - started, cpuSeconds: cpuSecondsOf(child.pid!) ?? Number.NaN }
      await sleep(POLL_MS)
    }
  } finally {
    child.kill('SIGTERM')
    await exited
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const anvil = await startAnvil()
const db = await createBenchDatabase(adminUrl, 'startup')
const redis = createRedisPrefix(redisUrl, 'ct_bench_startup')
try {
  const store = createStore({ databaseUrl: db.url, max: 1 })
  await runMigrations(store.pool).finally(() => store.close())
  const env = {
    RPC_URL: anvil.url,
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: '0',
    PENDING_POLL_MS: '0',
  }
  const results: Record<keyof typeof VARIANTS, { ms: number; cpuSeconds: number }[]> = { tsx: [], compiled: [] }
  for (let run = 0; run < runs; run++) {
    for (const variant of Object.keys(VARIANTS) as (keyof typeof VARIANTS)[])
      results[variant].push(await timeToHealthy(VARIANTS[variant], env))
  }
  process.stdout.write(`node ${process.version}, ${runs} runs each, from spawn to the first 200 from /healthz\n`)
  for (const [variant, runsOf] of Object.entries(results)) {
    const ms = runsOf.map((run) => run.ms)
    const cpu = median(runsOf.map((run) => run.cpuSeconds))
    process.stdout.write(
      `${variant.padEnd(9)} median ${median(ms).toFixed(0)} ms (min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)}), median CPU ${cpu.toFixed(2)} s\n`,
    )
  }
} finally {
  await redis.cleanup()
  await db.drop()
  await anvil.stop()
}
