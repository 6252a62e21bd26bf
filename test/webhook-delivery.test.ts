/** A receiver that always fails: the subscription is disabled after WEBHOOK_MAX_FAILURES with its reason; redeliver brings everything. */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, type Api } from '../src/api/index.js'
import { Webhook } from 'standardwebhooks'
import { parseSecretsKey } from '../src/config/index.js'
import { createDeliveryProcessor, createDispatcher } from '../src/delivery/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { clearRedisPrefix, createWebhookQueue, createWebhookWorker } from '../src/queue/index.js'
import { withTransaction } from '../src/store/index.js'
import { upsertAttributions } from '../src/store/attributions.js'
import { waitFor } from './helpers/compare.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const ADMIN_TOKEN = 'test-admin-token-0123456789'
const MAX_FAILURES = 3
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`

const cleanups: (() => Promise<unknown>)[] = []
let db: TestDatabase
let base: string
let healthy = false
const received: { id: string; headers: Record<string, string>; body: string; path: string }[] = []
/** Secrets are sealed at rest in this file's API and opened by its worker. */
const SECRETS_KEY = parseSecretsKey('5a'.repeat(32))!
let receiverUrl: string
let redisPrefix: string
let worker: ReturnType<typeof createWebhookWorker>
let dispatcher: ReturnType<typeof createDispatcher>
let queue: ReturnType<typeof createWebhookQueue>

beforeAll(async () => {
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  redisPrefix = redis.prefix
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const receiver = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      if (!healthy) return void response.writeHead(503).end()
      // A receiver that never answers: each attempt runs into the timeout.
      if (request.url === '/hook-dead') return
      received.push({
        id: String(request.headers['webhook-id']),
        headers: request.headers as Record<string, string>,
        body,
        path: request.url ?? '',
      })
      response.writeHead(200).end('ok')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => new Promise((resolve) => (receiver.closeAllConnections(), receiver.close(resolve))))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`

  queue = createWebhookQueue({ redisUrl: REDIS_URL, prefix: redis.prefix })
  cleanups.push(() => queue.close())
  worker = createWebhookWorker({
    redisUrl: REDIS_URL,
    prefix: redis.prefix,
    lockDurationMs: 5_000,
    logger: silentLogger,
    process: createDeliveryProcessor({
      pool: db.store.pool,
      logger: silentLogger,
      timeoutMs: 1_000,
      maxFailures: MAX_FAILURES,
      backoffMs: 20,
      // The receiver listens on 127.0.0.1.
      allowPrivate: true,
      leaseMs: 2_000,
      enqueue: queue.enqueue,
      secretsKey: SECRETS_KEY,
    }),
  })
  cleanups.push(() => worker.close())
  const dispatching = new AbortController()
  dispatcher = createDispatcher({ pool: db.store.pool, logger: silentLogger, enqueue: queue.enqueue })
  const dispatched = dispatcher.run(dispatching.signal)
  cleanups.push(async () => {
    dispatching.abort()
    await dispatched
  })
  const api: Api = await createApi({
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi: false,
      databaseUrl: db.url,
      redisUrl: REDIS_URL,
      redisPrefix: redis.prefix,
      adminToken: ADMIN_TOKEN,
      webhookAllowPrivate: true,
      secretsKey: SECRETS_KEY,
    },
    chainId: 1,
    store: db.store,
    logger: silentLogger,
    host: '127.0.0.1',
    webhookQueue: queue,
  })
  cleanups.push(() => api.close())
  base = await api.listen()
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

const admin = (path: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, ...(init.body ? { 'Content-Type': 'application/json' } : {}) },
  })

describe('a receiver that keeps failing', () => {
  it('gets its subscription disabled with the reason visible, and redeliver sends every event again once it answers', async () => {
    const created = (await (
      await admin('/v1/webhooks', { method: 'POST', body: JSON.stringify({ url: receiverUrl, events: ['attribution.confirmed'] }) })
    ).json()) as {
      id: string
      secret: string
    }
    const txs = [1, 2, 3, 4, 5].map(hash)
    await withTransaction(db.store.pool, (client) =>
      upsertAttributions(
        client,
        1,
        txs.map((tx) => ({
          txHash: tx,
          userOpHash: '',
          builderCode: 'bc_x',
          codeIndex: 0,
          role: null,
          registry: null,
          sender: hash(9).slice(0, 42),
          schemaId: 0,
          codes: ['bc_x'],
          from: hash(9).slice(0, 42),
          to: null,
        })),
        new Map(
          txs.map((tx, i) => [
            tx,
            {
              hash: tx,
              blockNumber: 7,
              blockHash: hash(7),
              blockTimestamp: 1_700_000_000,
              transactionIndex: i,
              status: 'confirmed' as const,
            },
          ]),
        ),
        new Map(),
      ),
    )

    type Shown = { status: string; consecutiveFailures: number; disabledReason: string | null }
    await waitFor(
      async () => ((await (await admin(`/v1/webhooks/${created.id}`)).json()) as Shown).status === 'disabled',
      'the subscription to be disabled',
    )
    const shown = (await (await admin(`/v1/webhooks/${created.id}`)).json()) as Shown
    expect(shown.consecutiveFailures).toBe(MAX_FAILURES)
    expect(shown.disabledReason).toBe(`${MAX_FAILURES} consecutive failed deliveries; last: HTTP 503`)
    const { items } = (await (await admin(`/v1/webhooks/${created.id}/deliveries`)).json()) as {
      items: { ok: boolean; httpStatus: number; durationMs: number }[]
    }
    expect(items.length).toBeGreaterThanOrEqual(MAX_FAILURES)
    expect(items.every((d) => !d.ok && d.httpStatus === 503 && d.durationMs >= 0)).toBe(true)
    expect(received).toHaveLength(0)

    healthy = true
    const redeliver = await admin(`/v1/webhooks/${created.id}/redeliver`, { method: 'POST', body: JSON.stringify({ fromEventId: '1' }) })
    expect(redeliver.status).toBe(202)
    expect(await redeliver.json()).toEqual({ queued: txs.length, nextFromEventId: null })
    await waitFor(async () => new Set(received.map((r) => r.id)).size === txs.length, 'the redelivered events')
    expect(new Set(received.map((r) => JSON.parse(r.body).data.txHash))).toEqual(new Set(txs))
    for (const r of received) expect(new Webhook(created.secret).verify(r.body, r.headers)).toEqual(JSON.parse(r.body))
    expect(((await (await admin(`/v1/webhooks/${created.id}`)).json()) as Shown).status).toBe('active')
  })
})

/** Confirmed attributions of `txs` with `code`, in one transaction. */
async function commit(txs: string[], code: string) {
  const sender = hash(9).slice(0, 42)
  await withTransaction(db.store.pool, (client) =>
    upsertAttributions(
      client,
      1,
      txs.map((tx) => ({
        txHash: tx,
        userOpHash: '',
        builderCode: code,
        codeIndex: 0,
        role: null,
        registry: null,
        sender,
        schemaId: 0,
        codes: [code],
        from: sender,
        to: null,
      })),
      new Map(
        txs.map((tx, i) => [
          tx,
          {
            hash: tx,
            blockNumber: 8,
            blockHash: hash(8),
            blockTimestamp: 1_700_000_000,
            transactionIndex: i,
            status: 'confirmed' as const,
          },
        ]),
      ),
      new Map(),
    ),
  )
}

async function subscribe(path: string, code: string): Promise<string> {
  const response = await admin('/v1/webhooks', {
    method: 'POST',
    body: JSON.stringify({ url: `${receiverUrl}${path}`, events: ['attribution.confirmed'], builderCodes: [code] }),
  })
  expect(response.status).toBe(201)
  return ((await response.json()) as { id: string }).id
}

const eventIdsOf = async (code: string) =>
  (await db.store.pool.query<{ id: string }>(`SELECT id::text FROM webhook_events WHERE builder_code = $1 ORDER BY id`, [code])).rows.map(
    (r) => r.id,
  )
const receivedAt = (path: string) => received.filter((r) => r.path === `/hook${path}`).map((r) => r.id)

describe('owed deliveries live in PostgreSQL', () => {
  it('are all delivered when the queue loses its jobs mid-backlog (its Redis keys flushed)', async () => {
    healthy = true
    const id = await subscribe('-flush', 'bc_flush')
    const owed = async () => (await db.store.pool.query(`SELECT 1 FROM webhook_outstanding WHERE subscription_id = $1`, [id])).rows.length
    await worker.worker.pause()
    const txs = Array.from({ length: 40 }, (_, i) => hash(1_000 + i))
    await commit(txs, 'bc_flush')
    await waitFor(
      async () => (await owed()) === txs.length && (await queue.queue.getWaitingCount()) > 0,
      'the owed deliveries and their drain',
    )
    // Every queued drain is gone, as after a Redis FLUSHALL (only this test's keys: the Redis is shared).
    await clearRedisPrefix(REDIS_URL, redisPrefix)
    worker.worker.resume()
    const expected = await eventIdsOf('bc_flush')
    expect(expected).toHaveLength(txs.length)
    await waitFor(async () => new Set(receivedAt('-flush')).size === expected.length, 'every owed event')
    expect([...new Set(receivedAt('-flush'))].sort()).toEqual([...expected].sort())
    await waitFor(async () => (await owed()) === 0, 'nothing owed')
  })

  it('are delivered again when events already delivered are dispatched again', async () => {
    healthy = true
    await subscribe('-again', 'bc_again')
    await commit([hash(2_001), hash(2_002), hash(2_003)], 'bc_again')
    await waitFor(async () => new Set(receivedAt('-again')).size === 3, 'the first deliveries')
    const ids = await eventIdsOf('bc_again')
    expect([...receivedAt('-again')].sort()).toEqual([...ids].sort())
    // The dispatcher hands the same events out again (its cursor set back): the drain must not be ignored as a duplicate job.
    await db.store.pool.query(`UPDATE webhook_cursor SET event_id = $1 - 1 WHERE name = 'dispatch'`, [Number(ids[0])])
    await waitFor(async () => receivedAt('-again').length === 6, 'the second deliveries')
    expect(receivedAt('-again').sort()).toEqual([...ids, ...ids].sort())
  })
})

describe('database errors', () => {
  it('fail a delivery only for now: it is tried again, like any transient error, until it is recorded', async () => {
    healthy = true
    const id = await subscribe('-dberror', 'bc_dberror')
    const owed = async () => (await db.store.pool.query(`SELECT 1 FROM webhook_outstanding WHERE subscription_id = $1`, [id])).rows.length
    // Recording this subscription's attempts fails while the constraint is there.
    await db.store.pool.query(
      `ALTER TABLE webhook_deliveries ADD CONSTRAINT test_refuse_attempts CHECK (subscription_id <> '${id}') NOT VALID`,
    )
    try {
      await commit([hash(5_001)], 'bc_dberror')
      await waitFor(async () => receivedAt('-dberror').length >= 2, 'attempts whose recording failed')
      expect(await owed()).toBe(1)
    } finally {
      await db.store.pool.query(`ALTER TABLE webhook_deliveries DROP CONSTRAINT test_refuse_attempts`)
    }
    await waitFor(async () => (await owed()) === 0, 'the delivery recorded')
    expect(new Set(receivedAt('-dberror'))).toEqual(new Set(await eventIdsOf('bc_dberror')))
  })
})

describe('fairness', () => {
  it('a dead subscription with a backlog delays no other: the healthy one gets every event while the dead one still fails', async () => {
    healthy = true
    const dead = await subscribe('-dead', 'bc_fair')
    await subscribe('-alive', 'bc_fair')
    const txs = Array.from({ length: 200 }, (_, i) => hash(4_000 + i))
    await commit(txs, 'bc_fair')
    await waitFor(async () => new Set(receivedAt('-alive')).size === txs.length, 'every event at the healthy receiver')
    const state = async () =>
      (
        await db.store.pool.query(
          `SELECT consecutive_failures AS failures, (SELECT count(*)::int FROM webhook_outstanding WHERE subscription_id = $1) AS owed FROM webhook_subscriptions WHERE id = $1`,
          [dead],
        )
      ).rows[0] as { failures: number; owed: number }
    expect((await state()).owed).toBe(txs.length)
    expect([...new Set(receivedAt('-alive'))].sort()).toEqual([...(await eventIdsOf('bc_fair'))].sort())
    // The dead one keeps every event owed and backs off.
    await waitFor(async () => (await state()).failures > 0, 'the dead subscription failing')
    expect((await state()).owed).toBe(txs.length)
  })
})

describe('signing secrets', () => {
  it('are sealed at rest, and after a rotation both the old and the new one sign until the overlap ends', async () => {
    healthy = true
    const created = (await (
      await admin('/v1/webhooks', {
        method: 'POST',
        body: JSON.stringify({ url: `${receiverUrl}-rotate`, events: ['attribution.confirmed'], builderCodes: ['bc_rotate'] }),
      })
    ).json()) as { id: string; secret: string }
    const stored = (await db.store.pool.query(`SELECT secret FROM webhook_subscriptions WHERE id = $1`, [created.id])).rows[0]
      .secret as string
    expect(stored).toMatch(/^enc:v1:/)
    expect(stored).not.toContain(created.secret.slice('whsec_'.length))

    const rotated = await admin(`/v1/webhooks/${created.id}/rotate-secret`, {
      method: 'POST',
      body: JSON.stringify({ overlapSeconds: 3_600 }),
    })
    expect(rotated.status).toBe(200)
    const { secret, previousSecretExpiresAt } = (await rotated.json()) as { secret: string; previousSecretExpiresAt: string }
    expect(secret).toMatch(/^whsec_/)
    expect(secret).not.toBe(created.secret)
    expect(Date.parse(previousSecretExpiresAt)).toBeGreaterThan(Date.now())
    expect(JSON.stringify(await (await admin(`/v1/webhooks/${created.id}`)).json())).not.toContain('whsec_')

    await commit([hash(3_001)], 'bc_rotate')
    await waitFor(async () => receivedAt('-rotate').length === 1, 'the delivery signed twice')
    const delivery = received.find((r) => r.path === '/hook-rotate')!
    expect(delivery.headers['webhook-signature']!.split(' ')).toHaveLength(2)
    for (const s of [secret, created.secret])
      expect(new Webhook(s).verify(delivery.body, delivery.headers)).toEqual(JSON.parse(delivery.body))

    // Without an overlap the old secret stops signing at once.
    const again = (await (
      await admin(`/v1/webhooks/${created.id}/rotate-secret`, { method: 'POST', body: JSON.stringify({ overlapSeconds: 0 }) })
    ).json()) as { secret: string }
    await commit([hash(3_002)], 'bc_rotate')
    await waitFor(async () => receivedAt('-rotate').length === 2, 'the delivery signed once')
    const last = received.filter((r) => r.path === '/hook-rotate').at(-1)!
    expect(last.headers['webhook-signature']!.split(' ')).toHaveLength(1)
    expect(new Webhook(again.secret).verify(last.body, last.headers)).toEqual(JSON.parse(last.body))
    expect(() => new Webhook(secret).verify(last.body, last.headers)).toThrow()

    expect((await admin(`/v1/webhooks/wh_0000000000000000/rotate-secret`, { method: 'POST', body: '{}' })).status).toBe(404)
    const bad = await admin(`/v1/webhooks/${created.id}/rotate-secret`, { method: 'POST', body: JSON.stringify({ overlapSeconds: -1 }) })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: expect.any(String), message: expect.stringContaining('overlapSeconds') } })
  })
})
