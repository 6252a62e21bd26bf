/**
 * API latency with many attributions stored: `harness/bench/seedAttributions.ts` fills a fresh database
 * (or `seededDatabase`, kept for the next run, which reuses it once it holds attributions), then
 * `harness/bench/apiLoad.ts --json` runs concurrent clients over many codes against it; this reads the
 * figures from its output.
 */
import pg from 'pg'
import type { ApiBenchOutput } from './apiLoad.js'
import { spawnNode } from '../processes.js'
import { createBenchDatabase, databaseUrlFor } from '../services.js'

/** The names `seededDatabase` may take: the bench's own. */
const SEEDED_DATABASE = /^codetrail_bench_[a-z0-9_]+$/

export type ApiRun = ApiBenchOutput & {
  /** Time the seeding took; null when the run reused a seeded database. */
  seedMs: number | null
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
  /** A database `codetrail_bench_…` to seed once (created if missing) and keep; by default a fresh one, dropped after. */
  seededDatabase?: string
  say: (message: string) => void
}

export async function runApiLatency(parameters: ApiRunParameters): Promise<ApiRun> {
  const { adminDatabaseUrl, rows, clients, codes, sessions, pages, seededDatabase, say } = parameters
  if (seededDatabase !== undefined && !SEEDED_DATABASE.test(seededDatabase))
    throw new Error(`--api-db must name a database codetrail_bench_<letters, digits, _>, got ${JSON.stringify(seededDatabase)}`)
  const db: ApiDatabase =
    seededDatabase === undefined
      ? await createBenchDatabase(adminDatabaseUrl, 'api').then((fresh) => ({ ...fresh, attributions: async () => 0 }))
      : await keptDatabase(adminDatabaseUrl, seededDatabase)
  try {
    const env = { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }
    let seedMs: number | null = null
    const held = await db.attributions()
    if (held > 0) say(`  reusing ${held.toLocaleString('en-US')} attributions seeded in ${seededDatabase}`)
    else {
      const started = performance.now()
      let lastProgress = 0
      await run('harness/bench/seedAttributions.ts', ['--rows', String(rows)], env, (line) => {
        if (performance.now() - lastProgress > 30_000 || line.startsWith('done')) {
          lastProgress = performance.now()
          say(`  ${line}`)
        }
      })
      seedMs = performance.now() - started
    }
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

type ApiDatabase = { url: string; attributions: () => Promise<number>; drop: () => Promise<void> }

/** The attributions a database holds (0 before its migrations). */
async function attributionsIn(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    // Two statements: a query naming a missing table fails when parsed, whatever guards it.
    const { rows } = await client.query<{ present: boolean }>(`SELECT to_regclass('attributions') IS NOT NULL AS present`)
    if (!rows[0]!.present) return 0
    const counted = await client.query<{ n: string }>('SELECT count(*) AS n FROM attributions')
    return Number(counted.rows[0]!.n)
  } finally {
    await client.end()
  }
}

/** The database `name`, created if missing; kept afterwards. */
async function keptDatabase(adminUrl: string, name: string): Promise<ApiDatabase> {
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (rowCount === 0) await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = databaseUrlFor(adminUrl, name)
  return { url, attributions: () => attributionsIn(url), drop: async () => {} }
}

async function run(entry: string, args: string[], env: Record<string, string>, onLine: (line: string) => void): Promise<void> {
  const child = spawnNode({ entry, args, env, onStdoutLine: onLine })
  const code = await child.exited
  if (code !== 0) throw new Error(`${entry} exited with ${code}:\n${child.stderrTail()}`)
}
