import fc from 'fast-check'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, type Api } from '../src/api/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 8453
const WALLET = '0xd8da6bf26964af9d7eed9e03e53415d37aa96045'
const HASH = `0x${'ab'.repeat(32)}`
const ENVELOPE_CODE = /^[a-z][a-z0-9_]*$/

let db: TestDatabase
let api: Api
let port: number
let tablesBefore: string[]
const agent = new Agent({ keepAlive: true, maxSockets: 4 })

beforeAll(async () => {
  db = await createTestDatabase()
  await db.store.pool.query(
    `INSERT INTO attributions (chain_id, tx_hash, builder_code, code_index, block_number, block_hash, block_timestamp, from_address, sender, schema_id, codes, status)
     SELECT $1, '0x' || lpad(to_hex(i), 64, '0'), 'bc_' || lpad(to_hex(i % 7), 8, '0'), 0, i, $2, now() - i * interval '1 minute', $3, $3, 0,
       ARRAY['bc_' || lpad(to_hex(i % 7), 8, '0')], 'confirmed'
     FROM generate_series(1, 50) AS i`,
    [CHAIN_ID, HASH, WALLET],
  )
  tablesBefore = await tableNames()
  api = await createApi({
    config: {
      port: 0,
      builderApiUrl: undefined,
      adminUi: false,
      databaseUrl: db.url,
      redisUrl: 'redis://127.0.0.1:6379',
      redisPrefix: 'unused',
    },
    chainId: CHAIN_ID,
    store: db.store,
    logger: silentLogger,
    rateLimit: 1_000_000,
    registrationRateLimit: 1_000_000,
    host: '127.0.0.1',
  })
  port = Number(new URL(await api.listen()).port)
})

afterAll(async () => {
  agent.destroy()
  await api?.close()
  await db?.drop()
})

async function tableNames(): Promise<string[]> {
  const { rows } = await db.store.pool.query(
    `SELECT schemaname || '.' || tablename AS name FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
  )
  return rows.map((row) => row.name)
}

type Sent = { method: string; path: string; body?: string; headers?: Record<string, string> }
type Answer = { status: number; body: string; headers: Record<string, unknown> }

function send({ method, path, body, headers = {} }: Sent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: body === undefined ? headers : { 'content-length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => (text += chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

/** Sends bytes that are not valid HTTP on a fresh connection and returns what comes back. */
function sendRaw(bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes))
    let text = ''
    socket.on('data', (chunk) => (text += chunk.toString()))
    socket.on('close', () => resolve(text))
    socket.on('error', () => resolve(text))
    socket.setTimeout(5_000, () => socket.destroy())
  })
}

function expectEnvelope(sent: Sent, answer: Answer): void {
  const label = `${sent.method} ${sent.path.slice(0, 120)} ${sent.body?.slice(0, 60) ?? ''}`
  expect(answer.status, label).toBeLessThan(500)
  if (sent.method === 'HEAD' || answer.status < 400) return
  const parsed = JSON.parse(answer.body) as { error: { code: string; message: string } }
  expect(Object.keys(parsed), label).toEqual(['error'])
  expect(parsed.error.code, label).toMatch(ENVELOPE_CODE)
  expect(parsed.error.message.length, label).toBeGreaterThan(0)
  expect(answer.body, label).not.toMatch(/node_modules|\.ts:\d|stack/)
}

const hostile = [
  "' OR '1'='1",
  "'; DROP TABLE attributions; --",
  'bc_x; DELETE FROM builder_codes',
  '1 UNION SELECT * FROM pg_authid',
  '$1',
  '\u0000',
  '%00',
  '%',
  '%ZZ',
  '%E0%A4%A',
  '__proto__',
  'constructor',
  '{"$gt":""}',
  '[]',
  '-1',
  '1e309',
  'NaN',
  'Infinity',
  '0x',
  '0x-1',
  `0x${'f'.repeat(15)}`,
  '9'.repeat(400),
  'ä🙂\u202e',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  'a'.repeat(5000),
  'true\r\nX-Injected: 1',
  '2025-02-30',
  '2025-01-01T25:00:00Z',
  '0000-01-01T00:00:00Z',
  'null',
  ' ',
]

const paramNames = [
  'builderCode',
  'walletAddress',
  'fromBlock',
  'toBlock',
  'since',
  'until',
  'status',
  'includeRemoved',
  'limit',
  'cursor',
  'address',
  'topic0',
  'topic1',
  'topic2',
  'topic3',
  'interval',
  'page',
  '__proto__',
  'constructor',
  'toString',
  '',
]

const value = fc.oneof(
  fc.constantFrom(...hostile),
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.stringMatching(/^0x[0-9a-fA-F]{0,70}$/),
  fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
  fc.json({ maxDepth: 2 }).map((json) => Buffer.from(json).toString('base64url')),
)

const query = fc
  .array(fc.tuple(fc.constantFrom(...paramNames), value), { minLength: 1, maxLength: 4 })
  .map((pairs) => pairs.map(([name, v]) => `${encodeURIComponent(name)}=${encodeURIComponent(v)}`).join('&'))

const pathValue = fc
  .oneof(fc.constantFrom(...hostile), fc.string({ maxLength: 120 }), fc.stringMatching(/^0x[0-9a-zA-Z]{0,80}$/))
  .map(encodeURIComponent)

const getRequest: fc.Arbitrary<Sent> = fc.oneof(
  query.map((q) => ({ method: 'GET', path: `/v1/attributions?${q}` })),
  query.map((q) => ({ method: 'GET', path: `/v1/logs?${q}` })),
  fc.tuple(pathValue, query).map(([code, q]) => ({ method: 'GET', path: `/v1/builder-codes/${code}/stats?${q}` })),
  fc
    .tuple(pathValue, fc.option(query))
    .map(([hash, q]) => ({ method: 'GET', path: `/v1/transactions/${hash}/attribution${q ? `?${q}` : ''}` })),
  fc
    .tuple(pathValue, fc.option(query))
    .map(([wallet, q]) => ({ method: 'GET', path: `/v1/agents/builder-codes/${wallet}${q ? `?${q}` : ''}` })),
  fc
    .tuple(fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'GET'), pathValue)
    .map(([method, p]) => ({ method, path: `/v1/${p}` })),
)

const bodyValue = fc.oneof(
  fc.constantFrom(...hostile).map((v) => JSON.stringify({ walletAddress: v })),
  value.map((v) => JSON.stringify({ walletAddress: v })),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 200 }),
  fc.constantFrom(
    '{"walletAddress":',
    '{"__proto__":{"admin":true},"walletAddress":"0x00"}',
    '{"constructor":{"prototype":{}}}',
    '',
    'null',
    '[]',
    `{"walletAddress":"${WALLET}","walletAddress":1}`,
  ),
  fc.integer({ min: 16_000, max: 200_000 }).map((size) => JSON.stringify({ walletAddress: WALLET, pad: 'x'.repeat(size) })),
)

const postRequest: fc.Arbitrary<Sent> = fc
  .tuple(
    bodyValue,
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      ';;;',
      'application/json; charset=latin1',
    ),
  )
  .map(([body, contentType]) => ({ method: 'POST', path: '/v1/agents/builder-codes', body, headers: { 'content-type': contentType } }))

describe('malformed requests', () => {
  it('never get a 5xx: every refusal is a 4xx with the error envelope, across all routes', async () => {
    const requests = [...fc.sample(getRequest, { numRuns: 320, seed: 8021 }), ...fc.sample(postRequest, { numRuns: 160, seed: 8021 })]
    const curated: Sent[] = [
      { method: 'GET', path: '/v1/attributions?builderCode=%ZZ' },
      { method: 'GET', path: '/v1/transactions/%E0%A4%A/attribution' },
      { method: 'GET', path: `/v1/agents/builder-codes/${'0'.repeat(400)}` },
      { method: 'GET', path: '/v1/attributions?limit=1&limit=2&limit=3' },
      { method: 'GET', path: '/v1/attributions?status[]=pending' },
      { method: 'GET', path: '/v1/attributions?status[a]=b' },
      { method: 'GET', path: '/v1/attributions?&&&=&=' },
      { method: 'GET', path: `/v1/attributions?${Array.from({ length: 500 }, (_, i) => `p${i}=1`).join('&')}` },
      { method: 'GET', path: `/v1/logs?address=${Array.from({ length: 1000 }, () => WALLET).join('&address=')}` },
      { method: 'POST', path: '/v1/agents/builder-codes', body: JSON.stringify({ walletAddress: WALLET }) },
      {
        method: 'POST',
        path: '/v1/agents/builder-codes',
        body: JSON.stringify({ walletAddress: WALLET }),
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      },
      { method: 'POST', path: '/v1/attributions', body: '{}', headers: { 'content-type': 'application/json' } },
      { method: 'GET', path: '/v1/agents/builder-codes', headers: { 'content-type': 'application/json' }, body: '{"walletAddress":1}' },
    ]
    const all = [...requests, ...curated]
    expect(all.length).toBeGreaterThan(450)
    for (const sent of all) expectEnvelope(sent, await send(sent))

    for (const raw of [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/9.9\r\n\r\n',
      `GET /healthz HTTP/1.1\r\nHost: x\r\n${`X-Big: ${'a'.repeat(20_000)}`}\r\n\r\n`,
      'GET /v1/logs HTTP/1.1\r\nContent-Length: -5\r\n\r\n',
    ]) {
      const answer = await sendRaw(raw)
      const [head, body] = answer.split('\r\n\r\n')
      expect(head, raw.slice(0, 30)).toMatch(/^HTTP\/1\.1 4\d\d /)
      expect(JSON.parse(body!).error.code).toMatch(ENVELOPE_CODE)
    }
  })

  it('leaves the server healthy and the data untouched', async () => {
    expect((await send({ method: 'GET', path: '/healthz' })).status).toBe(200)
    expect((await send({ method: 'GET', path: '/readyz' })).status).toBe(200)
    const page = await send({ method: 'GET', path: '/v1/attributions?limit=1000' })
    expect(page.status).toBe(200)
    expect(JSON.parse(page.body).items).toHaveLength(50)
    // Only well-formed registrations were stored; no table appeared or went away.
    const { rows } = await db.store.pool.query(`SELECT builder_code, wallet_address FROM builder_codes`)
    expect(rows.map((row) => row.wallet_address)).toContain(WALLET)
    for (const row of rows) expect(`${row.builder_code} ${row.wallet_address}`).toMatch(/^bc_[a-z0-9]{8} 0x[0-9a-f]{40}$/)
    expect(await tableNames()).toEqual(tablesBefore)
  })
})
