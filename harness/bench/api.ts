/**
 * API latency with many attributions stored: `harness/bench/seedAttributions.ts` fills a fresh database,
 * then `harness/bench/apiLoad.ts --json` runs concurrent clients over many codes against it; this reads the
 * figures from its output.
 */
import type { ApiBenchOutput } from './apiLoad.js'
import { spawnNode } from '../processes.js'
import { createBenchDatabase } from '../services.js'

export type ApiRun = ApiBenchOutput & {
  seedMs: number
  /** The slowest route's figures: the highest p50 and the highest p99 over the routes. */
  p50Ms: number
  p99Ms: number
}

export type ApiRunParameters = {
  adminDatabaseUrl: string
  rows: number
  clients: number
  codes: number
  sessions: number
  pages: number
  say: (message: string) => void
}

export async function runApiLatency({ adminDatabaseUrl, rows, clients, codes, sessions, pages, say }: ApiRunParameters): Promise<ApiRun> {
  const db = await createBenchDatabase(adminDatabaseUrl, 'api')
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    const started = performance.now()
    let lastProgress = 0
    await run('harness/bench/seedAttributions.ts', ['--rows', String(rows)], env, (line) => {
      if (performance.now() - lastProgress > 30_000 || line.startsWith('done')) {
        lastProgress = performance.now()
        say(`  ${line}`)
      }
    })
    const seedMs = performance.now() - started
    say(`  ${clients} clients over ${codes} codes, ${sessions} sessions of up to ${pages} pages and the stats…`)
    let output: ApiBenchOutput | undefined
    const args = [
      '--clients',
      String(clients),
      '--codes',
      String(codes),
      '--sessions',
      String(sessions),
      '--pages',
      String(pages),
      '--json',
    ]
    await run('harness/bench/apiLoad.ts', args, env, (line) => {
      if (line.startsWith('{')) output = JSON.parse(line) as ApiBenchOutput
    })
    if (!output || output.routes.length === 0) throw new Error('harness/bench/apiLoad.ts printed no figures')
    return {
      ...output,
      seedMs,
      p50Ms: Math.max(...output.routes.map((r) => r.p50Ms)),
      p99Ms: Math.max(...output.routes.map((r) => r.p99Ms)),
    }
  } finally {
    await db.drop().catch(() => {})
  }
}

async function run(entry: string, args: string[], env: Record<string, string>, onLine: (line: string) => void): Promise<void> {
  const child = spawnNode({ entry, args, env, onStdoutLine: onLine })
  const code = await child.exited
  if (code !== 0) throw new Error(`${entry} exited with ${code}:\n${child.stderrTail()}`)
}
