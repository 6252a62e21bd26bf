import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, type Api } from '../src/api/index.js'
import { createDispatcher } from '../src/delivery/index.js'
import { silentLogger } from '../src/logger.js'
import { advanceFinality, markRemovedAbove, readEvents, withTransaction, type WebhookEvent } from '../src/store/index.js'
import { upsertAttributions, type TransactionPosition } from '../src/store/attributions.js'
import { waitFor } from './helpers/compare.js'
import { openSse } from './helpers/sse.js'
import { createTestDatabase, REDIS_URL, type TestDatabase } from './helpers/services.js'

const CHAIN = 8453
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const wallet = `0x${'ab'.repeat(20)}`

let db: TestDatabase
let api: Api
let base: string
const dispatcher = () => createDispatcher({ pool: db.store.pool, logger: silentLogger, enqueue: async () => {} })

/** Attributions of transactions `txs` (one code each) at `block` with `status`, through the write path of range jobs and the tip. */
async function store(txs: number[], code: string, block: number, status: TransactionPosition['status']) {
  const positions = new Map(
    txs.map((n) => [hash(n), { hash: hash(n), blockNumber: block, blockHash: hash(block + 1_000_000), blockTimestamp: 1_700_000_000 + block, transactionIndex: n, status }]),
  )
  const rows = txs.map((n) => ({ txHash: hash(n), userOpHash: '', builderCode: code, codeIndex: 0, sender: wallet, schemaId: 0, codes: [code], from: wallet, to: null }))
  await withTransaction(db.store.pool, (client) => upsertAttributions(client, CHAIN, rows, positions, new Map()))
}

async function allEvents(): Promise<WebhookEvent[]> {
  await dispatcher().step()
  return readEvents(db.store.pool, { after: 0, limit: 10_000 })
}

const summary = (events: WebhookEvent[]) => events.map((e) => `${e.txHash.slice(-2)} ${e.type}`)

beforeAll(async () => {
  db = await createTestDatabase()
  await db.store.pool.query(`INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source) VALUES ($1, 'bc_owned', $2, 'local')`, [CHAIN, wallet])
  api = await createApi({
    config: { port: 0, builderApiUrl: undefined, adminUi: false, databaseUrl: db.url, redisUrl: REDIS_URL, redisPrefix: 'unused' },
    chainId: CHAIN,
    store: db.store,
    logger: silentLogger,
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

  it('publishes no removal of a row that never had an event (stored before the outbox)', async () => {
    const before = (await allEvents()).length
    await store([3], 'bc_old', 30, 'confirmed')
    // As if stored before the outbox existed: its change never became an event.
    await db.store.pool.query(`DELETE FROM attribution_changes`)
    await withTransaction(db.store.pool, (client) => markRemovedAbove(client, CHAIN, 29))
    expect((await allEvents()).length).toBe(before)
  })

  it('records every row of a backfill-sized COPY', async () => {
    const txs = Array.from({ length: 20_000 }, (_, i) => 100_000 + i)
    await store(txs, 'bc_bulk', 40, 'finalized')
    const { rows } = await db.store.pool.query(`SELECT count(*)::int AS n FROM attribution_changes WHERE builder_code = 'bc_bulk'`)
    expect(rows[0].n).toBe(txs.length)
    await dispatcher().step()
    const { rows: events } = await db.store.pool.query(`SELECT count(*)::int AS n FROM webhook_events WHERE builder_code = 'bc_bulk' AND type = 'attribution.finalized'`)
    expect(events[0].n).toBe(txs.length)
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
      const resumed = openSse(`${base}/v1/stream?builderCode=bc_live&events=attribution.pending,attribution.confirmed,attribution.removed`, {
        lastEventId: first.lastId(),
      })
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

  it('refuses a bad filter with the error envelope', async () => {
    const response = await fetch(`${base}/v1/stream?events=attribution.nope`)
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } })
  })
})
