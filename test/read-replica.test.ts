import { Writable } from 'node:stream'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, type Api, type ApiConfig } from '../src/api/index.js'
import { freePort } from '../harness/devnet/anvil.js'
import { silentLogger, type Logger } from '../src/internal/logger.js'
import { createReadRouting } from '../src/store/index.js'
import { startReplica, type Replica } from './helpers/replica.js'
import { openSse } from './helpers/sse.js'
import { createTestDatabase, REDIS_URL, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 8453
/** Far more than any test takes: the replica keeps serving however long replay is paused. */
const PATIENT_MS = 600_000

let db: TestDatabase
let replica: Replica
const cleanups: (() => Promise<void>)[] = []

beforeAll(async () => {
  db = await createTestDatabase()
  replica = await startReplica()
  // A transaction replayed since the standby started, so its lag is measurable from the first test on.
  await insertLog(0)
  await replica.caughtUp()
  // pg_basebackup copies the whole cluster, other test databases too: on a busy machine that takes minutes.
}, 300_000)

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  await replica?.resumeReplay().catch(() => {})
  // The standby first: dropping the database on the primary would wait for its sessions there.
  await replica?.stop()
  await db?.drop()
})

async function startApi(config: Partial<ApiConfig>, logger: Logger = silentLogger, host?: string): Promise<Api> {
  const api = await createApi({
    ...(host && { host }),
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi: false,
      databaseUrl: db.url,
      redisUrl: REDIS_URL,
      redisPrefix: 'unused',
      ...config,
    },
    chainId: CHAIN_ID,
    store: db.store,
    logger,
  })
  cleanups.push(() => api.close())
  return api
}

/** One confirmed log in `block`, written on the primary. */
async function insertLog(block: number): Promise<void> {
  await db.store.pool.query(
    `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal, address, topic0, data, status, removed)
     VALUES ($1, $2, $3, now(), $4, 0, 0, 0, '0x4200000000000000000000000000000000000006', '0x' || repeat('a', 64), '0x', 'confirmed', false)`,
    [CHAIN_ID, block, `0x${block.toString(16).padStart(64, 'b')}`, `0x${block.toString(16).padStart(64, '0')}`],
  )
}

async function blocksServed(api: Api, fromBlock: number, toBlock: number): Promise<number[]> {
  const response = await api.app.inject({ url: `/v1/logs?fromBlock=${fromBlock}&toBlock=${toBlock}` })
  expect(response.statusCode).toBe(200)
  return (response.json() as { items: { blockNumber: number }[] }).items.map((item) => item.blockNumber).sort((a, b) => a - b)
}

type ReadReplica = { state: string; lagMs: number | null; maxLagMs: number; checkedAt: string | null }
async function readReplica(api: Api): Promise<ReadReplica | null> {
  const response = await api.app.inject({ url: '/v1/status' })
  expect(response.statusCode).toBe(200)
  return (response.json() as { readReplica: ReadReplica | null }).readReplica
}

/** Polls until `done` holds (the lag is measured every second, so states change within a few). */
async function until<T>(look: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await look()
    if (done(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('read replica (DATABASE_READ_URL)', () => {
  it('serves reads from the replica: a row it has not replayed yet is not served while it stays within READ_MAX_LAG_MS', async () => {
    await insertLog(1)
    await replica.caughtUp()
    const api = await startApi({ databaseReadUrl: replica.urlOf(db.name), readMaxLagMs: PATIENT_MS })
    // Other tests write to the same cluster meanwhile: the replica may trail by a little.
    expect(await readReplica(api)).toMatchObject({ state: 'serving', lagMs: expect.any(Number), maxLagMs: PATIENT_MS })
    expect(await blocksServed(api, 1, 2)).toEqual([1])

    await replica.pauseReplay()
    try {
      await insertLog(2)
      const written = Date.now()
      // The primary has block 2; the replica, behind but within its allowed lag, does not, and serves the reads.
      const status = await until(
        () => readReplica(api),
        (value) => Date.parse(value?.checkedAt ?? '') > written,
      )
      expect(status).toMatchObject({ state: 'serving' })
      expect(status!.lagMs).toBeGreaterThan(0)
      expect(await blocksServed(api, 1, 2)).toEqual([1])
      expect((await db.store.pool.query('SELECT 1 FROM logs WHERE chain_id = $1 AND block_number = 2', [CHAIN_ID])).rowCount).toBe(1)
    } finally {
      await replica.resumeReplay()
    }
    await replica.caughtUp()
    expect(await blocksServed(api, 1, 2)).toEqual([1, 2])
  }, 120_000)

  it('bypasses a replica further behind than READ_MAX_LAG_MS, reading the primary until it catches up', async () => {
    const api = await startApi({ databaseReadUrl: replica.urlOf(db.name), readMaxLagMs: 300 })
    await replica.pauseReplay()
    try {
      await insertLog(3)
      const status = await until(
        () => readReplica(api),
        (value) => value?.state === 'lagging',
      )
      expect(status!.lagMs).toBeGreaterThan(300)
      // The replica has not replayed block 3; the primary answers.
      expect(await replica.query(db.name, 'SELECT 1 FROM logs WHERE block_number = 3')).toEqual([])
      expect(await blocksServed(api, 3, 3)).toEqual([3])
    } finally {
      await replica.resumeReplay()
    }
    expect(
      (await until(
        () => readReplica(api),
        (value) => value?.state === 'serving',
      ))!.lagMs,
    ).toBeLessThanOrEqual(300)
    expect(await blocksServed(api, 3, 3)).toEqual([3])
  }, 120_000)

  it('registration reads its own write: register, then GET the wallet and its code at once while replay is paused', async () => {
    const api = await startApi({ databaseReadUrl: replica.urlOf(db.name), readMaxLagMs: PATIENT_MS })
    const wallet = `0x${'c4'.repeat(20)}`
    await replica.pauseReplay()
    try {
      const registered = await api.app.inject({ method: 'POST', url: '/v1/agents/builder-codes', payload: { walletAddress: wallet } })
      expect(registered.statusCode).toBe(200)
      const { builderCode } = registered.json() as { builderCode: string }
      const byWallet = await api.app.inject({ url: `/v1/agents/builder-codes/${wallet}` })
      expect([byWallet.statusCode, byWallet.json()]).toMatchObject([200, { builderCode, walletAddress: wallet }])
      const byCode = await api.app.inject({ url: `/v1/builder-codes/${builderCode}` })
      expect([byCode.statusCode, byCode.json()]).toMatchObject([200, { builderCode, walletAddress: wallet, source: 'local' }])
      // The replica serves reads and has not got the registration.
      expect(await readReplica(api)).toMatchObject({ state: 'serving' })
      expect(await replica.query(db.name, 'SELECT 1 FROM builder_codes WHERE wallet_address = $1', [wallet])).toEqual([])
    } finally {
      await replica.resumeReplay()
    }
  }, 120_000)

  it('an unreachable replica: reads go to the primary, /v1/status says down, and its password shows in no output', async () => {
    const lines: string[] = []
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk))
          done()
        },
      }),
    )
    const password = 'replica-pw-7f3k2q'
    const api = await startApi(
      { databaseReadUrl: `postgres://postgres:${password}@127.0.0.1:${await freePort()}/${db.name}`, readMaxLagMs: 1_000 },
      logger,
    )
    await insertLog(4)
    expect(await blocksServed(api, 4, 4)).toEqual([4])
    const status = await api.app.inject({ url: '/v1/status' })
    expect(status.json()).toMatchObject({ readReplica: { state: 'down', lagMs: null, maxLagMs: 1_000 } })
    expect(lines.some((line) => line.includes('read replica unreachable'))).toBe(true)
    expect([...lines, status.body].filter((text) => text.includes(password))).toEqual([])
  }, 120_000)

  it('streams events from the replica: /v1/stream listens on the primary and sends an event once the replica has replayed it', async () => {
    const api = await startApi({ databaseReadUrl: replica.urlOf(db.name), readMaxLagMs: PATIENT_MS }, silentLogger, '127.0.0.1')
    const address = await api.listen()
    const client = openSse(`${address}/v1/stream?builderCode=bc_replica1`)
    try {
      expect((await client.opened).status).toBe(200)
      // A standby cannot LISTEN: the stream's one listening connection is on the primary.
      await until(
        async () =>
          (await db.store.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`))
            .rowCount,
        (listeners) => listeners === 1,
      )
      await replica.pauseReplay()
      let id: number
      try {
        const { rows } = await db.store.pool.query<{ id: number }>(
          `INSERT INTO webhook_events (type, chain_id, tx_hash, user_op_hash, builder_code, sender, block_number, block_timestamp, status, removed)
           VALUES ('attribution.pending', $1, $2, $3, 'bc_replica1', $4, 7, now(), 'pending', false) RETURNING id`,
          [CHAIN_ID, `0x${'e7'.repeat(32)}`, `0x${'0'.repeat(64)}`, `0x${'a1'.repeat(20)}`],
        )
        id = rows[0]!.id
        await db.store.pool.query(`SELECT pg_notify('codetrail_webhook_events', $1)`, [String(id)])
        expect(await replica.query(db.name, 'SELECT 1 FROM webhook_events WHERE id = $1', [id])).toEqual([])
      } finally {
        await replica.resumeReplay()
      }
      await until(
        async () => client.messages.length,
        (received) => received > 0,
      )
      expect(client.messages.map((message) => [message.id, message.data.type, message.data.data.builderCode])).toEqual([
        [String(id), 'attribution.pending', 'bc_replica1'],
      ])
    } finally {
      await client.close()
    }
  }, 120_000)

  it('a read the replica cancels in a conflict with replay is answered by the primary', async () => {
    const routing = createReadRouting({
      primary: db.store.pool,
      replicaUrl: replica.urlOf(db.name),
      maxLagMs: PATIENT_MS,
      logger: silentLogger,
    })
    cleanups.push(() => routing.close())
    expect(await routing.check()).toMatchObject({ state: 'serving' })
    const conflicts = () =>
      replica.query<{ n: number }>(
        db.name,
        `SELECT confl_lock::int AS n FROM pg_stat_database_conflicts WHERE datname = current_database()`,
      )
    const [before] = await conflicts()
    const read = routing.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n, pg_sleep(2)::text AS slept FROM logs WHERE chain_id = $1 AND block_number = 1`,
      [CHAIN_ID],
    )
    await until(
      () => replica.query(db.name, `SELECT 1 FROM pg_stat_activity WHERE query LIKE '%pg_sleep(2)%' AND pid <> pg_backend_pid()`),
      (rows) => rows.length === 1,
    )
    // Replaying this lock conflicts with the read holding the table on the replica, which cancels it.
    await db.store.pool.query('BEGIN; LOCK TABLE logs IN ACCESS EXCLUSIVE MODE; COMMIT')
    expect((await read).rows).toEqual([{ n: 1, slept: '' }])
    expect((await conflicts())[0]!.n).toBe(before!.n + 1)
  }, 120_000)

  it('without DATABASE_READ_URL, /v1/status has readReplica null', async () => {
    const api = await startApi({})
    expect(await readReplica(api)).toBeNull()
  })
})
