/**
 * Webhook delivery latency: this process commits attributions at a steady rate (the outbox trigger
 * records their events), the daemon (`--role all`: dispatcher and delivery worker) delivers them to a
 * receiver here, and each event's latency is from its transaction's COMMIT returning to the receiver
 * answering 2xx. Beside it: a bare sequential HTTP POST loop to the same receiver, and the cost of the
 * outbox trigger on a backfill-sized COPY (the same COPY with the trigger disabled).
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { startAnvil } from '../../src/devnet/index.js'
import { createWebhookQueue } from '../../src/queue/index.js'
import { runMigrations, withTransaction } from '../../src/store/index.js'
import { upsertAttributions, type TransactionPosition } from '../../src/store/attributions.js'
import { sleep } from '../../src/utils/loop.js'
import { percentile } from './report.js'
import { COMPILED_ENTRIES, cpuSecondsOf, postgresCpuSecondsOf, spawnNode } from './processes.js'
import { createBenchDatabase, createBenchRedisPrefix } from './services.js'

const ADMIN_TOKEN = 'bench-admin-token-0123456789'
/** Commits per second; each carries `eventsPerSec / COMMITS_PER_SEC` attributions. */
const COMMITS_PER_SEC = 20
const DRAIN_TIMEOUT_MS = 30_000
const BARE_POST_MS = 3_000
const CHAIN_ID = 31337
const TRIGGER_ROUNDS = 2
const SENDER = `0x${'5e'.repeat(20)}`

export type WebhookRunParameters = {
  adminDatabaseUrl: string
  redisUrl: string
  eventsPerSec: number
  durationMs: number
  /** Rows of the COPY the outbox trigger's cost is measured on. */
  copyRows: number
}

export type WebhookRun = {
  events: number
  latenciesMs: number[]
  p50Ms: number
  p99Ms: number
  maxMs: number
  missing: number
  barePostsPerSec: number
  barePostP50Ms: number
  copy: { rows: number; withTriggerMs: number; withoutTriggerMs: number }
  /** Where the time went (p50 and p99), from the delivery jobs' own timestamps. */
  stages: Record<'toQueued' | 'queued' | 'processing', { p50Ms: number; p99Ms: number }>
  /** CPU milliseconds per 1,000 events while they were committed and delivered: steadier than latency on a shared machine. */
  cpuMsPerThousand: { daemon: number; postgres: number }
}

/** CPU seconds of the database's backends so far (those connected now). */
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`

/** Attribution rows of transactions `[from, from + count)`, confirmed in `block`, through the range jobs' write path. */
async function commitAttributions(pool: pg.Pool, from: number, count: number, block: number): Promise<void> {
  const txs = Array.from({ length: count }, (_, i) => hash(from + i))
  const positions = new Map<string, TransactionPosition>(
    txs.map((tx, i) => [tx, { hash: tx, blockNumber: block, blockHash: hash(block), blockTimestamp: 1_700_000_000 + block, transactionIndex: i, status: 'confirmed' }]),
  )
  const rows = txs.map((tx) => ({ txHash: tx, userOpHash: '', builderCode: 'bc_bench', codeIndex: 0, role: null, registry: null, sender: SENDER, schemaId: 0, codes: ['bc_bench'], from: SENDER, to: null }))
  await withTransaction(pool, (client) => upsertAttributions(client, CHAIN_ID, rows, positions, new Map()))
}

/**
 * The same COPY of `rows` attributions with the outbox trigger on and off, alternated `TRIGGER_ROUNDS`
 * times into an emptied table; the fastest of each counts (the others carry the machine's other work).
 */
async function measureTriggerCost(pool: pg.Pool, rows: number): Promise<WebhookRun['copy']> {
  const time = async (first: number) => {
    await pool.query('TRUNCATE attributions, attribution_changes')
    const started = performance.now()
    await commitAttributions(pool, first, rows, 1)
    return performance.now() - started
  }
  const withTrigger: number[] = []
  const withoutTrigger: number[] = []
  for (let round = 0; round < TRIGGER_ROUNDS; round++) {
    withTrigger.push(await time(10_000_000))
    await pool.query('ALTER TABLE attributions DISABLE TRIGGER attributions_outbox_insert')
    withoutTrigger.push(await time(20_000_000))
    await pool.query('ALTER TABLE attributions ENABLE TRIGGER attributions_outbox_insert')
  }
  await pool.query('TRUNCATE attributions, attribution_changes')
  return { rows, withTriggerMs: Math.min(...withTrigger), withoutTriggerMs: Math.min(...withoutTrigger) }
}

export async function runWebhookLatency(parameters: WebhookRunParameters): Promise<WebhookRun> {
  const cleanups: (() => Promise<unknown>)[] = []
  try {
    const db = await createBenchDatabase(parameters.adminDatabaseUrl, 'webhooks')
    cleanups.push(() => db.drop())
    await runMigrations(db.pool)
    const copy = await measureTriggerCost(db.pool, parameters.copyRows)
    const redis = createBenchRedisPrefix(parameters.redisUrl, 'webhooks')
    cleanups.push(() => redis.cleanup())
    const anvil = await startAnvil({})
    cleanups.push(() => anvil.stop())

    const committedAt = new Map<string, number>()
    const answeredAt = new Map<string, number>()
    const eventOf = new Map<string, string>()
    const receiver = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk.toString()))
      request.on('end', () => {
        response.writeHead(204).end()
        const event = JSON.parse(body) as { id: string; data: { txHash?: string } }
        const tx = event.data.txHash
        if (tx && !answeredAt.has(tx)) {
          answeredAt.set(tx, Date.now())
          eventOf.set(tx, event.id)
        }
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => (receiver.closeAllConnections(), receiver.close(resolve))))
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`

    const bare = await bareHttpPostLoop(url)

    const apiPort = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo
        probe.close(() => resolve(port))
      })
    })
    const daemon = spawnNode({
      entry: COMPILED_ENTRIES.daemon,
      env: {
        RPC_URL: anvil.url,
        DATABASE_URL: db.url,
        REDIS_URL: parameters.redisUrl,
        REDIS_PREFIX: redis.prefix,
        PENDING_POLL_MS: '0',
        PORT: String(apiPort),
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
      },
    })
    cleanups.push(() => daemon.stop())
    const api = `http://127.0.0.1:${apiPort}`
    for (let i = 0; ; i++) {
      if ((await fetch(`${api}/healthz`).catch(() => null))?.ok) break
      if (i > 600) throw new Error(`the daemon did not start: ${daemon.stderrTail()}`)
      await sleep(100)
    }
    const created = await fetch(`${api}/v1/webhooks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url, events: ['attribution.confirmed'] }),
    })
    if (created.status !== 201) throw new Error(`POST /v1/webhooks answered ${created.status}: ${await created.text()}`)

    const cpuBefore = { daemon: cpuSecondsOf(daemon.pid) ?? 0, postgres: postgresCpuSecondsOf(db.name) }
    const perCommit = Math.max(1, Math.round(parameters.eventsPerSec / COMMITS_PER_SEC))
    const commits = Math.round((parameters.durationMs / 1000) * COMMITS_PER_SEC)
    const started = performance.now()
    let next = 0
    for (let i = 0; i < commits; i++) {
      await sleep(Math.max(0, started + (i * 1000) / COMMITS_PER_SEC - performance.now()))
      await commitAttributions(db.pool, next, perCommit, 2 + i)
      const at = Date.now()
      for (let k = 0; k < perCommit; k++) committedAt.set(hash(next + k), at)
      next += perCommit
    }
    const deadline = performance.now() + DRAIN_TIMEOUT_MS
    while (answeredAt.size < committedAt.size && performance.now() < deadline) await sleep(100)
    const perThousand = (seconds: number) => (seconds * 1000 * 1000) / committedAt.size
    const cpuMsPerThousand = {
      daemon: perThousand((cpuSecondsOf(daemon.pid) ?? 0) - cpuBefore.daemon),
      postgres: perThousand(postgresCpuSecondsOf(db.name) - cpuBefore.postgres),
    }

    const stages = await jobStages(parameters.redisUrl, redis.prefix, committedAt, eventOf)
    const latenciesMs = [...committedAt].flatMap(([tx, at]) => (answeredAt.has(tx) ? [answeredAt.get(tx)! - at] : [])).sort((a, b) => a - b)
    return {
      events: committedAt.size,
      latenciesMs,
      p50Ms: percentile(latenciesMs, 50),
      p99Ms: percentile(latenciesMs, 99),
      maxMs: latenciesMs.at(-1) ?? Number.NaN,
      missing: committedAt.size - latenciesMs.length,
      barePostsPerSec: bare.postsPerSec,
      barePostP50Ms: bare.p50Ms,
      copy,
      stages,
      cpuMsPerThousand,
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
  }
}

/** Time from commit to the job being queued (publish and dispatch), waiting in the queue, and being processed. */
async function jobStages(redisUrl: string, prefix: string, committedAt: Map<string, number>, eventOf: Map<string, string>): Promise<WebhookRun['stages']> {
  const queue = createWebhookQueue({ redisUrl, prefix })
  try {
    const jobs = await queue.queue.getJobs(['completed'], 0, -1)
    const byEvent = new Map(jobs.map((job) => [String(job.data.eventId), job]))
    const toQueued: number[] = []
    const queued: number[] = []
    const processing: number[] = []
    for (const [tx, at] of committedAt) {
      const job = byEvent.get(eventOf.get(tx) ?? '')
      if (!job?.processedOn || !job.finishedOn) continue
      toQueued.push(job.timestamp - at)
      queued.push(job.processedOn - job.timestamp)
      processing.push(job.finishedOn - job.processedOn)
    }
    const figures = (values: number[]) => {
      const sorted = [...values].sort((a, b) => a - b)
      return { p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) }
    }
    return { toQueued: figures(toQueued), queued: figures(queued), processing: figures(processing) }
  } finally {
    await queue.close()
  }
}

/** Sequential POSTs of an event-sized JSON body with fetch (as deliveries go), for `BARE_POST_MS`. */
async function bareHttpPostLoop(url: string): Promise<{ postsPerSec: number; p50Ms: number }> {
  const body = JSON.stringify({ id: '0', type: 'attribution.confirmed', createdAt: new Date().toISOString(), data: { note: 'bare POST', pad: hash(0).repeat(6) } })
  const durations: number[] = []
  const started = performance.now()
  while (performance.now() - started < BARE_POST_MS) {
    const t = performance.now()
    const response = await fetch(url, { method: 'POST', body, headers: { 'Content-Type': 'application/json' } })
    await response.arrayBuffer()
    durations.push(performance.now() - t)
  }
  durations.sort((a, b) => a - b)
  return { postsPerSec: durations.length / ((performance.now() - started) / 1000), p50Ms: percentile(durations, 50) }
}
