/**
 * API latency with many attributions stored: p50/p99 of `GET /v1/attributions?builderCode=…` and of
 * `GET /v1/builder-codes/{code}/stats`, sequential requests over one keep-alive connection to an API
 * started in this process (its own pool, default statement timeout), against DATABASE_URL.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/codetrail_bench \
 *     node --import tsx scripts/seed-attributions.ts --rows 10000000
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/codetrail_bench \
 *     node --import tsx scripts/bench-api.ts [--requests 300] [--chain-id 8453]
 */
import { Agent, request } from 'node:http'
import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { createApi } from '../src/api/index.js'
import { loadConfig } from '../src/config/index.js'
import { silentLogger } from '../src/logger.js'
import { createStore } from '../src/store/index.js'

const WARMUP_REQUESTS = 20
const UNLIMITED = 1_000_000_000

const { values } = parseArgs({
  options: { requests: { type: 'string', default: '300' }, 'chain-id': { type: 'string', default: '8453' } },
  strict: true,
})
const requests = Number(values.requests)
const chainId = Number(values['chain-id'])
if (!Number.isSafeInteger(requests) || requests < 1 || !Number.isSafeInteger(chainId) || chainId < 1) {
  process.stderr.write('bench-api: --requests and --chain-id must be positive integers\n')
  process.exit(2)
}

const config = loadConfig()
const store = createStore({ databaseUrl: config.databaseUrl, max: 1, applicationName: 'codetrail-bench' })
const { rows: info } = await store.pool.query<{ rows: number; version: string }>(
  `SELECT (SELECT count(*) FROM attributions WHERE chain_id = $1)::int8 AS rows, current_setting('server_version') AS version`,
  [chainId],
)
const { rows: codes } = await store.pool.query<{ builder_code: string; n: number }>(
  `SELECT builder_code, count(*)::int8 AS n FROM attributions WHERE chain_id = $1 GROUP BY 1 ORDER BY 2 DESC`,
  [chainId],
)
await store.close()
if (codes.length === 0) {
  process.stderr.write(`bench-api: no attributions for chain ${chainId}; run scripts/seed-attributions.ts first\n`)
  process.exit(1)
}
const hot = codes[0]!
const median = codes[Math.floor(codes.length / 2)]!

const api = await createApi({
  config: { ...config, port: 0, adminUi: false },
  chainId,
  logger: silentLogger,
  rateLimit: UNLIMITED,
  host: '127.0.0.1',
})
const base = await api.listen()
const agent = new Agent({ keepAlive: true, maxSockets: 1 })

function get(path: string): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    request(`${base}${path}`, { agent }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk) => (body += chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body, ms: performance.now() - started }))
    })
      .on('error', reject)
      .end()
  })
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/** Times `count` sequential requests; `next` gives each path (and may follow the previous answer). */
async function measure(label: string, next: (previous: string | undefined) => string): Promise<void> {
  let previous: string | undefined
  const times: number[] = []
  for (let i = 0; i < WARMUP_REQUESTS + requests; i++) {
    const path = next(previous)
    const answer = await get(path)
    if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}: ${answer.body.slice(0, 200)}`)
    previous = answer.body
    if (i >= WARMUP_REQUESTS) times.push(answer.ms)
  }
  times.sort((a, b) => a - b)
  const line = `${label.padEnd(72)} p50 ${percentile(times, 50).toFixed(2).padStart(8)} ms   p99 ${percentile(times, 99).toFixed(2).padStart(8)} ms   (n=${times.length})`
  process.stdout.write(`${line}\n`)
}

/** Follows nextCursor page after page, starting over at the end. */
function walk(path: string) {
  return (previous: string | undefined) => {
    const cursor = previous ? (JSON.parse(previous) as { nextCursor: string | null }).nextCursor : null
    return cursor ? `${path}&cursor=${cursor}` : path
  }
}

const count = (n: number) => n.toLocaleString('en-US')
process.stdout.write(
  `codetrail API bench: ${count(info[0]!.rows)} attributions on chain ${chainId}, ${codes.length} codes; PostgreSQL ${info[0]!.version}; ${cpus().length} cores\n` +
    `hot code ${hot.builder_code} (${count(hot.n)} rows), median code ${median.builder_code} (${count(median.n)} rows); ${WARMUP_REQUESTS} warm-up requests each\n`,
)
try {
  await measure(`GET /v1/attributions?builderCode=<hot> (first page, limit 100)`, () => `/v1/attributions?builderCode=${hot.builder_code}`)
  await measure(`GET /v1/attributions?builderCode=<median> (first page, limit 100)`, () => `/v1/attributions?builderCode=${median.builder_code}`)
  await measure(`GET /v1/attributions?builderCode=<hot>&cursor=… (walking pages)`, walk(`/v1/attributions?builderCode=${hot.builder_code}&limit=100`))
  await measure(`GET /v1/builder-codes/<hot>/stats (30 days by day)`, () => `/v1/builder-codes/${hot.builder_code}/stats`)
  await measure(`GET /v1/builder-codes/<median>/stats (30 days by day)`, () => `/v1/builder-codes/${median.builder_code}/stats`)
  await measure(`GET /v1/builder-codes/<hot>/stats?interval=hour (7 days)`, () => `/v1/builder-codes/${hot.builder_code}/stats?interval=hour`)
} finally {
  agent.destroy()
  await api.close()
}
