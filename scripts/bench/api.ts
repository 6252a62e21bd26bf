/**
 * API latency with many attributions stored: `scripts/seed-attributions.ts` fills a fresh database,
 * then `scripts/bench-api.ts` times the attribution routes; this reads the figures from its output.
 */
import { spawnNode } from './processes.js'
import { createBenchDatabase } from './services.js'

export type ApiRoute = { route: string; p50Ms: number; p99Ms: number; requests: number }

export type ApiRun = {
  rows: number
  seedMs: number
  routes: ApiRoute[]
  /** The slowest route's figures: the highest p50 and the highest p99 over the routes. */
  p50Ms: number
  p99Ms: number
}

export type ApiRunParameters = { adminDatabaseUrl: string; rows: number; requests: number; say: (message: string) => void }

const ROUTE_LINE = /^(GET .*?)\s+p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms\s+\(n=(\d+)\)$/

export async function runApiLatency({ adminDatabaseUrl, rows, requests, say }: ApiRunParameters): Promise<ApiRun> {
  const db = await createBenchDatabase(adminDatabaseUrl, 'api')
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    const started = performance.now()
    let lastProgress = 0
    await run('scripts/seed-attributions.ts', ['--rows', String(rows)], env, (line) => {
      if (performance.now() - lastProgress > 30_000 || line.startsWith('done')) {
        lastProgress = performance.now()
        say(`  ${line}`)
      }
    })
    const seedMs = performance.now() - started
    const routes: ApiRoute[] = []
    await run('scripts/bench-api.ts', ['--requests', String(requests)], env, (line) => {
      const match = ROUTE_LINE.exec(line.trim())
      if (match) routes.push({ route: match[1]!.trim(), p50Ms: Number(match[2]), p99Ms: Number(match[3]), requests: Number(match[4]) })
    })
    if (routes.length === 0) throw new Error('scripts/bench-api.ts printed no route figures')
    return {
      rows,
      seedMs,
      routes,
      p50Ms: Math.max(...routes.map((r) => r.p50Ms)),
      p99Ms: Math.max(...routes.map((r) => r.p99Ms)),
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
