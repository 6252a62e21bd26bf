/**
 * Webhook targets: link-local and cloud-metadata addresses always refused; loopback and private ranges
 * refused unless WEBHOOK_ALLOW_PRIVATE=1; a host name judged by the addresses it resolves to, at the
 * route and at the socket (the address connected to is the one checked); redirects not followed.
 * Every receiver here is on 127.0.0.1; refusals of other addresses happen before any connection.
 */
import { randomBytes } from 'node:crypto'
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { Job } from 'bullmq'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi } from '../src/api/index.js'
import { loadConfig } from '../src/config/index.js'
import { createDeliveryProcessor } from '../src/delivery/index.js'
import { refusedAddress, refusedUrl, webhookTargets } from '../src/delivery/targets.js'
import { silentLogger } from '../src/internal/logger.js'
import type { WebhookJobData } from '../src/queue/index.js'
import { addOutstanding, insertSubscription, listDeliveries } from '../src/store/index.js'
import { createTestDatabase, REDIS_URL, type TestDatabase } from '../harness/services.js'

const ADMIN_TOKEN = 'test-admin-token-0123456789'
let db: TestDatabase
const cleanups: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  db = await createTestDatabase()
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  await db?.drop()
})

/** A receiver on 127.0.0.1 counting the connections and requests it gets. */
async function receiver(answer: (path: string) => { status: number; headers?: Record<string, string> } = () => ({ status: 200 })) {
  const seen = { connections: 0, requests: [] as string[] }
  const server: Server = createServer((request, response) => {
    seen.requests.push(request.url!)
    request.resume()
    const { status, headers } = answer(request.url!)
    response.writeHead(status, headers).end()
  })
  server.on('connection', () => seen.connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => new Promise((resolve) => server.close(resolve)))
  return { port: (server.address() as { port: number }).port, seen }
}

async function startApi(webhookAllowPrivate: boolean) {
  const api = await createApi({
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi: false,
      databaseUrl: db.url,
      redisUrl: REDIS_URL,
      redisPrefix: 'unused',
      adminToken: ADMIN_TOKEN,
      webhookAllowPrivate,
    },
    chainId: 1,
    store: db.store,
    logger: silentLogger,
    webhookQueue: { enqueue: async () => {} },
  })
  cleanups.push(() => api.close())
  return (url: string) =>
    api.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { url, events: ['attribution.confirmed'] },
    })
}

const ALWAYS_REFUSED = [
  'http://169.254.169.254/latest/meta-data/',
  'http://[fd00:ec2::254]/latest/meta-data/',
  'http://100.100.100.200/latest/meta-data/',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://[fe80::1]/hook',
  'http://0.0.0.0:8080/hook',
  'http://[::ffff:169.254.169.254]/hook',
]

describe('the subscription route', () => {
  it('refuses loopback, private, link-local and metadata URLs (names by what they resolve to) without WEBHOOK_ALLOW_PRIVATE', async () => {
    const { port, seen } = await receiver()
    const subscribe = await startApi(false)
    for (const url of [
      `http://127.0.0.1:${port}/hook`,
      `http://localhost:${port}/hook`,
      `http://2130706433:${port}/hook`,
      `http://[::1]:${port}/hook`,
      `http://[::ffff:127.0.0.1]:${port}/hook`,
      'http://10.1.2.3/hook',
      'http://172.16.0.9/hook',
      'https://192.168.1.1/hook',
      'http://[fd12:3456::1]/hook',
      ...ALWAYS_REFUSED,
    ]) {
      const response = await subscribe(url)
      expect(response.statusCode, url).toBe(400)
      expect(response.json().error, url).toEqual({
        code: 'webhook_url_refused',
        message: expect.stringMatching(/^Body field url is refused: .+\.$/),
      })
    }
    expect((await subscribe(`http://localhost:${port}/hook`)).json().error.message).toMatch(
      /localhost: 127\.0\.0\.1 is a loopback address \(set WEBHOOK_ALLOW_PRIVATE=1/,
    )
    expect((await subscribe('http://169.254.169.254/')).json().error.message).toMatch(/169\.254\.169\.254 is link-local/)
    expect(seen.connections).toBe(0)
  })

  it('accepts loopback and private URLs with WEBHOOK_ALLOW_PRIVATE=1, never link-local or metadata ones', async () => {
    const { port } = await receiver()
    const subscribe = await startApi(true)
    for (const url of [`http://127.0.0.1:${port}/hook`, `http://localhost:${port}/hook`, 'http://10.1.2.3/hook'])
      expect((await subscribe(url)).statusCode, url).toBe(201)
    for (const url of ALWAYS_REFUSED) expect((await subscribe(url)).statusCode, url).toBe(400)
  })

  it('reads WEBHOOK_ALLOW_PRIVATE as 0 or 1', () => {
    expect(loadConfig({}).webhookAllowPrivate).toBe(false)
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE: '1' }).webhookAllowPrivate).toBe(true)
    expect(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'yes' })).toThrow('invalid WEBHOOK_ALLOW_PRIVATE="yes": expected 0, 1')
  })
})

describe('the address policy', () => {
  it('judges addresses and URLs without a lookup', () => {
    const closed = { allowPrivate: false }
    const open = { allowPrivate: true }
    expect(refusedAddress('8.8.8.8', closed)).toBeNull()
    expect(refusedAddress('2606:4700::1111', closed)).toBeNull()
    expect(refusedAddress('127.0.0.1', open)).toBeNull()
    expect(refusedAddress('169.254.169.254', open)).toMatch(/link-local/)
    expect(refusedAddress('fd00:ec2::254', open)).toMatch(/metadata/)
    expect(refusedAddress('::ffff:10.0.0.1', closed)).toMatch(/^10\.0\.0\.1 is a private address/)
    expect(refusedAddress('224.0.0.1', open)).toMatch(/not a public address \(multicast\)/)
    expect(refusedUrl('ftp://example.com/', open)).toBe('not an http or https URL')
    expect(refusedUrl('http://0x7f.1/', closed)).toMatch(/^127\.0\.0\.1 is a loopback address/)
    expect(refusedUrl('http://METADATA.google.internal./', open)).toBe('metadata.google.internal is a cloud metadata host')
    expect(refusedUrl('https://example.com/hook', closed)).toBeNull()
  })
})

describe('delivery sockets', () => {
  it('refuse at connect time a name resolving to loopback (no connection made) and an IP literal (no request sent)', async () => {
    const { port, seen } = await receiver()
    const { agents } = webhookTargets({ allowPrivate: false })
    const send = (url: string) =>
      new Promise<Error | number>((resolve) => {
        const request = httpRequest(url, { method: 'POST', agent: agents['http:'] }, (response) => resolve(response.statusCode!))
        request.on('error', resolve)
        request.end('{}')
      })
    const byName = await send(`http://localhost:${port}/hook`)
    expect(byName).toMatchObject({ name: 'WebhookTargetError', message: expect.stringMatching(/^localhost: .* is a loopback address/) })
    expect(seen.connections).toBe(0)

    const byLiteral = await send(`http://127.0.0.1:${port}/hook`)
    expect(byLiteral).toMatchObject({ name: 'WebhookTargetError', message: expect.stringMatching(/^127\.0\.0\.1 is a loopback address/) })
    expect(seen.requests).toEqual([])

    const { agents: allowed } = webhookTargets({ allowPrivate: true })
    const delivered = await new Promise<number>((resolve, reject) => {
      const request = httpRequest(`http://localhost:${port}/hook`, { method: 'POST', agent: allowed['http:'] }, (response) =>
        resolve(response.statusCode!),
      )
      request.on('error', reject)
      request.end('{}')
    })
    expect([delivered, seen.requests]).toEqual([200, ['/hook']])
  })
})

describe('the delivery job', () => {
  /** A subscription to `url` with one outstanding event; runs one delivery job and returns what it recorded. */
  async function deliverOnce(url: string, allowPrivate: boolean) {
    const id = `wh_${randomBytes(8).toString('hex')}`
    await insertSubscription(db.store.pool, {
      id,
      url,
      secret: 'whsec_test',
      events: ['attribution.confirmed'],
      builderCodes: null,
      walletAddresses: null,
      roles: null,
    })
    const txHash = `0x${randomBytes(32).toString('hex')}`
    const { rows } = await db.store.pool.query<{ id: number }>(
      `INSERT INTO webhook_events (type, chain_id, tx_hash, user_op_hash, builder_code, sender, block_number, block_timestamp, status, removed)
       VALUES ('attribution.confirmed', 1, $1, $2, 'bc_00000001', $3, 1, now(), 'confirmed', false) RETURNING id::int`,
      [txHash, `0x${'0'.repeat(64)}`, `0x${'1'.repeat(40)}`],
    )
    const eventId = rows[0]!.id
    await addOutstanding(db.store.pool, [{ subscriptionId: id, eventId, txHash }])
    const process = createDeliveryProcessor({
      pool: db.store.pool,
      logger: silentLogger,
      timeoutMs: 2_000,
      maxFailures: 100,
      backoffMs: 1_000,
      allowPrivate,
      leaseMs: 2_000,
      // A failed drain queues its retry; nothing else of BullMQ is involved.
      enqueue: async () => {},
    })
    const job = { data: { subscriptionId: id } } as unknown as Job<WebhookJobData>
    const outcome = await process(job)
    const [delivery] = await listDeliveries(db.store.pool, id, 1)
    return { outcome, delivery }
  }

  it('records a refusal for a stored URL the policy no longer allows, without connecting', async () => {
    const { port, seen } = await receiver()
    const { outcome, delivery } = await deliverOnce(`http://127.0.0.1:${port}/hook`, false)
    expect(outcome).toBe('failed')
    expect(delivery).toMatchObject({
      ok: false,
      httpStatus: null,
      error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback address/),
    })
    const byName = await deliverOnce(`http://localhost:${port}/hook`, false)
    expect(byName.delivery).toMatchObject({ ok: false, httpStatus: null, error: expect.stringMatching(/loopback address/) })
    expect(seen.connections).toBe(0)
  })

  it('does not follow a redirect: a 3xx is a failed delivery and the target it names gets nothing', async () => {
    const target = await receiver()
    const redirecting = await receiver(() => ({ status: 302, headers: { location: `http://127.0.0.1:${target.port}/internal` } }))
    const { outcome, delivery } = await deliverOnce(`http://127.0.0.1:${redirecting.port}/hook`, true)
    expect(outcome).toBe('failed')
    expect(delivery).toMatchObject({ ok: false, httpStatus: 302, error: 'HTTP 302 (redirects are not followed)' })
    expect(redirecting.seen.requests).toEqual(['/hook'])
    expect(target.seen.connections).toBe(0)
  })
})
