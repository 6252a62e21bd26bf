import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import type { Address, Hash } from 'viem'
import { createDevnet, freePort, type Devnet } from '../harness/devnet/index.js'
import { artifacts, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { waitFor } from './helpers/compare.js'
import { deployOnDevnet } from './helpers/devnet.js'
import { spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
let devnet: Devnet
let db: TestDatabase
let emitter: Address
let relay: WebSocketServer
let relayUrl: string
let subscriptions = 0

async function send(from: number, seq: number): Promise<Hash> {
  const raw = await rawSignedTx(devnet.url, { from, to: emitter, data: encodeEmitMany(2, seq, '0x01'), gas: 300_000n })
  return fixtureClient(devnet.url).sendRawTransaction({ serializedTransaction: raw })
}

async function pendingRows(hash: Hash): Promise<number> {
  const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE transaction_hash = $1 AND status = 'pending'`, [hash])
  return rows[0].n
}

beforeAll(async () => {
  devnet = await createDevnet({ profile: 'op', blockTimeMs: 0 })
  cleanups.push(() => devnet.stop())
  const client = fixtureClient(devnet.url)
  emitter = await deployOnDevnet(devnet, artifacts.Emitter)

  // A WebSocket relay in front of the devnet whose connections the test can cut, as a node restart would.
  const port = await freePort()
  relay = new WebSocketServer({ host: '127.0.0.1', port })
  relayUrl = `ws://127.0.0.1:${port}`
  relay.on('connection', (downstream) => {
    const upstream = new WebSocket(devnet.wsUrl)
    const queued: string[] = []
    upstream.on('open', () => queued.splice(0).forEach((message) => upstream.send(message)))
    downstream.on('message', (data) => {
      const message = data.toString()
      // The daemon also subscribes to newHeads on the same URL; only pendingLogs subscriptions count here.
      if (message.includes('eth_subscribe') && message.includes('pendingLogs')) subscriptions++
      if (upstream.readyState === WebSocket.OPEN) upstream.send(message)
      else queued.push(message)
    })
    upstream.on('message', (data) => downstream.readyState === WebSocket.OPEN && downstream.send(data.toString()))
    downstream.on('close', () => upstream.close())
    upstream.on('close', () => downstream.close())
  })
  cleanups.push(() => new Promise((resolve) => relay.close(resolve)))

  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], {
    RPC_URL: devnet.url,
    RPC_WS_URL: relayUrl,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: String(await client.getBlockNumber()),
    HEAD_POLL_MS: '100',
    // Polling once a minute: within the test, pending rows can only come from the subscription.
    PENDING_POLL_MS: '60000',
  })
  cleanups.push(() => daemon.kill('SIGKILL'))
  await waitFor(async () => subscriptions === 1, 'the pendingLogs subscription')
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('pendingLogs subscription', () => {
  it('stores pre-confirmed logs pushed over the WebSocket, and resubscribes after the connection drops', async () => {
    const first = await send(1, 0)
    await waitFor(async () => (await pendingRows(first)) === 2, 'the subscribed pending rows', 10_000, 50)

    for (const client of relay.clients) client.terminate()
    await waitFor(async () => subscriptions === 2, 'the resubscription', 20_000)
    const second = await send(2, 10)
    await waitFor(async () => (await pendingRows(second)) === 2, 'pending rows after resubscribing', 10_000, 50)
    expect(await pendingRows(first)).toBe(2)
  })
})
