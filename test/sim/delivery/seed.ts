/**
 * One seed of the delivery simulation: the devnet (pre-confirming `op` profile), the daemon as
 * scheduler, worker and API processes, four webhook receivers (healthy, flaky, down for a while, slow)
 * and SSE clients that drop and resume, under a seeded schedule of attributed blocks, tip reorgs,
 * dropped pre-confirmed transactions, SIGKILLs and crash points in the dispatcher, the delivery and the
 * reconciler, a Redis restart and FLUSHALL; then the chain past finality and every receiver compared
 * with the events the chain implies.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { Webhook } from 'standardwebhooks'
import { createDevnet } from '../../../harness/devnet/index.js'
import { toPayload, type EventPayload } from '../../../src/delivery/events.js'
import { clearRedisPrefix, createRedis } from '../../../src/queue/index.js'
import { readEvents, type WebhookEvent } from '../../../src/store/index.js'
import { waitFor } from '../../helpers/compare.js'
import { seededRandom } from '../../../harness/random.js'
import { openSse } from '../../helpers/sse.js'
import { createTestDatabase } from '../../../harness/services.js'
import { createCleanups, waitCaughtUp } from '../../faults/helpers/faultChain.js'
import type { PrivateRedis } from '../../faults/helpers/privateServices.js'
import { createSimChain } from '../simChain.js'
import { createSupervisor } from '../supervisor.js'
import { spawnTs } from '../../../harness/processes.js'
import { PAST_FINALITY, type BlockPlan } from '../schedule.js'

const ADMIN_TOKEN = 'sim-delivery-admin-token-0123'
const SECRETS_KEY = '5d'.repeat(32)
const EVENT_TYPES = ['attribution.pending', 'attribution.confirmed', 'attribution.finalized', 'attribution.removed'] as const
const RECEIVERS = ['healthy', 'flaky', 'down', 'slow'] as const
type ReceiverKind = (typeof RECEIVERS)[number]
/** Bound on the time from the last block to every receiver and client holding every event. */
const DELIVERED_WITHIN_MS = 120_000
const FINALITY_WITHIN_MS = 180_000
const WEBHOOK_TIMEOUT_MS = 1_000
const SSE_CLIENTS = 2

type Action =
  | { type: 'blocks'; blocks: BlockPlan[] }
  | { type: 'reorg'; depth: number; salt: number }
  | { type: 'drop-pending'; logs: number }
  | { type: 'kill'; process: 'scheduler' | 'worker' }
  | { type: 'crash'; process: 'scheduler'; point: 'events-published' | 'events-dispatched' | 'drains-reconciled' }
  | { type: 'crash'; process: 'worker'; point: 'delivery-sent' }
  | { type: 'receiver-down'; ms: number }
  | { type: 'redis'; how: 'restart' | 'flushall' }
  | { type: 'sse-drop'; client: number }

/** The seed's plan, a function of the seed alone: traffic between faults, every fault kind at least once. */
export function createDeliverySchedule(seed: number): { actions: Action[]; gapsMs: number[] } {
  const random = seededRandom(seed * 7919 + 17)
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!
  const block = (): BlockPlan => ({
    txs: Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
      emitter: 0,
      logs: 1 + Math.floor(random() * 2),
      suffix: Math.floor(random() * 3),
      payload: 0,
    })),
    pendingMs: 300 + Math.floor(random() * 600),
  })
  const faults: Action[] = [
    { type: 'receiver-down', ms: 8_000 + Math.floor(random() * 8_000) },
    { type: 'reorg', depth: 1 + Math.floor(random() * 2), salt: Math.floor(random() * 1e9) },
    { type: 'drop-pending', logs: 1 },
    { type: 'crash', process: 'scheduler', point: pick(['events-published', 'events-dispatched', 'drains-reconciled'] as const) },
    { type: 'crash', process: 'worker', point: 'delivery-sent' },
    { type: 'kill', process: pick(['scheduler', 'worker'] as const) },
    { type: 'redis', how: pick(['restart', 'flushall'] as const) },
    { type: 'sse-drop', client: Math.floor(random() * SSE_CLIENTS) },
    { type: 'reorg', depth: 1, salt: Math.floor(random() * 1e9) },
  ]
  for (let i = faults.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[faults[i], faults[j]] = [faults[j]!, faults[i]!]
  }
  const actions: Action[] = []
  for (const fault of faults) actions.push({ type: 'blocks', blocks: [block(), ...(random() < 0.5 ? [block()] : [])] }, fault)
  actions.push({ type: 'blocks', blocks: [block()] })
  return { actions, gapsMs: actions.map(() => 200 + Math.floor(random() * 1_200)) }
}

const describe = (action: Action) =>
  action.type === 'blocks' ? `blocks: ${action.blocks.map((b) => b.txs.length).join(', ')} tx` : JSON.stringify(action)

type Received = { id: string; headers: Record<string, string>; body: string }

/** The receivers: one HTTP server, one path per kind, each holding what reached it. */
async function startReceivers(seed: number) {
  const random = seededRandom(seed * 104_729 + 3)
  const received = Object.fromEntries(RECEIVERS.map((kind) => [kind, [] as Received[]])) as Record<ReceiverKind, Received[]>
  let downUntil = 0
  const handle = (kind: ReceiverKind, request: IncomingMessage, response: ServerResponse, body: string) => {
    if (kind === 'down' && Date.now() < downUntil) return void request.socket.destroy()
    const r = random()
    if (kind === 'flaky' && r < 0.25) return void response.writeHead(500).end()
    // A stall: the receiver takes the event but answers after the sender gave up, so it comes again under the same id.
    const delay = kind === 'slow' ? 200 + Math.floor(r * 600) : kind === 'flaky' && r < 0.35 ? WEBHOOK_TIMEOUT_MS + 500 : 0
    received[kind].push({ id: String(request.headers['webhook-id']), headers: request.headers as Record<string, string>, body })
    setTimeout(() => response.writeHead(200).end('ok'), delay)
  }
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      const kind = (request.url ?? '').slice(1) as ReceiverKind
      if (!RECEIVERS.includes(kind)) return void response.writeHead(404).end()
      handle(kind, request, response, body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: (kind: ReceiverKind) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/${kind}`,
    received,
    down: (ms: number) => void (downUntil = Date.now() + ms),
    stop: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  }
}

/** An SSE client of `/v1/stream` from the first event; dropped, it resumes with Last-Event-ID. */
function startSseClient(base: string) {
  const url = `${base}/v1/stream`
  const earlier: string[] = []
  let current = openSse(url, { lastEventId: '0' })
  return {
    ids: () => [...earlier, ...current.messages.map((m) => m.id)],
    async drop() {
      await current.close()
      earlier.push(...current.messages.map((m) => m.id))
      current = openSse(url, { lastEventId: earlier.at(-1) ?? '0' })
    },
    stop: () => current.close(),
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

export type DeliverySeedResult = { seed: number; schedule: string[]; log: string[]; differences: string[]; seconds: number }

/** Runs `seed` against a private Redis (restarted and flushed by the schedule) and the shared PostgreSQL. */
export async function runDeliverySeed(seed: number, redis: PrivateRedis): Promise<DeliverySeedResult> {
  const started = Date.now()
  const { actions, gapsMs } = createDeliverySchedule(seed)
  const lines: string[] = []
  const log = (line: string) => lines.push(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${line}`)
  const cleanups = createCleanups()
  const differences: string[] = []
  try {
    const devnet = await createDevnet({ profile: 'op', blockTimeMs: 0, refreshMs: 100 })
    cleanups.add(() => devnet.stop())
    const chain = await createSimChain(devnet, 1, log)
    log(`devnet and contracts up to block ${chain.deployedTop}`)
    const db = await createTestDatabase()
    cleanups.add(() => db.drop())
    const prefix = `ct_simdel_${seed}_${Date.now().toString(36)}`
    cleanups.add(() => clearRedisPrefix(redis.url, prefix))
    const receivers = await startReceivers(seed)
    cleanups.add(() => receivers.stop())
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const env: Record<string, string> = {
      RPC_URL: devnet.url,
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      START_BLOCK: String(chain.deployedTop + 1),
      WORKER_CONCURRENCY: '2',
      JOB_LOCK_MS: '2000',
      HEAD_POLL_MS: '100',
      PENDING_POLL_MS: '100',
      PORT: String(port),
      ADMIN_TOKEN,
      SECRETS_KEY,
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      WEBHOOK_BACKOFF_MS: '200',
      WEBHOOK_MAX_FAILURES: '1000000',
    }
    const processes = createSupervisor(log)
    cleanups.add(() => processes.stopAll())
    processes.start('scheduler', 'src/main.ts', ['--role', 'scheduler'], env)
    processes.start('worker', 'src/main.ts', ['--role', 'worker'], env)
    const api = spawnTs('src/main.ts', ['--role', 'api'], env)
    cleanups.add(() => api.kill('SIGKILL'))
    await waitFor(
      async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.status === 200,
      'the API to listen',
      120_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}: ${api.output().slice(-1_500)}`)
    })

    const secrets = {} as Record<ReceiverKind, string>
    for (const kind of RECEIVERS) {
      const response = await fetch(`${base}/v1/webhooks`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: receivers.url(kind), events: EVENT_TYPES }),
      })
      if (response.status !== 201) throw new Error(`subscription for ${kind}: HTTP ${response.status} ${await response.text()}`)
      secrets[kind] = ((await response.json()) as { secret: string }).secret
    }
    log('API up')
    const clients = Array.from({ length: SSE_CLIENTS }, () => startSseClient(base))
    cleanups.add(() => Promise.all(clients.map((c) => c.stop())))
    await waitCaughtUp(db.store.pool, devnet.anvilUrl)
    log(`subscriptions for ${RECEIVERS.join(', ')}; the follower has reached the head`)

    const redisClient = createRedis(redis.url)
    redisClient.on('error', () => {})
    cleanups.add(async () => redisClient.disconnect())
    for (const [i, action] of actions.entries()) {
      switch (action.type) {
        case 'blocks': {
          const numbers: number[] = []
          for (const block of action.blocks) numbers.push(await chain.mineBlock(block))
          // Followed before finality passes them (a restarted scheduler takes a while on a loaded machine): each is seen confirmed.
          await waitCaughtUp(db.store.pool, devnet.anvilUrl, FINALITY_WITHIN_MS)
          log(`blocks ${numbers.join(', ')} mined and followed`)
          break
        }
        case 'reorg': {
          const done = await chain.reorg(
            { type: 'reorg', depth: action.depth, keep: 0.5, salt: action.salt, replacements: [{ emitter: 0, logs: 1, offset: 0 }] },
            async () => {},
          )
          log(done ? `reorg: depth ${done.depth}, fork block ${done.fork}` : 'reorg skipped')
          break
        }
        case 'drop-pending':
          log(`pending dropped: ${await chain.pendingChurn({ type: 'pending', kind: 'dropped', emitter: 0, logs: action.logs })}`)
          break
        case 'kill':
          await processes.kill(action.process)
          log(`${action.process} SIGKILLed`)
          break
        case 'crash':
          await processes.crashAt(action.process, action.point)
          log(`${action.process} restarted with CODETRAIL_CRASH_AT=${action.point}`)
          break
        case 'receiver-down':
          receivers.down(action.ms)
          log(`receiver "down" refuses connections for ${action.ms} ms`)
          break
        case 'redis':
          if (action.how === 'restart') await redis.restart(500)
          else await redisClient.flushall()
          log(`redis ${action.how}`)
          break
        case 'sse-drop':
          await clients[action.client]!.drop()
          log(`sse-${action.client} dropped; it resumes with Last-Event-ID`)
          break
      }
      await sleep(gapsMs[i]!)
    }

    await processes.clearCrashPoint('scheduler')
    await processes.clearCrashPoint('worker')
    await chain.mineEmpty(0)
    const lastTop = await chain.head()
    await chain.mineEmpty(PAST_FINALITY)
    const lastBlockAt = Date.now()
    log(`traffic ends at block ${lastTop}; mined to ${await chain.head()} to pass finality`)
    await waitFor(
      async () => ((await db.store.pool.query('SELECT finalized_block FROM chain_state')).rows[0]?.finalized_block ?? -1) >= lastTop,
      'finality to pass the traffic',
      FINALITY_WITHIN_MS,
      250,
    )
    // Every event the chain implies is published once nothing is pending and every attribution is final.
    const unsettled = async () =>
      (
        await db.store.pool.query<{ n: number; tx_hash: string; status: string; removed: boolean; block_number: string }>(
          `SELECT (SELECT count(*)::int FROM attribution_change_sets) AS n, tx_hash, status, removed, block_number FROM attributions WHERE NOT removed AND status <> 'finalized'
           UNION ALL SELECT (SELECT count(*)::int FROM attribution_change_sets), NULL, NULL, NULL, NULL`,
        )
      ).rows
    await waitFor(
      async () => (await unsettled()).length === 1 && (await unsettled())[0]!.n === 0,
      'every attribution final and published',
      FINALITY_WITHIN_MS,
      250,
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await unsettled())}`)
    })
    const events = await readEvents(db.store.pool, { after: 0, limit: 1_000_000 })
    const expectedIds = events.map((e) => String(e.id))
    differences.push(
      ...checkImplied(
        events,
        (await db.store.pool.query(`SELECT tx_hash, user_op_hash, builder_code, role, status, removed FROM attributions`)).rows,
      ),
    )
    const holdsAll = () =>
      RECEIVERS.every((kind) => new Set(receivers.received[kind].map((r) => r.id)).size === expectedIds.length) &&
      clients.every((c) => c.ids().length >= expectedIds.length)
    await waitFor(async () => holdsAll(), 'every receiver and stream client to hold every event', DELIVERED_WITHIN_MS, 250).catch(
      (error: Error) => differences.push(error.message),
    )
    log(
      `${events.length} events; delivered ${((Date.now() - lastBlockAt) / 1000).toFixed(1)} s after the last block; restarts ${JSON.stringify(processes.restarts())}`,
    )
    // A moment for any extra delivery to show.
    await sleep(1_000)
    const byId = new Map(events.map((e) => [String(e.id), JSON.stringify(toPayload(e))]))
    for (const kind of RECEIVERS) differences.push(...checkReceiver(kind, receivers.received[kind], byId, secrets[kind], events))
    for (const [i, client] of clients.entries()) {
      const ids = client.ids()
      const twice = ids.filter((id, j) => ids.indexOf(id) !== j)
      if (twice.length > 0) differences.push(`sse-${i}: ids received twice: ${twice.slice(0, 10).join(', ')}`)
      if (ids.join(',') !== expectedIds.join(','))
        differences.push(`sse-${i}: holds ${ids.length} ids, expected the ${expectedIds.length} published in order`)
    }
  } catch (error) {
    differences.push(`the seed stopped: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  } finally {
    await cleanups.run()
  }
  return { seed, schedule: actions.map(describe), log: lines, differences, seconds: (Date.now() - started) / 1000 }
}

type AttributionRow = { tx_hash: string; user_op_hash: string; builder_code: string; role: string; status: string; removed: boolean }
const keyOf = (tx: string, op: string, code: string, role: string | null) => `${tx}/${op}/${code}/${role ?? ''}`

/**
 * The published events against the final attributions: per attribution a sequence that starts with an
 * announcement, never repeats a state, retracts only what it announced (a pending row confirmed in the same
 * block is never removed in between), and ends `finalized` for a canonical row, `removed` for a retracted one.
 */
function checkImplied(events: readonly WebhookEvent[], rows: readonly AttributionRow[]): string[] {
  const differences: string[] = []
  const sequences = new Map<string, WebhookEvent[]>()
  for (const e of events) {
    const key = keyOf(e.txHash, e.userOpHash, e.builderCode, e.role)
    sequences.set(key, [...(sequences.get(key) ?? []), e])
  }
  const finals = new Map(rows.map((r) => [keyOf(r.tx_hash, r.user_op_hash, r.builder_code, r.role === '' ? null : r.role), r]))
  for (const [key, row] of finals) {
    const sequence = sequences.get(key) ?? []
    const types = sequence.map((e) => e.type.slice('attribution.'.length))
    const last = types.at(-1)
    if (!row.removed && (last !== 'finalized' || !types.includes('confirmed')))
      differences.push(`${key}: canonical and final, but its events are [${types.join(', ')}] (confirmed, then finalized last)`)
    if (row.removed && types.length > 0 && last !== 'removed')
      differences.push(`${key}: taken back, but its events end [${types.join(', ')}]`)
    if (types[0] === 'removed') differences.push(`${key}: a removal of nothing announced: [${types.join(', ')}]`)
    for (let i = 1; i < types.length; i++) {
      if (types[i] === types[i - 1]) differences.push(`${key}: ${types[i]} twice in a row: [${types.join(', ')}]`)
      if (
        types[i] === 'removed' &&
        types[i - 1] === 'pending' &&
        types[i + 1] === 'confirmed' &&
        sequence[i + 1]!.blockNumber === sequence[i - 1]!.blockNumber
      )
        differences.push(`${key}: a false removal between pending and confirmed in block ${sequence[i - 1]!.blockNumber}`)
    }
  }
  for (const key of sequences.keys()) if (!finals.has(key)) differences.push(`${key}: events of an attribution the index does not hold`)
  return differences
}

/** A receiver's deliveries: exactly the published ids, each body the event, every signature verifying, each transaction's events in order. */
function checkReceiver(
  kind: ReceiverKind,
  received: readonly Received[],
  byId: ReadonlyMap<string, string>,
  secret: string,
  events: readonly WebhookEvent[],
): string[] {
  const differences: string[] = []
  const webhook = new Webhook(secret)
  const ids = new Set(received.map((r) => r.id))
  const missing = [...byId.keys()].filter((id) => !ids.has(id))
  const extra = [...ids].filter((id) => !byId.has(id))
  if (missing.length > 0) differences.push(`${kind}: ${missing.length} event(s) never delivered: ${missing.slice(0, 10).join(', ')}`)
  if (extra.length > 0) differences.push(`${kind}: ${extra.length} delivery id(s) that are no event: ${extra.slice(0, 10).join(', ')}`)
  for (const r of received) {
    try {
      webhook.verify(r.body, r.headers)
    } catch (error) {
      differences.push(`${kind}: event ${r.id} does not verify: ${error instanceof Error ? error.message : String(error)}`)
    }
    const expected = byId.get(r.id)
    if (expected !== undefined && JSON.stringify(JSON.parse(r.body) as EventPayload) !== expected)
      differences.push(`${kind}: event ${r.id} differs: ${r.body} vs ${expected}`)
  }
  // Per transaction in order: a transaction's later event never arrives before its earlier one first did.
  const txOf = new Map(events.map((e) => [String(e.id), e.txHash]))
  const lastFirstSeen = new Map<string, number>()
  const seen = new Set<string>()
  for (const r of received) {
    if (seen.has(r.id)) continue
    seen.add(r.id)
    const tx = txOf.get(r.id)
    if (!tx) continue
    if ((lastFirstSeen.get(tx) ?? 0) > Number(r.id))
      differences.push(`${kind}: event ${r.id} of ${tx} arrived after a later one (${lastFirstSeen.get(tx)})`)
    lastFirstSeen.set(tx, Math.max(lastFirstSeen.get(tx) ?? 0, Number(r.id)))
  }
  return differences
}
