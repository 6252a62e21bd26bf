import { connect } from 'node:net'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, type Api } from '../src/api/index.js'
import { createDispatcher } from '../src/delivery/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { createWebhookQueue } from '../src/queue/index.js'
import {
  advanceFinality,
  getDispatchCursor,
  insertSubscription,
  latestEventId,
  markRemovedAbove,
  publishChanges,
  readEvents,
  storeTipBlocks,
  withTransaction,
  type WebhookEvent,
} from '../src/store/index.js'
import { upsertAttributions, type TransactionPosition } from '../src/store/attributions.js'
import { waitFor } from './helpers/compare.js'
import { openSse } from './helpers/sse.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const CHAIN = 8453
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const wallet = `0x${'ab'.repeat(20)}`

let db: TestDatabase
let api: Api
let base: string
/** The API's log messages (info and up): a dropped stream client is told there. */
const apiLog: string[] = []
const MAX_CLIENTS = 8
const dispatcher = () => createDispatcher({ pool: db.store.pool, logger: silentLogger, enqueue: async () => {} })

/** Attributions of transactions `txs` (one code each) at `block` with `status`, through the write path of range jobs and the tip. */
async function store(txs: number[], code: string, block: number, status: TransactionPosition['status']) {
  const positions = new Map(
    txs.map((n) => [
      hash(n),
      {
        hash: hash(n),
        blockNumber: block,
        blockHash: hash(block + 1_000_000),
        blockTimestamp: 1_700_000_000 + block,
        transactionIndex: n,
        status,
      },
    ]),
  )
  const rows = txs.map((n) => ({
    txHash: hash(n),
    userOpHash: '',
    builderCode: code,
    codeIndex: 0,
    role: null,
    registry: null,
    sender: wallet,
    schemaId: 0,
    codes: [code],
    from: wallet,
    to: null,
  }))
  // New transactions go in by COPY, as the attributor's write takes it when upsertTransactions met none stored.
  const { rows: stored } = await db.store.pool.query(
    `SELECT 1 FROM attributions WHERE chain_id = $1 AND tx_hash = ANY($2::text[]) LIMIT 1`,
    [CHAIN, txs.map(hash)],
  )
  await withTransaction(db.store.pool, (client) =>
    upsertAttributions(client, CHAIN, rows, positions, new Map(), { transactionsStored: stored.length > 0 }),
  )
}

async function allEvents(): Promise<WebhookEvent[]> {
  await dispatcher().step()
  return readEvents(db.store.pool, { after: 0, limit: 10_000 })
}

const listeners = async () =>
  (await db.store.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`))
    .rows[0].n as number

const summary = (events: WebhookEvent[]) => events.map((e) => `${e.txHash.slice(-2)} ${e.type}`)

beforeAll(async () => {
  db = await createTestDatabase()
  await db.store.pool.query(
    `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source) VALUES ($1, 'bc_owned', $2, 'local')`,
    [CHAIN, wallet],
  )
  // As if a stream client were always around: the outbox records every event type.
  await db.store.pool.query(`INSERT INTO outbox_demand (name, until) VALUES ('stream', 'infinity')`)
  api = await createApi({
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi: false,
      databaseUrl: db.url,
      redisUrl: REDIS_URL,
      redisPrefix: 'unused',
      streamMaxClients: MAX_CLIENTS,
    },
    chainId: CHAIN,
    store: db.store,
    logger: pino(
      { level: 'info' },
      new Writable({ write: (chunk, _encoding, done) => (apiLog.push(JSON.parse(String(chunk)).msg), done()) }),
    ),
    host: '127.0.0.1',
  })
  base = `http://${(await api.listen()).replace('http://', '')}`
})

afterAll(async () => {
  await api?.close()
  await db?.drop()
})

describe('the attribution outbox', () => {
  it('records every state change in its own transaction, in order, and nothing for a rollback', async () => {
    await store([1, 2], 'bc_owned', 10, 'pending')
    await store([1, 2], 'bc_owned', 10, 'confirmed')
    // A rolled-back change leaves no event behind.
    await expect(
      withTransaction(db.store.pool, async (client) => {
        await markRemovedAbove(client, CHAIN, 5)
        throw new Error('rolled back')
      }),
    ).rejects.toThrow('rolled back')
    await withTransaction(db.store.pool, (client) => markRemovedAbove(client, CHAIN, 5))
    // The same upsert again: the row is back, confirmed again.
    await store([1], 'bc_owned', 11, 'confirmed')
    // Finality moves a confirmed row; a row that stays removed says nothing.
    await advanceFinality(db.store.pool, CHAIN, [0, 20])
    const events = await allEvents()
    expect(summary(events)).toEqual([
      '01 attribution.pending',
      '02 attribution.pending',
      '01 attribution.confirmed',
      '02 attribution.confirmed',
      '01 attribution.removed',
      '02 attribution.removed',
      '01 attribution.confirmed',
      '01 attribution.finalized',
    ])
    expect(events.every((e) => e.walletAddress === wallet && e.role === null)).toBe(true)
    expect(events.map((e) => e.id)).toEqual([...events.map((e) => e.id)].sort((a, b) => a - b))
  })

  it('publishes pending -> confirmed at the tip as one confirmation, never a removal', async () => {
    const before = await latestEventId(db.store.pool)
    await dispatcher().step()
    await store([501, 502], 'bc_tip', 80, 'pending')
    // The tip's transaction: pending rows up to the block are marked removed, then the sealed ones confirm them.
    const positions = new Map(
      [501, 502].map((n) => [
        hash(n),
        {
          hash: hash(n),
          blockNumber: 80,
          blockHash: hash(80 + 1_000_000),
          blockTimestamp: 1_700_000_080,
          transactionIndex: n,
          status: 'confirmed' as const,
        },
      ]),
    )
    const rows = [501, 502].map((n) => ({
      txHash: hash(n),
      userOpHash: '',
      builderCode: 'bc_tip',
      codeIndex: 0,
      role: null,
      registry: null,
      sender: wallet,
      schemaId: 0,
      codes: ['bc_tip'],
      from: wallet,
      to: null,
    }))
    await storeTipBlocks(db.store.pool, {
      chainId: CHAIN,
      filterId: 'tip-test',
      blocks: [{ number: 80, hash: hash(80 + 1_000_000), parentHash: hash(79 + 1_000_000), timestamp: 1_700_000_080 }],
      rows: [],
      finalizedBlock: null,
      extraWrites: (client) => upsertAttributions(client, CHAIN, rows, positions, new Map()),
    })
    // A dropped one in the same kind of transaction is a real removal.
    await store([503], 'bc_tip', 81, 'pending')
    await storeTipBlocks(db.store.pool, {
      chainId: CHAIN,
      filterId: 'tip-test',
      blocks: [{ number: 81, hash: hash(81 + 1_000_000), parentHash: hash(80 + 1_000_000), timestamp: 1_700_000_081 }],
      rows: [],
      finalizedBlock: null,
    })
    const events = (await allEvents()).filter((e) => e.id > before && e.builderCode === 'bc_tip')
    expect(summary(events)).toEqual([
      'f5 attribution.pending',
      'f6 attribution.pending',
      'f5 attribution.confirmed',
      'f6 attribution.confirmed',
      'f7 attribution.pending',
      'f7 attribution.removed',
    ])
  })

  it('publishes each transaction whole and netted, however the batch limit cuts it', async () => {
    await dispatcher().step()
    const before = await latestEventId(db.store.pool)
    const txs = Array.from({ length: 30 }, (_, i) => 600 + i)
    await store(txs, 'bc_cut', 90, 'pending')
    await withTransaction(db.store.pool, async (client) => {
      await client.query(`UPDATE attributions SET removed = true WHERE builder_code = 'bc_cut'`)
      await client.query(`UPDATE attributions SET removed = false, status = 'confirmed' WHERE builder_code = 'bc_cut'`)
    })
    for (;;) if (!(await publishChanges(db.store.pool, 7)).more) break
    const events = await readEvents(db.store.pool, { after: before, limit: 1_000 })
    expect(events.filter((e) => e.type === 'attribution.pending')).toHaveLength(30)
    expect(events.filter((e) => e.type === 'attribution.confirmed')).toHaveLength(30)
    expect(events).toHaveLength(60)
  })

  it('publishes no removal of a row that never had an event (stored before the outbox)', async () => {
    await allEvents()
    await store([3], 'bc_old', 30, 'confirmed')
    // As if stored before the outbox existed: its change never became an event.
    await db.store.pool.query(`DELETE FROM attribution_change_sets`)
    await withTransaction(db.store.pool, (client) => markRemovedAbove(client, CHAIN, 29))
    expect((await allEvents()).filter((e) => e.builderCode === 'bc_old')).toEqual([])
  })

  it('records every row of a backfill-sized COPY', async () => {
    const txs = Array.from({ length: 20_000 }, (_, i) => 100_000 + i)
    await store(txs, 'bc_bulk', 40, 'finalized')
    const { rows } = await db.store.pool.query(`SELECT count(*)::int AS n FROM attribution_changes WHERE builder_code = 'bc_bulk'`)
    expect(rows[0].n).toBe(txs.length)
    await dispatcher().step()
    const { rows: events } = await db.store.pool.query(
      `SELECT count(*)::int AS n FROM webhook_events WHERE builder_code = 'bc_bulk' AND type = 'attribution.finalized'`,
    )
    expect(events[0].n).toBe(txs.length)
  })
})

describe('the dispatcher', () => {
  it('records owed deliveries in one transaction with its cursor, and the reconciler queues a drain the queue never got', async () => {
    await dispatcher().step()
    const redis = createTestRedisPrefix()
    const queue = createWebhookQueue({ redisUrl: REDIS_URL, prefix: redis.prefix })
    try {
      await insertSubscription(db.store.pool, {
        id: 'wh_00000000000000aa',
        url: 'http://127.0.0.1:9/',
        secret: 's',
        events: ['attribution.confirmed'],
        builderCodes: ['bc_crash'],
        walletAddresses: null,
        roles: null,
      })
      await store([301, 302, 303], 'bc_crash', 60, 'confirmed')
      await store([304], 'bc_elsewhere', 60, 'confirmed')
      const before = await getDispatchCursor(db.store.pool)
      const dying = createDispatcher({
        pool: db.store.pool,
        logger: silentLogger,
        enqueue: async () => {
          throw new Error('killed before queueing')
        },
      })
      await expect(dying.step()).rejects.toThrow('killed before queueing')
      // The events are owed (and the cursor past them) though no job was queued.
      expect(await getDispatchCursor(db.store.pool)).toBe(await latestEventId(db.store.pool))
      const wanted = (await readEvents(db.store.pool, { after: before, limit: 100, filter: { builderCodes: ['bc_crash'] } })).map(
        (e) => e.id,
      )
      expect(wanted).toHaveLength(3)
      const owed = await db.store.pool.query(
        `SELECT event_id AS "eventId" FROM webhook_outstanding WHERE subscription_id = 'wh_00000000000000aa' ORDER BY event_id`,
      )
      expect(owed.rows.map((r) => r.eventId)).toEqual(wanted)
      expect(await queue.queue.getJobs(['waiting'])).toHaveLength(0)
      const reconciling = createDispatcher({ pool: db.store.pool, logger: silentLogger, enqueue: queue.enqueue })
      expect(await reconciling.reconcile()).toBe(1)
      // A second sweep while the drain waits adds nothing.
      await reconciling.reconcile()
      const jobs = await queue.queue.getJobs(['waiting'])
      expect(jobs.map((job) => [job.id, job.data])).toEqual([['drain.wh_00000000000000aa', { subscriptionId: 'wh_00000000000000aa' }]])
    } finally {
      await queue.close()
      await redis.cleanup()
      await db.store.pool.query(`DELETE FROM webhook_subscriptions`)
    }
  })
})

describe('GET /v1/stream', () => {
  it('streams the events of its filter with their ids, and a client resuming with Last-Event-ID misses nothing', async () => {
    const first = openSse(`${base}/v1/stream?builderCode=bc_live&events=attribution.pending,attribution.confirmed,attribution.removed`)
    expect((await first.opened).headers.get('content-type')).toContain('text/event-stream')
    const run = new AbortController()
    const running = dispatcher().run(run.signal)
    try {
      await store([201, 202], 'bc_live', 50, 'pending')
      await store([203], 'bc_other', 50, 'pending')
      await waitFor(async () => first.messages.length === 2, 'two pending events')
      await first.close()
      // While the client is away: confirmations, a reorg, and events of another code.
      await store([201, 202], 'bc_live', 50, 'confirmed')
      await store([203], 'bc_other', 50, 'confirmed')
      await withTransaction(db.store.pool, (client) => markRemovedAbove(client, CHAIN, 49))
      await waitFor(async () => (await db.store.pool.query(`SELECT 1 FROM attribution_changes`)).rows.length === 0, 'publication')
      const resumed = openSse(
        `${base}/v1/stream?builderCode=bc_live&events=attribution.pending,attribution.confirmed,attribution.removed`,
        {
          lastEventId: first.lastId(),
        },
      )
      await store([204], 'bc_live', 51, 'pending')
      await waitFor(async () => resumed.messages.length === 5, 'the missed events and the new one')
      await resumed.close()

      const expected = (await readEvents(db.store.pool, { after: 0, limit: 100_000, filter: { builderCodes: ['bc_live'] } })).filter(
        (e) => e.type !== 'attribution.finalized',
      )
      const received = [...first.messages, ...resumed.messages]
      expect(received.map((m) => m.id)).toEqual(expected.map((e) => String(e.id)))
      expect(received.map((m) => `${m.data.data.txHash.slice(-2)} ${m.data.type}`)).toEqual([
        'c9 attribution.pending',
        'ca attribution.pending',
        'c9 attribution.confirmed',
        'ca attribution.confirmed',
        'c9 attribution.removed',
        'ca attribution.removed',
        'cc attribution.pending',
      ])
      for (const m of received) {
        expect(m.data.id).toBe(m.id)
        expect(m.data.data).toMatchObject({ chainId: CHAIN, builderCode: 'bc_live', userOpHash: null, role: null, sender: wallet })
      }
    } finally {
      run.abort()
      await running
    }
  })

  it('keeps streaming after its LISTEN connection is killed', async () => {
    const client = openSse(`${base}/v1/stream?builderCode=bc_relisten`)
    await client.opened
    const run = new AbortController()
    const running = dispatcher().run(run.signal)
    try {
      await waitFor(async () => (await listeners()) === 2, 'the stream and the dispatcher listening')
      await db.store.pool.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
      )
      await store([401], 'bc_relisten', 70, 'pending')
      await waitFor(async () => client.messages.length === 1, 'the event after the connections were killed', 30_000)
      await waitFor(async () => (await listeners()) === 2, 'both listening again')
      await store([402], 'bc_relisten', 70, 'pending')
      await waitFor(async () => client.messages.length === 2, 'the next event')
      expect(client.messages.map((m) => m.data.data.txHash)).toEqual([hash(401), hash(402)])
    } finally {
      run.abort()
      await running
      await client.close()
    }
  })

  it('refuses a bad filter with the error envelope', async () => {
    const response = await fetch(`${base}/v1/stream?events=attribution.nope`)
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } })
  })
})

describe('the outbox cost and retention', () => {
  const changesOf = async (code: string) =>
    (
      await db.store.pool.query<{ type: string }>(`SELECT type FROM attribution_changes WHERE builder_code = $1 ORDER BY id`, [code])
    ).rows.map((r) => r.type)
  const subscription = (id: string, events: string[]) =>
    insertSubscription(db.store.pool, {
      id,
      url: 'http://127.0.0.1:9/',
      secret: 's',
      events,
      builderCodes: null,
      walletAddresses: null,
      roles: null,
    })

  it('records only the event types an enabled subscription or a recent stream client can want', async () => {
    await db.store.pool.query(`DELETE FROM outbox_demand`)
    try {
      await store([701], 'bc_nobody', 100, 'pending')
      await store([701], 'bc_nobody', 100, 'confirmed')
      expect(await changesOf('bc_nobody')).toEqual([])

      await subscription('wh_00000000000000c1', ['attribution.confirmed'])
      await store([702], 'bc_confirmed', 100, 'pending')
      await store([702], 'bc_confirmed', 100, 'confirmed')
      expect(await changesOf('bc_confirmed')).toEqual(['attribution.confirmed'])

      // A removal retracts what was announced: wanting it records every type.
      await subscription('wh_00000000000000c2', ['attribution.removed'])
      await store([703], 'bc_removed', 100, 'pending')
      await store([703], 'bc_removed', 100, 'confirmed')
      expect(await changesOf('bc_removed')).toEqual(['attribution.pending', 'attribution.confirmed'])
      await db.store.pool.query(`DELETE FROM webhook_subscriptions`)

      // A stream client that connects says so: from then on (and for a while after) every type is recorded.
      const client = openSse(`${base}/v1/stream?builderCode=bc_streamed`)
      await client.opened
      await waitFor(
        async () => (await db.store.pool.query(`SELECT 1 FROM outbox_demand WHERE until > now()`)).rows.length === 1,
        'the stream demand',
      )
      await client.close()
      await store([704], 'bc_streamed', 100, 'pending')
      expect(await changesOf('bc_streamed')).toEqual(['attribution.pending'])
    } finally {
      await db.store.pool.query(`DELETE FROM webhook_subscriptions`)
      await db.store.pool.query(
        `INSERT INTO outbox_demand (name, until) VALUES ('stream', 'infinity') ON CONFLICT (name) DO UPDATE SET until = 'infinity'`,
      )
    }
  })

  it('prunes events and delivery records past WEBHOOK_RETENTION_DAYS, never an event still owed to an enabled subscription', async () => {
    await store([801, 802, 803], 'bc_old_events', 110, 'confirmed')
    await dispatcher().step()
    const [owed, gone, recent] = (
      await readEvents(db.store.pool, { after: 0, limit: 10_000, filter: { builderCodes: ['bc_old_events'] } })
    ).map((e) => e.id)
    await subscription('wh_00000000000000d1', ['attribution.confirmed'])
    await subscription('wh_00000000000000d2', ['attribution.confirmed'])
    await db.store.pool.query(`UPDATE webhook_subscriptions SET disabled_at = now() WHERE id = 'wh_00000000000000d2'`)
    await db.store.pool.query(
      `INSERT INTO webhook_outstanding (subscription_id, event_id, tx_hash) VALUES ('wh_00000000000000d1', $1, 'x'), ('wh_00000000000000d2', $2, 'x')`,
      [owed, gone],
    )
    await db.store.pool.query(`UPDATE webhook_events SET created_at = now() - interval '31 days' WHERE id = ANY($1)`, [[owed, gone]])
    await db.store.pool.query(
      `INSERT INTO webhook_deliveries (subscription_id, event_id, ok, duration_ms, created_at) VALUES
         ('wh_00000000000000d1', $1, true, 1, now() - interval '31 days'), ('wh_00000000000000d1', $2, true, 1, now())`,
      [gone, recent],
    )
    try {
      const pruned = await createDispatcher({
        pool: db.store.pool,
        logger: silentLogger,
        enqueue: async () => {},
        retentionDays: 30,
      }).prune()
      expect(pruned).toEqual({ events: 1, deliveries: 1, partitions: [], moved: 0 })
      const left = (await readEvents(db.store.pool, { after: 0, limit: 10_000, filter: { builderCodes: ['bc_old_events'] } })).map(
        (e) => e.id,
      )
      expect(left).toEqual([owed, recent])
      const deliveries = await db.store.pool.query(
        `SELECT event_id AS "eventId" FROM webhook_deliveries WHERE subscription_id = 'wh_00000000000000d1'`,
      )
      expect(deliveries.rows).toEqual([{ eventId: recent }])
    } finally {
      await db.store.pool.query(`DELETE FROM webhook_subscriptions`)
    }
  })
})

describe('the stream under load', () => {
  const latest = async () => String(await latestEventId(db.store.pool))

  it('serves every live client from one query per wake-up, and refuses clients beyond STREAM_MAX_CLIENTS with 503', async () => {
    const from = await latest()
    const filters = [
      'builderCode=bc_fan',
      'builderCode=bc_fan,bc_none',
      'events=attribution.pending',
      '',
      'builderCode=bc_fan&events=attribution.pending',
      'events=attribution.pending,attribution.confirmed',
    ]
    const clients = filters.map((f) => openSse(`${base}/v1/stream?${f}`, { lastEventId: from }))
    await Promise.all(clients.map((c) => c.opened))
    await store([901], 'bc_fan', 120, 'pending')
    await dispatcher().step()
    await waitFor(async () => clients.every((c) => c.messages.length === 1), 'the first event on every client')

    // Count the stream's reads of the events while one more event goes out to every client.
    const pool = db.store.pool
    const query = pool.query.bind(pool)
    let reads = 0
    pool.query = ((...args: Parameters<typeof query>) => {
      if (typeof args[0] === 'string' && args[0].includes('FROM webhook_events')) reads++
      return query(...args)
    }) as typeof pool.query
    try {
      await store([902], 'bc_fan', 120, 'pending')
      await dispatcher().step()
      await waitFor(async () => clients.every((c) => c.messages.length === 2), 'the second event on every client')
    } finally {
      pool.query = query
    }
    // One per wake-up (a heartbeat falling in between may add one), not one per client.
    expect(reads).toBeGreaterThanOrEqual(1)
    expect(reads).toBeLessThanOrEqual(2)
    expect(clients.map((c) => c.messages.map((m) => m.data.data.txHash))).toEqual(filters.map(() => [hash(901), hash(902)]))

    const more = [openSse(`${base}/v1/stream`), openSse(`${base}/v1/stream`)]
    await Promise.all(more.map((c) => c.opened))
    const refused = await fetch(`${base}/v1/stream`)
    expect(refused.status).toBe(503)
    expect(await refused.json()).toMatchObject({ error: { code: 'stream_full', message: expect.stringContaining('STREAM_MAX_CLIENTS') } })
    await Promise.all([...clients, ...more].map((c) => c.close()))
  })

  it('drops a client that does not read instead of buffering for it, and it resumes with Last-Event-ID missing nothing', async () => {
    const txs = Array.from({ length: 20_000 }, (_, i) => 200_000 + i)
    await store(txs, 'bc_slow', 130, 'finalized')
    await dispatcher().step()
    const expected = (await readEvents(db.store.pool, { after: 0, limit: 100_000, filter: { builderCodes: ['bc_slow'] } })).map((e) =>
      String(e.id),
    )
    expect(expected).toHaveLength(txs.length)

    // A client that asks for the whole history and reads nothing.
    const { hostname, port } = new URL(base)
    const socket = connect(Number(port), hostname)
    socket.pause()
    socket.write(`GET /v1/stream?builderCode=bc_slow HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 0\r\n\r\n`)
    const dropped = apiLog.length
    await waitFor(async () => apiLog.slice(dropped).includes('stream client dropped'), 'the slow client to be dropped', 60_000)

    // It reads what it was sent, up to the end of the connection, then resumes after the last whole message.
    let raw = ''
    socket.on('data', (chunk: Buffer) => (raw += chunk.toString()))
    const ended = new Promise((resolve) => socket.once('close', resolve))
    socket.resume()
    await ended
    const firstIds = [...raw.matchAll(/^id: (\d+)\ndata: .*\n\n/gm)].map((m) => m[1]!)
    expect(firstIds.length).toBeLessThan(expected.length)
    const resumed = openSse(`${base}/v1/stream?builderCode=bc_slow`, { lastEventId: firstIds.at(-1) ?? '0' })
    await waitFor(async () => firstIds.length + resumed.messages.length >= expected.length, 'the rest after resuming')
    await resumed.close()
    expect([...firstIds, ...resumed.messages.map((m) => m.id)]).toEqual(expected)
  })
})
