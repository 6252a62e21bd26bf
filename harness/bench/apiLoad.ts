/**
 * API latency and throughput with many attributions stored, as concurrent users meet them: `--clients`
 * clients, each over its own keep-alive connection, run sessions over `--codes` builder codes picked
 * evenly by rank from the seeded ones (hot to cold). A session pages through a code's attributions
 * (`GET /v1/attributions?builderCode=…`, then `nextCursor` for up to `--pages` pages in all), opens the
 * first page's first transaction (`GET /v1/transactions/{hash}/attribution`) and the code's record
 * (`GET /v1/builder-codes/{code}`), then asks for its stats by day and by hour; every fifth also asks for
 * the leaderboard. Latency p50/p99 per route
 * and over all requests, and requests per second, after `--warmup` sessions: a server's first seconds
 * (its routes compiled, its heap growing to its working size through scavenges of 15–30 ms) are not
 * the steady state users meet on one that has been up. The API runs in
 * a child process (this script with `--serve`: its own pool, default statement timeout, no rate limit),
 * as it would apart from its users, so the clients' own parsing never holds up its event loop;
 * DATABASE_URL names the database. `--cpu-prof-dir` has the API process write a V8 CPU profile there.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/codetrail_bench \
 *     node --import tsx harness/bench/seedAttributions.ts --rows 10000000
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/codetrail_bench \
 *     node --import tsx harness/bench/apiLoad.ts [--clients 8] [--codes 100] [--warmup 200] [--sessions 1000] [--pages 5] [--chain-id 8453] [--json] [--cpu-prof-dir <dir>]
 */
import { Agent, request } from 'node:http'
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { createApi } from '../../src/api/index.js'
import { loadConfig } from '../../src/config/index.js'
import { silentLogger } from '../../src/internal/logger.js'
import { createStore } from '../../src/store/index.js'
import { seededRandom } from '../random.js'
import { spawnNode } from '../processes.js'
import { cpuSecondsOf, postgresCpuSecondsOf } from './processStats.js'
import { percentile } from './report.js'

const UNLIMITED = 1_000_000_000
/** Every this many sessions also ask for the leaderboard. */
const LEADERBOARD_EVERY = 5

const API_ROUTES = {
  firstPage: 'GET /v1/attributions?builderCode= (first page)',
  nextPage: 'GET /v1/attributions?builderCode=&cursor= (next pages)',
  statsByDay: 'GET /v1/builder-codes/{code}/stats (30 days by day)',
  statsByHour: 'GET /v1/builder-codes/{code}/stats?interval=hour (7 days)',
  leaderboard: 'GET /v1/leaderboard (24 hours)',
  transaction: 'GET /v1/transactions/{hash}/attribution (one of the first page)',
  builderCode: 'GET /v1/builder-codes/{code}',
} as const

export type ApiRouteFigures = { route: string; requests: number; p50Ms: number; p99Ms: number; maxMs: number }

/** What `--json` prints, on one line. */
export type ApiBenchOutput = {
  rows: number
  /** Codes seeded, codes used, and the rows of the hottest, median and coldest of those used. */
  codes: { seeded: number; used: number; hottestRows: number; medianRows: number; coldestRows: number }
  clients: number
  /** Sessions run before measuring. */
  warmup: number
  sessions: number
  requests: number
  seconds: number
  requestsPerSec: number
  overall: { p50Ms: number; p99Ms: number }
  routes: ApiRouteFigures[]
  /** CPU per request over the measured sessions: the API process, and the database's PostgreSQL backends. */
  cpuMsPerRequest: { api: number; postgres: number }
  /** The PostgreSQL measured: its version, and its `shared_buffers`, which decides whether a page's rows are in its cache. */
  postgres: { version: string; sharedBuffers: string }
}

const LISTENING = 'listening '
const SERVER_START_TIMEOUT_MS = 60_000

await main()

/** `--serve`: the API on a free port, its address printed as `listening <url>`, until SIGTERM. */
async function serve(chainId: number): Promise<void> {
  const config = loadConfig()
  const api = await createApi({
    config: { ...config, port: 0, adminUi: false },
    chainId,
    logger: silentLogger,
    rateLimit: UNLIMITED,
    dbPoolSize: config.apiDbPoolSize,
    host: '127.0.0.1',
  })
  process.once('SIGTERM', () => void api.close().then(() => process.exit(0)))
  process.stdout.write(`${LISTENING}${await api.listen()}\n`)
}

/** This script with `--serve` as a child process; resolves to its address once it listens. */
async function startServer(chainId: number, cpuProfileDir?: string): Promise<{ base: string; pid: number; stop: () => Promise<unknown> }> {
  let listening: (base: string) => void
  const base = new Promise<string>((resolve) => (listening = resolve))
  const server = spawnNode({
    entry: 'harness/bench/apiLoad.ts',
    args: ['--serve', '--chain-id', String(chainId)],
    env: {},
    nodeFlags: cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`],
    onStdoutLine: (line) => line.startsWith(LISTENING) && listening(line.slice(LISTENING.length)),
  })
  let timer: NodeJS.Timeout | undefined
  const failed = new Promise<never>((_, reject) => {
    void server.exited.then((code) => reject(new Error(`the API server exited with ${code}:\n${server.stderrTail()}`)))
    timer = setTimeout(
      () => reject(new Error(`the API server did not listen within ${SERVER_START_TIMEOUT_MS} ms:\n${server.stderrTail()}`)),
      SERVER_START_TIMEOUT_MS,
    )
  })
  try {
    return { base: await Promise.race([base, failed]), pid: server.pid, stop: () => server.kill() }
  } catch (error) {
    await server.kill()
    throw error
  } finally {
    clearTimeout(timer)
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      clients: { type: 'string', default: '8' },
      codes: { type: 'string', default: '100' },
      warmup: { type: 'string', default: '200' },
      sessions: { type: 'string', default: '1000' },
      pages: { type: 'string', default: '5' },
      'chain-id': { type: 'string', default: '8453' },
      json: { type: 'boolean', default: false },
      'cpu-prof-dir': { type: 'string' },
      serve: { type: 'boolean', default: false },
    },
    strict: true,
  })
  if (values.serve) return serve(positive('chain-id', values['chain-id']))
  const clients = positive('clients', values.clients)
  const codeCount = positive('codes', values.codes)
  const warmup = positive('warmup', values.warmup)
  const sessions = positive('sessions', values.sessions)
  const pages = positive('pages', values.pages)
  const chainId = positive('chain-id', values['chain-id'])

  const config = loadConfig()
  const store = createStore({ databaseUrl: config.databaseUrl, max: 1, applicationName: 'codetrail-bench' })
  let seeded: { builder_code: string; n: string }[]
  let postgres: ApiBenchOutput['postgres']
  try {
    ;({ rows: seeded } = await store.pool.query<{ builder_code: string; n: string }>(
      `SELECT builder_code, count(*)::int8 AS n FROM attributions WHERE chain_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1`,
      [chainId],
    ))
    postgres = (
      await store.pool.query<ApiBenchOutput['postgres']>(
        `SELECT split_part(current_setting('server_version'), ' ', 1) AS version, current_setting('shared_buffers') AS "sharedBuffers"`,
      )
    ).rows[0]!
  } finally {
    await store.close()
  }
  if (seeded.length < codeCount) {
    process.stderr.write(
      `bench-api: ${seeded.length} codes hold attributions on chain ${chainId}, ${codeCount} wanted; run harness/bench/seedAttributions.ts first\n`,
    )
    process.exit(1)
  }
  const rows = seeded.reduce((sum, code) => sum + Number(code.n), 0)
  // Evenly by rank, from the hottest code to the coldest ones; int8 counts arrive as strings.
  const used = Array.from({ length: codeCount }, (_, i) => seeded[Math.floor((i * seeded.length) / codeCount)]!)
  const random = seededRandom(50)
  const order = used
    .map((code) => ({ code, key: random() }))
    .sort((a, b) => a.key - b.key)
    .map(({ code }) => code.builder_code)

  const server = await startServer(chainId, values['cpu-prof-dir'])
  const base = server.base

  const agents = Array.from({ length: clients }, () => new Agent({ keepAlive: true, maxSockets: 1 }))
  const samples: { route: string; ms: number }[] = []
  let measuring = false

  async function get(agent: Agent, route: string, path: string): Promise<string> {
    const begun = performance.now()
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      request(`${base}${path}`, { agent }, (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }))
        response.on('error', reject)
      })
        .on('error', reject)
        .end()
    })
    const ms = performance.now() - begun
    if (status !== 200) throw new Error(`${path} answered ${status}: ${body.slice(0, 200)}`)
    if (measuring) samples.push({ route, ms })
    return body
  }

  /**
   * A page's `nextCursor` (after the items, a base64url string or null), read without parsing the page:
   * the clients share the API's cores, and what they spend parsing 100 items per page the API would not.
   */
  const nextCursorOf = (page: string): string | null => {
    const cursor = /"nextCursor":(null|"[\w-]*")/.exec(page.slice(page.lastIndexOf('"nextCursor":')))
    if (!page.startsWith('{"items":[') || !cursor) throw new Error(`not an attribution page: ${page.slice(0, 200)}`)
    return JSON.parse(cursor[1]!) as string | null
  }

  /** The first item's `txHash` of an attribution page, read as `nextCursorOf` reads the cursor. */
  const firstTransactionOf = (page: string): string => {
    const hash = /^\{"items":\[\{[^{}]*?"txHash":"(0x[0-9a-f]{64})"/.exec(page)
    if (!hash) throw new Error(`no transaction on the attribution page: ${page.slice(0, 200)}`)
    return hash[1]!
  }

  /** One user's look at a code: its attributions page after page, one transaction and the code's record, then its stats. */
  async function session(agent: Agent, index: number): Promise<void> {
    const code = order[index % order.length]!
    const list = `/v1/attributions?builderCode=${code}`
    const first = await get(agent, API_ROUTES.firstPage, list)
    let cursor = nextCursorOf(first)
    for (let page = 1; page < pages && cursor; page++)
      cursor = nextCursorOf(await get(agent, API_ROUTES.nextPage, `${list}&cursor=${cursor}`))
    await get(agent, API_ROUTES.transaction, `/v1/transactions/${firstTransactionOf(first)}/attribution`)
    await get(agent, API_ROUTES.builderCode, `/v1/builder-codes/${code}`)
    await get(agent, API_ROUTES.statsByDay, `/v1/builder-codes/${code}/stats`)
    await get(agent, API_ROUTES.statsByHour, `/v1/builder-codes/${code}/stats?interval=hour`)
    if (index % LEADERBOARD_EVERY === LEADERBOARD_EVERY - 1) await get(agent, API_ROUTES.leaderboard, '/v1/leaderboard')
  }

  /** Runs sessions `first`… up to `last` (exclusive), each client taking the next one free. */
  async function run(first: number, last: number): Promise<void> {
    let next = first
    await Promise.all(
      agents.map(async (agent) => {
        while (next < last) await session(agent, next++)
      }),
    )
  }

  let output: ApiBenchOutput
  try {
    // Warm-up, over the codes the measured sessions visit again.
    await run(0, warmup)
    const database = new URL(config.databaseUrl).pathname.slice(1)
    const cpu = () => ({ api: cpuSecondsOf(server.pid) ?? 0, postgres: postgresCpuSecondsOf(database) })
    measuring = true
    const cpuBefore = cpu()
    const begun = performance.now()
    await run(warmup, warmup + sessions)
    const seconds = (performance.now() - begun) / 1000
    const cpuAfter = cpu()
    measuring = false

    const figures = (route: string, times: number[]): ApiRouteFigures => {
      const sorted = times.sort((a, b) => a - b)
      return { route, requests: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted.at(-1)! }
    }
    const routes = Object.values(API_ROUTES)
      .map((route) =>
        figures(
          route,
          samples.filter((s) => s.route === route).map((s) => s.ms),
        ),
      )
      .filter((r) => r.requests > 0)
    const overall = figures(
      'all',
      samples.map((s) => s.ms),
    )
    output = {
      rows,
      codes: {
        seeded: seeded.length,
        used: used.length,
        hottestRows: Number(used[0]!.n),
        medianRows: Number(used[Math.floor(used.length / 2)]!.n),
        coldestRows: Number(used.at(-1)!.n),
      },
      clients,
      warmup,
      sessions,
      requests: samples.length,
      seconds,
      requestsPerSec: samples.length / seconds,
      overall: { p50Ms: overall.p50Ms, p99Ms: overall.p99Ms },
      routes,
      cpuMsPerRequest: {
        api: ((cpuAfter.api - cpuBefore.api) * 1000) / samples.length,
        postgres: ((cpuAfter.postgres - cpuBefore.postgres) * 1000) / samples.length,
      },
      postgres,
    }
  } finally {
    for (const agent of agents) agent.destroy()
    await server.stop()
  }

  if (values.json) {
    process.stdout.write(`${JSON.stringify(output)}\n`)
    return
  }
  const count = (n: number) => Math.round(n).toLocaleString('en-US')
  const ms = (n: number) => `${n.toFixed(2).padStart(8)} ms`
  process.stdout.write(
    `${[
      `codetrail API bench: ${count(rows)} attributions on chain ${chainId}; PostgreSQL ${postgres.version} (shared_buffers ${postgres.sharedBuffers}); ${cpus().length} cores`,
      `${clients} clients, each its own keep-alive connection; ${sessions} sessions over ${used.length} of ${seeded.length} codes ` +
        `(rows per code: hottest ${count(output.codes.hottestRows)}, median ${count(output.codes.medianRows)}, coldest ${count(output.codes.coldestRows)}), up to ${pages} pages each`,
      ...output.routes.map((r) => `${r.route.padEnd(64)} p50 ${ms(r.p50Ms)}   p99 ${ms(r.p99Ms)}   max ${ms(r.maxMs)}   (n=${r.requests})`),
      `${'all requests'.padEnd(64)} p50 ${ms(output.overall.p50Ms)}   p99 ${ms(output.overall.p99Ms)}   ${count(output.requestsPerSec)} requests/s (${output.requests} in ${output.seconds.toFixed(1)} s)`,
      `CPU per request: API process ${output.cpuMsPerRequest.api.toFixed(2)} ms, PostgreSQL backends ${output.cpuMsPerRequest.postgres.toFixed(2)} ms`,
    ].join('\n')}\n`,
  )
}

function positive(name: string, value: string): number {
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n <= 0) {
    process.stderr.write(`bench-api: --${name} must be a positive integer, got ${JSON.stringify(value)}\n`)
    process.exit(2)
  }
  return n
}
