/**
 * The API's edges against a running server: security headers on every route, CORS only for the
 * configured origins, slow clients cut off, the connection cap, and rate limits per real client behind
 * a proxy (TRUST_PROXY), per IPv6 /64, and for registration (REGISTRATION_RATE_LIMIT).
 */
import { SNAPSHOT_MAX_AGE_MS } from '../src/api/snapshot.js'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, createApiRedis, type CreateApiParameters } from '../src/api/index.js'
import { loadConfig } from '../src/config/index.js'
import { freePort } from '../harness/devnet/anvil.js'
import { createRpcClient } from '../src/rpc/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { waitFor } from './helpers/compare.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
let db: TestDatabase
const cleanups: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  db = await createTestDatabase()
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  await db?.drop()
})

/** A listening API on 127.0.0.1; resolves to its base URL. */
async function startApi(overrides: Partial<CreateApiParameters> & { dashboardDir?: string; prefix?: string } = {}) {
  const { dashboardDir, prefix = 'unused', ...rest } = overrides
  const api = await createApi({
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi: false,
      databaseUrl: db.url,
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
      dashboardDir,
    },
    chainId: CHAIN_ID,
    store: db.store,
    logger: silentLogger,
    host: '127.0.0.1',
    ...rest,
  })
  cleanups.push(() => api.close())
  const url = await api.listen()
  return { api, url, port: Number(new URL(url).port) }
}

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket))
    socket.once('error', reject)
    cleanups.push(async () => socket.destroy())
  })
}

/** Everything the server sends until it closes the connection. */
function untilClosed(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()))
    socket.on('error', () => {})
    socket.once('close', () => resolve(text))
  })
}

/** One keep-alive GET on an open socket; resolves to the status line once the whole answer is in. */
function getOn(socket: Socket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const onData = (chunk: Buffer) => {
      text += chunk.toString()
      const [head, body = ''] = text.split('\r\n\r\n')
      const length = Number(/content-length: (\d+)/i.exec(head!)?.[1] ?? 0)
      if (text.includes('\r\n\r\n') && Buffer.byteLength(body) >= length) {
        socket.off('data', onData)
        resolve(head!.split('\r\n')[0]!)
      }
    }
    socket.on('data', onData)
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n`)
  })
}

describe('security headers', () => {
  it('sends helmet headers on API routes, errors and the event stream; the dashboard keeps its strict CSP; /docs cannot be framed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codetrail-dashboard-'))
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }))
    mkdirSync(join(dir, 'assets'))
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>codetrail</title>')
    const { url } = await startApi({ dashboardDir: dir })

    for (const path of ['/v1/logs?limit=1', '/v1/no-such-route', '/healthz', '/openapi.json']) {
      const response = await fetch(`${url}${path}`)
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff')
      expect(response.headers.get('x-frame-options'), path).toBe('DENY')
      expect(response.headers.get('content-security-policy'), path).toMatch(/default-src 'none'.*frame-ancestors 'none'/)
      expect(response.headers.get('strict-transport-security'), path).toMatch(/max-age=\d+/)
      expect(response.headers.get('referrer-policy'), path).toBe('no-referrer')
      // Fastify's own headers give nothing away either.
      expect(response.headers.get('x-powered-by')).toBeNull()
    }

    const dashboard = await fetch(`${url}/`)
    expect(dashboard.status).toBe(200)
    expect(dashboard.headers.get('content-security-policy')).toBe(
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    )
    expect(dashboard.headers.get('x-frame-options')).toBe('DENY')

    for (const path of ['/docs/', '/docs/static/index.html']) {
      const docs = await fetch(`${url}${path}`)
      expect(docs.status, path).toBe(200)
      expect(docs.headers.get('x-frame-options'), path).toBe('DENY')
      expect(docs.headers.get('content-security-policy'), path).toMatch(/frame-ancestors 'none'/)
      expect(docs.headers.get('content-security-policy'), path).not.toMatch(/frame-ancestors 'self'/)
    }

    const abort = new AbortController()
    const stream = await fetch(`${url}/v1/stream`, { signal: abort.signal })
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(stream.headers.get('x-content-type-options')).toBe('nosniff')
    abort.abort()
  })
})

describe('CORS', () => {
  const APP = 'https://app.example.com'

  it('answers allowed origins on the API and the stream, preflight included, and no other origin', async () => {
    const { url } = await startApi({ corsOrigins: [APP] })
    const allowed = await fetch(`${url}/v1/logs?limit=1`, { headers: { origin: APP } })
    expect(allowed.status).toBe(200)
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP)
    expect(allowed.headers.get('access-control-expose-headers')).toMatch(/retry-after/)

    const preflight = await fetch(`${url}/v1/agents/builder-codes`, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP)
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/POST/)

    const abort = new AbortController()
    const stream = await fetch(`${url}/v1/stream`, { headers: { origin: APP }, signal: abort.signal })
    expect(stream.headers.get('access-control-allow-origin')).toBe(APP)
    abort.abort()

    const denied = await fetch(`${url}/v1/logs?limit=1`, { headers: { origin: 'https://evil.example' } })
    expect(denied.headers.get('access-control-allow-origin')).toBeNull()
    const deniedPreflight = await fetch(`${url}/v1/agents/builder-codes`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    })
    expect(deniedPreflight.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('sends no CORS headers at all by default', async () => {
    const { url } = await startApi()
    const response = await fetch(`${url}/v1/logs?limit=1`, { headers: { origin: APP } })
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('timeouts and the connection cap', () => {
  it('cuts off a client that sends its body too slowly with 408, and one that never finishes its headers', async () => {
    const { port } = await startApi({ edges: { requestTimeoutMs: 1_000, headersTimeoutMs: 500, checkIntervalMs: 100 } })
    const slowBody = await openSocket(port)
    const bodyAnswer = untilClosed(slowBody)
    slowBody.write(
      'POST /v1/agents/builder-codes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"wa',
    )
    const answer = await bodyAnswer
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(answer).toContain('"code":"request_timeout"')

    const slowHeaders = await openSocket(port)
    const headersAnswer = untilClosed(slowHeaders)
    slowHeaders.write('GET /v1/logs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')
    expect(await headersAnswer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('refuses connections beyond the cap and accepts again once one closes', async () => {
    const { api, port } = await startApi({ edges: { maxConnections: 3 } })
    const held = await Promise.all([openSocket(port), openSocket(port), openSocket(port)])
    for (const socket of held) expect(await getOn(socket, '/healthz')).toBe('HTTP/1.1 200 OK')

    const extra = await openSocket(port)
    const extraAnswer = untilClosed(extra)
    extra.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    expect(await extraAnswer).toBe('')
    // The held sockets still work.
    expect(await getOn(held[0]!, '/healthz')).toBe('HTTP/1.1 200 OK')

    held[2]!.destroy()
    const count = () => new Promise<number>((resolve) => api.app.server.getConnections((_error, n) => resolve(n)))
    await waitFor(async () => (await count()) === 2, 'the server to see the closed socket', 10_000, 50)
    const again = await openSocket(port)
    expect(await getOn(again, '/healthz')).toBe('HTTP/1.1 200 OK')
  })
})

describe('rate limits per client', () => {
  async function statuses(url: string, headers: Record<string, string>[], path = '/v1/logs?limit=1') {
    const out: number[] = []
    for (const header of headers) out.push((await fetch(`${url}${path}`, { headers: header })).status)
    return out
  }

  it('with TRUST_PROXY, limits each client named by X-Forwarded-For; without it, the proxy is the one client', async () => {
    const redis = createApiRedis(REDIS_URL)
    cleanups.push(async () => redis.disconnect())
    const { prefix, cleanup } = createTestRedisPrefix()
    cleanups.push(cleanup)
    const { url } = await startApi({ redis, prefix, rateLimit: 2, trustProxy: ['127.0.0.1'] })
    const a = { 'x-forwarded-for': '203.0.113.5' }
    const b = { 'x-forwarded-for': '198.51.100.7, 203.0.113.6' }
    expect(await statuses(url, [a, a, a])).toEqual([200, 200, 429])
    expect(await statuses(url, [b, b, b])).toEqual([200, 200, 429])

    const direct = await startApi({ rateLimit: 2 })
    expect(await statuses(direct.url, [a, b, { 'x-forwarded-for': '192.0.2.1' }])).toEqual([200, 200, 429])

    // A hop count works the same way.
    const hops = await startApi({ rateLimit: 1, trustProxy: 1 })
    expect(await statuses(hops.url, [a, b, a])).toEqual([200, 200, 429])
  })

  it('groups IPv6 clients by /64', async () => {
    const { url } = await startApi({ rateLimit: 2, trustProxy: ['127.0.0.1'] })
    const first = { 'x-forwarded-for': '2001:db8:1:2::1' }
    const sameSlash64 = { 'x-forwarded-for': '2001:db8:1:2:ffff:ffff:ffff:9' }
    const otherSlash64 = { 'x-forwarded-for': '2001:db8:1:3::1' }
    expect(await statuses(url, [first, sameSlash64, first])).toEqual([200, 200, 429])
    expect(await statuses(url, [otherSlash64])).toEqual([200])
  })

  it('limits registrations per client at REGISTRATION_RATE_LIMIT, below the global limit', async () => {
    const { url } = await startApi({ rateLimit: 100, registrationRateLimit: 2, trustProxy: ['127.0.0.1'] })
    const register = (client: string, n: number) =>
      fetch(`${url}/v1/agents/builder-codes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
        body: JSON.stringify({ walletAddress: `0x${n.toString(16).padStart(40, '0')}` }),
      })
    const answers = [await register('203.0.113.9', 1), await register('203.0.113.9', 2), await register('203.0.113.9', 3)]
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 429])
    expect((await answers[2]!.json()).error).toEqual({
      code: 'rate_limited',
      message: expect.stringMatching(/at most 2 per minute per client/),
    })
    expect((await register('203.0.113.10', 4)).status).toBe(200)
    // Reading stays open to the client that may not register any more.
    expect(await statuses(url, [{ 'x-forwarded-for': '203.0.113.9' }])).toEqual([200])
  })
})

/** A node over HTTP answering eth_getBlockByNumber, counting the calls it gets. */
async function countingNode() {
  const calls: string[] = []
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      const parsed = JSON.parse(body) as { id: number; method: string } | { id: number; method: string }[]
      const answers = [parsed].flat().map((call) => {
        calls.push(call.method)
        return { jsonrpc: '2.0', id: call.id, result: { number: '0x64', timestamp: '0x6553f100', hash: `0x${'11'.repeat(32)}` } }
      })
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => new Promise((resolve) => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, calls }
}

describe('readiness and status from a snapshot', () => {
  it('makes at most a few node calls under 200 requests a second to /readyz and /v1/status', async () => {
    const node = await countingNode()
    const { url } = await startApi({ rpc: createRpcClient({ url: node.url }), rateLimit: 1_000_000 })
    const seconds = 4
    const statuses = new Map<number, number>()
    const began = performance.now()
    for (let tick = 0; tick < seconds * 10; tick++) {
      const started = performance.now()
      // 20 requests every 100 ms: 200 a second, half of them /readyz, half /v1/status.
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => fetch(`${url}${i % 2 === 0 ? '/readyz' : '/v1/status'}`).then((response) => response.status)),
      )
      for (const status of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1)
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 100 - (performance.now() - started))))
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: seconds * 200 })
    // One refresh per snapshot age, whatever the request rate: 2 or 3 in 4 s (a loaded machine stretches the 800 requests over more snapshots).
    const snapshots = Math.floor((performance.now() - began) / SNAPSHOT_MAX_AGE_MS) + 1
    expect(node.calls.every((method) => method === 'eth_getBlockByNumber')).toBe(true)
    expect(node.calls.length).toBeGreaterThanOrEqual(1)
    expect(node.calls.length).toBeLessThanOrEqual(snapshots)
  })

  it('answers 503 not_ready only when the database is down', async () => {
    const api = await createApi({
      config: {
        port: 0,
        builderApiUrl: undefined,
        adminUi: false,
        databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/postgres`,
        redisUrl: REDIS_URL,
        redisPrefix: 'unused',
      },
      chainId: CHAIN_ID,
      logger: silentLogger,
    })
    cleanups.push(() => api.close())
    const response = await api.app.inject({ url: '/readyz' })
    expect(response.statusCode).toBe(503)
    expect(response.json()).toMatchObject({
      ready: false,
      error: { code: 'not_ready', message: 'Not ready: database is not reachable.' },
      checks: { database: { status: 'down' }, node: { status: 'not_configured' } },
    })
  })
})

describe('configuration', () => {
  it('reads TRUST_PROXY, CORS_ORIGINS and REGISTRATION_RATE_LIMIT, with one clear line per bad value', () => {
    expect(loadConfig({})).toMatchObject({ trustProxy: undefined, corsOrigins: [], registrationRateLimit: 30 })
    expect(
      loadConfig({
        TRUST_PROXY: '10.0.0.0/8, 192.168.1.1,::1',
        CORS_ORIGINS: 'https://a.example, http://localhost:5173/',
        REGISTRATION_RATE_LIMIT: '5',
      }),
    ).toMatchObject({
      trustProxy: ['10.0.0.0/8', '192.168.1.1', '::1'],
      corsOrigins: ['https://a.example', 'http://localhost:5173'],
      registrationRateLimit: 5,
    })
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2)
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(
      'invalid TRUST_PROXY="10.0.0.0/33": expected a hop count from 1 to 32, or comma-separated IP addresses and CIDR ranges',
    )
    expect(() => loadConfig({ CORS_ORIGINS: 'https://a.example/app' })).toThrow(
      /^invalid CORS_ORIGINS="https:\/\/a.example\/app": expected comma-separated origins/,
    )
    expect(() => loadConfig({ CORS_ORIGINS: '*' })).toThrow(/^invalid CORS_ORIGINS="\*"/)
    expect(() => loadConfig({ REGISTRATION_RATE_LIMIT: '0' })).toThrow(
      'invalid REGISTRATION_RATE_LIMIT="0": expected an integer from 1 to 1000000',
    )
  })
})
