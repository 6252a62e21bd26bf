/**
 * Webhook delivery latency: this process commits attributions at a steady rate (the outbox trigger
 * records their events), the daemon (`--role all`: dispatcher and delivery worker) delivers them to a
 * receiver here, and each event's latency is from its transaction's COMMIT returning to the receiver
 * answering 2xx. Beside it: a bare sequential HTTP POST loop to the same receiver, the cost of the
 * outbox trigger on a backfill-sized COPY (the same COPY with the trigger disabled), the recovery of a
 * receiver that was down: how long its backlog of `RECOVERY_BACKLOG` events takes from its first 2xx, and
 * retention: a month of events past `WEBHOOK_RETENTION_DAYS` dropped whole beside the same rows deleted in
 * batches (what a month that cannot be dropped, or the default partition, gets).
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type pg from 'pg'
import { startAnvil } from '../devnet/index.js'
import { ensureMonthPartitions, pruneWebhookHistory, runMigrations, withTransaction } from '../../src/store/index.js'
import { PRUNE_BATCH } from '../../src/delivery/dispatcher.js'
import { upsertAttributions, type TransactionPosition } from '../../src/store/attributions.js'
import { sleep } from '../../src/utils/loop.js'
import { percentile } from './report.js'
import { spawnNode } from '../processes.js'
import { COMPILED_ENTRIES, cpuSecondsOf, postgresCpuSecondsOf } from './processStats.js'
import { createBenchDatabase, createRedisPrefix } from '../services.js'

const ADMIN_TOKEN = 'bench-admin-token-0123456789'
/** Commits per second; each carries `eventsPerSec / COMMITS_PER_SEC` attributions. */
const COMMITS_PER_SEC = 20
const DRAIN_TIMEOUT_MS = 30_000
const BARE_POST_MS = 3_000
const CHAIN_ID = 31337
const TRIGGER_ROUNDS = 2
const SENDER = `0x${'5e'.repeat(20)}`
/** Events owed to the receiver while it is down. */
const RECOVERY_BACKLOG = 1_000
const RECOVERY_FIRST_TX = 50_000_000

export type WebhookRunParameters = {
  adminDatabaseUrl: string
  redisUrl: string
  eventsPerSec: number
  durationMs: number
  /** Rows of the COPY the outbox trigger's cost is measured on. */
  copyRows: number
  /** Events of the month that retention lets go of. */
  retentionRows: number
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
  /** With the trigger when nobody wants the events (gated), when a stream client wants every type, and without it. */
  copy: { rows: number; withTriggerMs: number; wantedMs: number; withoutTriggerMs: number }
  /** The backlog owed to a receiver that was down, from its first 2xx to its last event; PostgreSQL deadlocks over the whole run. */
  recovery: { backlog: number; fromFirstSuccessMs: number; fromUpMs: number; missing: number; deadlocks: number }
  /** CPU milliseconds per 1,000 events while they were committed and delivered: steadier than latency on a shared machine. */
  cpuMsPerThousand: { daemon: number; postgres: number }
  /** A month of `rows` events past retention, all handed out: dropped whole, and the same rows deleted in batches. */
  retention: { rows: number; droppedMs: number; deletedMs: number }
}

/** CPU seconds of the database's backends so far (those connected now). */
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`

/** Attribution rows of transactions `[from, from + count)`, confirmed in `block`, through the range jobs' write path. */
async function commitAttributions(pool: pg.Pool, from: number, count: number, block: number): Promise<void> {
  const txs = Array.from({ length: count }, (_, i) => hash(from + i))
  const positions = new Map<string, TransactionPosition>(
    txs.map((tx, i) => [
      tx,
      {
        hash: tx,
        blockNumber: block,
        blockHash: hash(block),
        blockTimestamp: 1_700_000_000 + block,
        transactionIndex: i,
        status: 'confirmed',
      },
    ]),
  )
  const rows = txs.map((tx) => ({
    txHash: tx,
    userOpHash: '',
    builderCode: 'bc_bench',
    codeIndex: 0,
    role: null,
    registry: null,
    sender: SENDER,
    schemaId: 0,
    codes: ['bc_bench'],
    from: SENDER,
    to: null,
  }))
  await withTransaction(pool, (client) => upsertAttributions(client, CHAIN_ID, rows, positions, new Map(), { transactionsStored: false }))
}

/**
 * The same COPY of `rows` attributions with the outbox trigger on and off, alternated `TRIGGER_ROUNDS`
 * times into an emptied table; the fastest of each counts (the others carry the machine's other work).
 */
async function measureTriggerCost(pool: pg.Pool, rows: number): Promise<WebhookRun['copy']> {
  const time = async (first: number) => {
    await pool.query('TRUNCATE attributions, attribution_change_sets')
    const started = performance.now()
    await commitAttributions(pool, first, rows, 1)
    return performance.now() - started
  }
  const withTrigger: number[] = []
  const wanted: number[] = []
  const withoutTrigger: number[] = []
  for (let round = 0; round < TRIGGER_ROUNDS; round++) {
    withTrigger.push(await time(10_000_000))
    await pool.query(`INSERT INTO outbox_demand (name, until) VALUES ('stream', 'infinity')`)
    wanted.push(await time(30_000_000))
    await pool.query(`DELETE FROM outbox_demand`)
    await pool.query('ALTER TABLE attributions DISABLE TRIGGER attributions_outbox_insert')
    withoutTrigger.push(await time(20_000_000))
    await pool.query('ALTER TABLE attributions ENABLE TRIGGER attributions_outbox_insert')
  }
  await pool.query('TRUNCATE attributions, attribution_change_sets')
  return { rows, withTriggerMs: Math.min(...withTrigger), wantedMs: Math.min(...wanted), withoutTriggerMs: Math.min(...withoutTrigger) }
}

/**
 * Retention of a month of `rows` events, all handed out: first in their month partition, which
 * `pruneWebhookHistory` drops whole, then the same rows in `webhook_events_default` (a month with no
 * partition), which it deletes `PRUNE_BATCH` rows per statement, as it does a month it cannot drop.
 */
async function measureEventRetention(pool: pg.Pool, rows: number): Promise<WebhookRun['retention']> {
  const seed = async (from: string) => {
    await pool.query(
      `INSERT INTO webhook_events (type, chain_id, tx_hash, user_op_hash, builder_code, sender, block_number, block_timestamp, status, removed, created_at)
       SELECT 'attribution.confirmed', ${CHAIN_ID}, '0x' || md5(i::text) || md5('x' || i), '', 'bc_' || (i % 500), $2, i / 10, t, 'confirmed', false, t
       FROM generate_series(1, $1::int) i, LATERAL (SELECT $3::timestamptz + i * (interval '27 days' / $1::int) AS t) x`,
      [rows, SENDER, from],
    )
    await pool.query(`UPDATE webhook_cursor SET event_id = (SELECT max(id) FROM webhook_events) WHERE name = 'dispatch'`)
    await pool.query('VACUUM ANALYZE webhook_events')
  }
  const time = async (run: () => Promise<unknown>) => {
    const started = performance.now()
    await run()
    return performance.now() - started
  }
  // January 2019 has a partition; June 2018 does not, so its rows land in the default partition.
  await ensureMonthPartitions(pool, 'webhook_events', new Date('2019-01-15T00:00:00Z'))
  await seed('2019-01-01T00:00:00Z')
  const droppedMs = await time(() => pruneWebhookHistory(pool, 30, PRUNE_BATCH))
  // No partition holds June 2018: the whole pass is the batched delete.
  await seed('2018-06-01T00:00:00Z')
  const deletedMs = await time(() => pruneWebhookHistory(pool, 30, PRUNE_BATCH))
  const { rows: left } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_events WHERE created_at < '2019-02-01'`)
  if (left[0]!.n > 0) throw new Error(`${left[0]!.n} events past retention left`)
  return { rows, droppedMs, deletedMs }
}

export async function runWebhookLatency(parameters: WebhookRunParameters): Promise<WebhookRun> {
  const cleanups: (() => Promise<unknown>)[] = []
  try {
    const db = await createBenchDatabase(parameters.adminDatabaseUrl, 'webhooks')
    cleanups.push(() => db.drop())
    await runMigrations(db.pool)
    const copy = await measureTriggerCost(db.pool, parameters.copyRows)
    const retention = await measureEventRetention(db.pool, parameters.retentionRows)
    const redis = createRedisPrefix(parameters.redisUrl, 'ct_bench_webhooks')
    cleanups.push(() => redis.cleanup())
    const anvil = await startAnvil({})
    cleanups.push(() => anvil.stop())

    const committedAt = new Map<string, number>()
    const answeredAt = new Map<string, number>()
    let down = false
    const receiver = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => (body += chunk.toString()))
      request.on('end', () => {
        if (down) return void response.writeHead(503).end()
        response.writeHead(204).end()
        const event = JSON.parse(body) as { id: string; data: { txHash?: string } }
        const tx = event.data.txHash
        if (tx && !answeredAt.has(tx)) answeredAt.set(tx, Date.now())
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
        // The receiver is this process, on loopback: refused by default since webhooks guard against private addresses.
        WEBHOOK_ALLOW_PRIVATE: '1',
        LOG_LEVEL: 'warn',
      },
    })
    cleanups.push(() => daemon.kill())
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

    // Recovery: the receiver goes down, a backlog is owed to it, and it answers again after its first failure.
    down = true
    const deadlocksBefore = await deadlocksOf(db.pool)
    await commitAttributions(db.pool, RECOVERY_FIRST_TX, RECOVERY_BACKLOG, 2 + commits)
    const backlog = Array.from({ length: RECOVERY_BACKLOG }, (_, i) => hash(RECOVERY_FIRST_TX + i))
    const failing = async () => (await db.pool.query(`SELECT 1 FROM webhook_subscriptions WHERE consecutive_failures > 0`)).rows.length > 0
    const owedAll = async () => (await db.pool.query(`SELECT count(*)::int AS n FROM webhook_outstanding`)).rows[0].n >= RECOVERY_BACKLOG
    while (!((await owedAll()) && (await failing())) && performance.now() < deadline + DRAIN_TIMEOUT_MS) await sleep(50)
    down = false
    const upAt = Date.now()
    const recoveryDeadline = performance.now() + DRAIN_TIMEOUT_MS * 2
    while (backlog.some((tx) => !answeredAt.has(tx)) && performance.now() < recoveryDeadline) await sleep(50)
    const backlogAnswers = backlog.flatMap((tx) => (answeredAt.has(tx) ? [answeredAt.get(tx)!] : []))
    const firstSuccess = Math.min(...backlogAnswers)
    const lastSuccess = Math.max(...backlogAnswers)
    const recovery = {
      backlog: RECOVERY_BACKLOG,
      fromFirstSuccessMs: lastSuccess - firstSuccess,
      fromUpMs: lastSuccess - upAt,
      missing: RECOVERY_BACKLOG - backlogAnswers.length,
      deadlocks: (await deadlocksOf(db.pool)) - deadlocksBefore,
    }
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
      recovery,
      cpuMsPerThousand,
      retention,
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
  }
}

/** Deadlocks PostgreSQL detected in the current database so far. */
async function deadlocksOf(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`)
  return rows[0]?.n ?? 0
}

/** Sequential POSTs of an event-sized JSON body with fetch (as deliveries go), for `BARE_POST_MS`. */
async function bareHttpPostLoop(url: string): Promise<{ postsPerSec: number; p50Ms: number }> {
  const body = JSON.stringify({
    id: '0',
    type: 'attribution.confirmed',
    createdAt: new Date().toISOString(),
    data: { note: 'bare POST', pad: hash(0).repeat(6) },
  })
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
