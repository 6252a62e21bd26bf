/**
 * Webhooks end to end: the daemon (every role) and a second worker process follow a devnet with
 * pre-confirmed state; three real receivers on localhost (healthy, failing half its requests and timing
 * out some, down for a while then back) subscribe with different filters. Through pending drops, a
 * reorg and a SIGKILLed worker, each ends with exactly the events of its filter, every one signed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { Attribution } from 'ox/erc8021'
import type { Address, Hash, Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBuilderCodeClient } from '../src/api/index.js'
import { Webhook } from 'standardwebhooks'
import { matchesSubscription } from '../src/delivery/index.js'
import { createDevnet, freePort, type Devnet } from '../harness/devnet/index.js'
import { readEvents, type WebhookEvent } from '../src/store/index.js'
import { anvilAccount, artifacts, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { waitFor } from './helpers/compare.js'
import { deployOnDevnet } from './helpers/devnet.js'
import { spawnTs, type Spawned } from '../harness/processes.js'
import { openSse } from './helpers/sse.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const ADMIN_TOKEN = 'test-admin-token-0123456789'
const TIMEOUT_MS = 1_000
/** How long the third receiver is down. */
const OUTAGE_MS = 8_000

type Received = { id: string; body: any; signed: boolean; at: number }

/** Whether the Standard Webhooks headers sign `body` with `secret`, as the `standardwebhooks` package checks them. */
function verifies(secret: string, body: string, headers: IncomingMessage['headers']): boolean {
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>)
    return true
  } catch {
    return false
  }
}

/** A receiver on localhost; `answer` decides each request's fate by its ordinal. */
async function startReceiver(answer: (n: number) => 'ok' | 'error' | 'hang') {
  const received: Received[] = []
  let secret = ''
  let n = 0
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    let raw = ''
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()))
    request.on('end', () => {
      const fate = answer(n++)
      if (fate === 'error') return void response.writeHead(500).end('no')
      if (fate === 'hang') return void setTimeout(() => response.writeHead(200).end(), TIMEOUT_MS * 2)
      received.push({
        id: String(request.headers['webhook-id']),
        body: JSON.parse(raw),
        signed: verifies(secret, raw, request.headers),
        at: Date.now(),
      })
      response.writeHead(204).end()
    })
  }
  let server: Server = createServer(handle)
  const port = await freePort()
  const listen = () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  await listen()
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    setSecret: (value: string) => (secret = value),
    async down() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
    async up() {
      server = createServer(handle)
      await listen()
    },
    stop: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  }
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>

const cleanups: (() => Promise<unknown>)[] = []
let devnet: Devnet
let db: TestDatabase
let emitter: Address
let api: string
let daemon: Spawned
let worker: Spawned

const admin = (path: string, init: RequestInit = {}) =>
  fetch(`${api}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, ...(init.body ? { 'Content-Type': 'application/json' } : {}), ...init.headers },
  })

async function send(from: number, code: string, seq: number, nonce?: number): Promise<Hex> {
  return rawSignedTx(devnet.url, {
    from,
    to: emitter,
    data: encodeEmitMany(1, seq, '0x01'),
    suffix: Attribution.toDataSuffix({ codes: [code] }),
    gas: 300_000n,
    nonce,
  })
}

async function submit(raw: Hex): Promise<Hash> {
  return fixtureClient(devnet.url).sendRawTransaction({ serializedTransaction: raw })
}

async function events(): Promise<WebhookEvent[]> {
  return readEvents(db.store.pool, { after: 0, limit: 100_000 })
}

const typesOf = (all: WebhookEvent[], tx: Hash) => all.filter((e) => e.txHash === tx).map((e) => e.type)

beforeAll(async () => {
  devnet = await createDevnet({ profile: 'op', blockTimeMs: 0 })
  cleanups.push(() => devnet.stop())
  emitter = await deployOnDevnet(devnet, artifacts.Emitter)
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const port = await freePort()
  api = `http://127.0.0.1:${port}`
  const env = {
    RPC_URL: devnet.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: String(await fixtureClient(devnet.url).getBlockNumber()),
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '100',
    JOB_LOCK_MS: '2000',
    PORT: String(port),
    ADMIN_TOKEN,
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    WEBHOOK_BACKOFF_MS: '200',
    // The receivers listen on 127.0.0.1.
    WEBHOOK_ALLOW_PRIVATE: '1',
  }
  daemon = spawnTs('src/main.ts', [], env)
  worker = spawnTs('src/main.ts', ['--role', 'worker'], { ...env, PORT: '0' })
  cleanups.push(
    () => daemon.kill('SIGKILL'),
    () => worker.kill('SIGKILL'),
  )
  await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API')
}, 120_000)

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('webhook subscriptions', () => {
  it('need the bearer ADMIN_TOKEN and refuse bad input with the error envelope', async () => {
    const anonymous = await fetch(`${api}/v1/webhooks`)
    expect(anonymous.status).toBe(401)
    expect(await anonymous.json()).toMatchObject({ error: { code: 'unauthorized' } })
    expect((await fetch(`${api}/v1/webhooks`, { headers: { Authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401)
    for (const body of [
      { url: 'ftp://example.com/hook', events: ['attribution.confirmed'] },
      { url: 'not a url', events: ['attribution.confirmed'] },
      { url: 'https://example.com/hook', events: [] },
      { url: 'https://example.com/hook', events: ['attribution.nope'] },
      { url: 'https://example.com/hook', events: ['attribution.confirmed'], builderCodes: ['Not A Code'] },
      { url: 'https://example.com/hook', events: ['attribution.confirmed'], extra: 1 },
    ]) {
      const response = await admin('/v1/webhooks', { method: 'POST', body: JSON.stringify(body) })
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect(await response.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } })
    }
    expect((await admin('/v1/webhooks/wh_0000000000000000')).status).toBe(404)

    const created = await admin('/v1/webhooks', {
      method: 'POST',
      body: JSON.stringify({ url: 'https://example.com/hook', events: ['attribution.confirmed'] }),
    })
    expect(created.status).toBe(201)
    const subscription = (await created.json()) as { id: string; secret: string }
    expect(subscription).toMatchObject({
      id: expect.stringMatching(/^wh_/),
      secret: expect.stringMatching(/^whsec_/),
      status: 'active',
      builderCodes: null,
    })
    const shown = await (await admin(`/v1/webhooks/${subscription.id}`)).json()
    expect(shown).not.toHaveProperty('secret')
    expect((await admin(`/v1/webhooks/${subscription.id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await admin(`/v1/webhooks/${subscription.id}`)).status).toBe(404)
  })

  it('deliver exactly the events of each filter, signed and in order per transaction, through drops, a reorg and a killed worker', async () => {
    const codes = createBuilderCodeClient(api)
    const walletA = anvilAccount(3).address
    const walletB = anvilAccount(4).address
    const { builderCode: codeA } = await codes.register(walletA)
    const { builderCode: codeB } = await codes.register(walletB)
    const codeC = 'bc_unowned'

    const healthy = await startReceiver(() => 'ok')
    const flaky = await startReceiver((n) => (n % 2 === 0 ? 'ok' : n % 4 === 1 ? 'error' : 'hang'))
    const outage = await startReceiver(() => 'ok')
    cleanups.push(healthy.stop, flaky.stop, outage.stop)
    const subscribe = async (receiver: Receiver, filters: Record<string, unknown>) => {
      const response = await admin('/v1/webhooks', { method: 'POST', body: JSON.stringify({ url: receiver.url, ...filters }) })
      expect(response.status).toBe(201)
      const created = (await response.json()) as {
        id: string
        secret: string
        events: string[]
        builderCodes: string[] | null
        walletAddresses: string[] | null
        roles: string[] | null
        chainIds: number[] | null
      }
      receiver.setSecret(created.secret)
      return created
    }
    const all = ['attribution.pending', 'attribution.confirmed', 'attribution.finalized', 'attribution.removed']
    const subscriptions = new Map<Receiver, Awaited<ReturnType<typeof subscribe>>>([
      [healthy, await subscribe(healthy, { events: all, builderCodes: [codeA], chainIds: [await fixtureClient(devnet.url).getChainId()] })],
      [flaky, await subscribe(flaky, { events: all, walletAddresses: [walletB] })],
      [outage, await subscribe(outage, { events: ['attribution.confirmed', 'attribution.removed'] })],
    ])
    const stream = openSse(`${api}/v1/stream?builderCode=${codeA},${codeB}`)
    await stream.opened

    // Pending, then confirmed: codes A, B and one nobody filters on; the third receiver is down meanwhile.
    await outage.down()
    const outageEnds = Date.now() + OUTAGE_MS
    const first = [await submit(await send(5, codeA, 1)), await submit(await send(6, codeB, 2)), await submit(await send(7, codeC, 3))]
    await waitFor(async () => {
      const all = await events()
      return first.every((tx) => typesOf(all, tx).includes('attribution.pending'))
    }, 'pending events')
    await devnet.mine()
    await waitFor(async () => healthy.received.length >= 2, 'the first deliveries')
    // A worker dies with deliveries in flight; the daemon's worker takes them over.
    expect(await worker.kill('SIGKILL')).toBe('SIGKILL')

    // A pre-confirmed transaction that is dropped: pending, then removed.
    const dropped = await submit(await send(8, codeA, 4))
    const keptB = await submit(await send(6, codeB, 5))
    await waitFor(
      async () => typesOf(await events(), dropped).includes('attribution.pending'),
      'the pending event of the dropped transaction',
    )
    expect(await devnet.dropTransaction(dropped)).toBe(true)
    await devnet.mine()
    await waitFor(async () => typesOf(await events(), dropped).includes('attribution.removed'), 'the removal of the dropped transaction')

    // The stream client goes away; a reorg orphans a block with codes A and B and brings a new A in.
    await waitFor(async () => stream.messages.length > 0, 'stream messages')
    await stream.close()
    const orphanA = await submit(await send(5, codeA, 6))
    const orphanB = await submit(await send(6, codeB, 7))
    await devnet.mine()
    await waitFor(async () => {
      const all = await events()
      return [orphanA, orphanB].every((tx) => typesOf(all, tx).includes('attribution.confirmed'))
    }, 'the confirmations before the reorg')
    const client = fixtureClient(devnet.url)
    const replacement = await send(9, codeA, 8, await client.getTransactionCount({ address: anvilAccount(9).address }))
    await devnet.reorg(1, [{ transaction: replacement, blockOffset: 0 }])
    await devnet.mine()
    await waitFor(async () => {
      const all = await events()
      return [orphanA, orphanB].every((tx) => typesOf(all, tx).includes('attribution.removed'))
    }, 'the removals of the orphaned transactions')
    const resumed = openSse(`${api}/v1/stream?builderCode=${codeA},${codeB}`, { lastEventId: stream.lastId() })

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, outageEnds - Date.now())))
    await outage.up()

    // Nothing moves any more: every receiver must end with exactly the events of its filter.
    await waitFor(async () => (await db.store.pool.query('SELECT 1 FROM attribution_changes')).rows.length === 0, 'publication')
    const published = await events()
    expect(published.length).toBeGreaterThan(0)
    expect(typesOf(published, dropped)).toEqual(['attribution.pending', 'attribution.removed'])
    // Pre-confirmed, then sealed: a confirmation, never a removal in between.
    for (const tx of first) expect(typesOf(published, tx)).toEqual(['attribution.pending', 'attribution.confirmed'])
    // These were mined at once: their pending event is there only if the poll saw them first.
    const sealed = (tx: Hash) => typesOf(published, tx).filter((type, i) => !(i === 0 && type === 'attribution.pending'))
    expect(sealed(keptB)).toEqual(['attribution.confirmed'])
    for (const tx of [orphanA, orphanB]) expect(sealed(tx)).toEqual(['attribution.confirmed', 'attribution.removed'])
    expect(
      published.filter(
        (e) => e.builderCode === codeA && e.type === 'attribution.confirmed' && e.sender === anvilAccount(9).address.toLowerCase(),
      ),
    ).toHaveLength(1)

    for (const [receiver, subscription] of subscriptions) {
      const expected = published.filter((e) => matchesSubscription(subscription, e)).map((e) => String(e.id))
      expect(expected.length).toBeGreaterThan(0)
      await waitFor(
        async () => new Set(receiver.received.map((r) => r.id)).size >= expected.length,
        `deliveries to ${receiver.url}`,
        120_000,
        500,
      )
      const ids = new Set(receiver.received.map((r) => r.id))
      expect([...ids].sort()).toEqual([...expected].sort())
      for (const r of receiver.received) {
        expect(r.signed).toBe(true)
        expect(r.body.id).toBe(r.id)
        expect(matchesSubscription(subscription, { ...r.body.data, type: r.body.type })).toBe(true)
      }
      // Per transaction, first arrivals come in event order.
      const firstArrivals = [...new Map(receiver.received.map((r) => [r.id, r] as const)).values()]
      const byTx = new Map<string, number[]>()
      for (const r of firstArrivals) byTx.set(r.body.data.txHash, [...(byTx.get(r.body.data.txHash) ?? []), Number(r.id)])
      for (const order of byTx.values()) {
        expect(order).toEqual([...order].sort((a, b) => a - b))
      }
    }
    expect(healthy.received.every((r) => r.body.data.builderCode === codeA)).toBe(true)
    expect(flaky.received.every((r) => r.body.data.walletAddress === walletB.toLowerCase())).toBe(true)

    // The failing receiver's attempts are recorded, with their errors.
    const flakyId = subscriptions.get(flaky)!.id
    const { items } = (await (await admin(`/v1/webhooks/${flakyId}/deliveries?limit=500`)).json()) as {
      items: { ok: boolean; error: string | null }[]
    }
    expect(items.some((d) => d.ok)).toBe(true)
    expect(items.some((d) => !d.ok && d.error === 'HTTP 500')).toBe(true)
    expect(items.some((d) => !d.ok && d.error?.includes('no answer within'))).toBe(true)

    // The stream client that resumed with Last-Event-ID has every event of codes A and B.
    const streamed = published.filter((e) => e.builderCode === codeA || e.builderCode === codeB).map((e) => String(e.id))
    await waitFor(async () => stream.messages.length + resumed.messages.length >= streamed.length, 'the resumed stream')
    await resumed.close()
    expect([...stream.messages, ...resumed.messages].map((m) => m.id)).toEqual(streamed)

    // Redelivery sends the healthy receiver's events again from an id on.
    const before = healthy.received.length
    const from = healthy.received.map((r) => Number(r.id)).sort((a, b) => a - b)[0]!
    const redeliver = await admin(`/v1/webhooks/${subscriptions.get(healthy)!.id}/redeliver`, {
      method: 'POST',
      body: JSON.stringify({ fromEventId: from }),
    })
    expect(redeliver.status).toBe(202)
    const { queued } = (await redeliver.json()) as { queued: number }
    expect(queued).toBe(new Set(healthy.received.map((r) => r.id)).size)
    await waitFor(async () => healthy.received.length >= before + queued, 'the redelivery')
  }, 240_000)
})
