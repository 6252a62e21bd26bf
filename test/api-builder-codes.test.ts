import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { checksumAddress, type Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApi, createBuilderCodeClient, BuilderCodeClientError, type Api } from '../src/api/index.js'
import { BUILDER_CODE_PATTERN, deriveBuilderCode } from '../src/attribution/index.js'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { silentLogger } from '../src/internal/logger.js'
import { createRpcClient } from '../src/rpc/index.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
const UPSTREAM_CHAIN_ID = 777
/** anvil's first dev account. */
const ACCOUNT: Address = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'
const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Address

let db: TestDatabase
let anvil: Anvil
let api: Api

const baseConfig = (databaseUrl: string) => ({
  port: 0,
  builderApiUrl: undefined as string | undefined,
  adminUi: false,
  databaseUrl,
  redisUrl: 'redis://127.0.0.1:6379',
  redisPrefix: 'unused',
})

beforeAll(async () => {
  ;[db, anvil] = await Promise.all([createTestDatabase(), startAnvil({ noMining: true })])
  api = await createApi({
    config: baseConfig(db.url),
    chainId: CHAIN_ID,
    store: db.store,
    rpc: createRpcClient({ url: anvil.url }),
    logger: silentLogger,
    rateLimit: 1_000_000,
    registrationRateLimit: 1_000_000,
  })
})

afterAll(async () => {
  await api?.close()
  await anvil?.stop()
  await db?.drop()
})

async function register(target: Api, walletAddress: unknown) {
  const response = await target.app.inject({ method: 'POST', url: '/v1/agents/builder-codes', payload: { walletAddress } })
  return { status: response.statusCode, body: response.json() }
}

async function storedCodes(chainId: number) {
  const { rows } = await db.store.pool.query(
    `SELECT builder_code, wallet_address, source FROM builder_codes WHERE chain_id = $1 ORDER BY wallet_address`,
    [chainId],
  )
  return rows
}

describe('POST /v1/agents/builder-codes (codes issued here)', () => {
  it('derives the same code for a wallet in any letter case and answers the wallet lowercase', async () => {
    const lower = '0xd8da6bf26964af9d7eed9e03e53415d37aa96045' as Address
    const spellings = [lower, checksumAddress(lower), `0x${lower.slice(2).toUpperCase()}`, `0X${lower.slice(2).toUpperCase()}`]
    for (const spelling of spellings) {
      const { status, body } = await register(api, spelling)
      expect(status, spelling).toBe(200)
      expect(body).toEqual({ builderCode: deriveBuilderCode(lower, 0), walletAddress: lower })
    }
    expect(deriveBuilderCode(lower, 0)).toMatch(BUILDER_CODE_PATTERN)
    expect((await storedCodes(CHAIN_ID)).filter((row) => row.wallet_address === lower)).toEqual([
      { builder_code: deriveBuilderCode(lower, 0), wallet_address: lower, source: 'local' },
    ])
  })

  it('gives the same code again after the record is gone, as on a fresh database', async () => {
    const address = wallet(0x1234)
    const first = await register(api, address)
    await db.store.pool.query(`DELETE FROM builder_codes WHERE chain_id = $1 AND wallet_address = $2`, [CHAIN_ID, address])
    const again = await register(api, address)
    expect(again.body).toEqual(first.body)
  })

  it('moves to the next attempt, deterministically, when another wallet holds the derived code', async () => {
    const target = wallet(0xc011)
    await db.store.pool.query(
      `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source) VALUES ($1, $2, $3, 'upstream'), ($1, $4, $5, 'upstream')`,
      [CHAIN_ID, deriveBuilderCode(target, 0), wallet(0xaaa1), deriveBuilderCode(target, 1), wallet(0xaaa2)],
    )
    const { status, body } = await register(api, target)
    expect(status).toBe(200)
    expect(body.builderCode).toBe(deriveBuilderCode(target, 2))
    expect((await register(api, target.toUpperCase().replace('0X', '0x'))).body.builderCode).toBe(deriveBuilderCode(target, 2))
  })

  it('stores one code when the same wallet registers concurrently', async () => {
    const address = wallet(0xc0c0)
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => register(api, i % 2 ? address : address.toUpperCase().replace('0X', '0x'))),
    )
    expect(new Set(answers.map((a) => `${a.status}:${a.body.builderCode}`))).toEqual(new Set([`200:${deriveBuilderCode(address, 0)}`]))
    expect((await storedCodes(CHAIN_ID)).filter((row) => row.wallet_address === address)).toHaveLength(1)
  })

  it('refuses invalid addresses and bodies with 400', async () => {
    const lower = '0xd8da6bf26964af9d7eed9e03e53415d37aa96045'
    // The checksum with the case of its first letter flipped.
    const badChecksum = checksumAddress(lower).replace(/[a-fA-F]/, (letter) =>
      letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase(),
    )
    for (const walletAddress of [
      '0x123',
      `${lower}00`,
      `0x${'g'.repeat(40)}`,
      badChecksum,
      '',
      42,
      null,
      ['0x'],
      { a: 1 },
      ` ${lower}`,
      `${lower}\n`,
    ])
      expect((await register(api, walletAddress)).body.error.code, JSON.stringify(walletAddress)).toBe('invalid_wallet_address')
    const bodies: [string, string, number, string][] = [
      ['{}', 'application/json', 400, 'invalid_body'],
      ['[]', 'application/json', 400, 'invalid_body'],
      ['"0xd8da6bf26964af9d7eed9e03e53415d37aa96045"', 'application/json', 400, 'invalid_body'],
      [JSON.stringify({ walletAddress: lower, extra: 1 }), 'application/json', 400, 'invalid_body'],
      [JSON.stringify({ wallet_address: lower, walletAddress: lower }), 'application/json', 400, 'invalid_body'],
      [JSON.stringify({ wallet_address: '0x123' }), 'application/json', 400, 'invalid_wallet_address'],
      ['{"walletAddress":', 'application/json', 400, 'invalid_json'],
      [lower, 'text/plain', 415, 'unsupported_media_type'],
      [`walletAddress=${lower}`, 'application/x-www-form-urlencoded', 415, 'unsupported_media_type'],
      [JSON.stringify({ walletAddress: lower, pad: 'x'.repeat(20_000) }), 'application/json', 413, 'body_too_large'],
    ]
    for (const [payload, contentType, status, code] of bodies) {
      const response = await api.app.inject({
        method: 'POST',
        url: '/v1/agents/builder-codes',
        payload,
        headers: { 'content-type': contentType },
      })
      expect([response.statusCode, response.json().error.code], payload.slice(0, 40)).toEqual([status, code])
    }
  })

  it('accepts wallet_address, the spelling of Base’s docs, and answers in the same shape', async () => {
    const address = '0x00000000000000000000000000000000000000e7'
    const camel = await register(api, address)
    const snake = await api.app.inject({
      method: 'POST',
      url: '/v1/agents/builder-codes',
      payload: { wallet_address: address.toUpperCase().replace('0X', '0x') },
    })
    expect(snake.statusCode).toBe(200)
    expect(snake.json()).toStrictEqual(camel.body)
    expect(Object.keys(snake.json())).toEqual(['builderCode', 'walletAddress'])
  })
})

describe('GET /v1/agents/builder-codes/{walletAddress}', () => {
  it('returns the record with coverage: nonces at latest and pending against attributed transactions', async () => {
    const { body: registered } = await register(api, ACCOUNT)
    const code = registered.builderCode as string
    // One transaction in the mempool (anvil mines nothing until told): pending nonce 1, latest 0.
    const rpc = createRpcClient({ url: anvil.url })
    await rpc.request('eth_sendTransaction', [{ from: ACCOUNT, to: wallet(0xbeef), value: '0x1' }])
    const attribution = (n: number, builderCode: string, status: string, removed = false) => [
      CHAIN_ID,
      `0x${n.toString(16).padStart(64, '0')}`,
      builderCode,
      status,
      removed,
    ]
    for (const values of [
      attribution(1, code, 'finalized'),
      attribution(2, code, 'confirmed'),
      attribution(3, code, 'pending'),
      attribution(4, code, 'confirmed', true),
      attribution(5, 'someone_else', 'confirmed'),
    ])
      await db.store.pool.query(
        `INSERT INTO attributions (chain_id, tx_hash, builder_code, code_index, block_number, block_hash, block_timestamp, from_address, sender, schema_id, codes, status, removed)
         VALUES ($1, $2, $3, 0, 1, $2, now(), $6, $6, 0, ARRAY[$3], $4, $5)`,
        [...values, ACCOUNT],
      )

    const response = await api.app.inject({ url: `/v1/agents/builder-codes/${checksumAddress(ACCOUNT)}` })
    expect(response.statusCode).toBe(200)
    const record = response.json()
    expect(record).toEqual({
      builderCode: code,
      walletAddress: ACCOUNT,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      source: 'local',
      coverage: { latest: { transactions: 0, attributed: 2 }, pending: { transactions: 1, attributed: 3 } },
    })

    await rpc.request('evm_mine')
    const mined = (await api.app.inject({ url: `/v1/agents/builder-codes/${ACCOUNT}` })).json()
    expect(mined.coverage.latest.transactions).toBe(1)
  })

  it('answers 404 for a wallet without a code and 400 for a malformed one', async () => {
    const missing = await api.app.inject({ url: `/v1/agents/builder-codes/${wallet(0xdead)}` })
    expect([missing.statusCode, missing.json().error.code]).toEqual([404, 'not_found'])
    const bad = await api.app.inject({ url: '/v1/agents/builder-codes/0xnothex' })
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, 'invalid_wallet_address'])
  })

  it('reports null nonces, not an error, when the node does not answer', async () => {
    const offline = await createApi({
      config: baseConfig(db.url),
      chainId: CHAIN_ID,
      store: db.store,
      rpc: createRpcClient({ url: `http://127.0.0.1:${await freePort()}` }),
      logger: silentLogger,
    })
    try {
      const record = (await offline.app.inject({ url: `/v1/agents/builder-codes/${ACCOUNT}` })).json()
      expect(record.coverage.latest).toEqual({ transactions: null, attributed: 2 })
    } finally {
      await offline.close()
    }
  })
})

describe('registration through BUILDER_API_URL', () => {
  let upstream: Server
  let upstreamUrl: string
  let respond: (body: unknown, response: ServerResponse) => void
  const received: unknown[] = []
  let upstreamApi: Api

  beforeAll(async () => {
    upstream = createServer((request: IncomingMessage, response: ServerResponse) => {
      let text = ''
      request.on('data', (chunk) => (text += chunk))
      request.on('end', () => {
        received.push({ method: request.method, url: request.url, body: JSON.parse(text) })
        respond(JSON.parse(text), response)
      })
    })
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
    upstreamApi = await createApi({
      config: { ...baseConfig(db.url), builderApiUrl: upstreamUrl },
      chainId: UPSTREAM_CHAIN_ID,
      store: db.store,
      logger: silentLogger,
    })
  })

  afterAll(async () => {
    await upstreamApi?.close()
    await new Promise((resolve) => upstream?.close(resolve))
  })

  const json = (status: number, body: unknown) => (_request: unknown, response: ServerResponse) => {
    response.writeHead(status, { 'content-type': 'application/json' })
    response.end(typeof body === 'string' ? body : JSON.stringify(body))
  }

  it('stores the code the service returns, with source upstream, in either spelling', async () => {
    respond = json(200, { builderCode: 'bc_upstrm01', walletAddress: wallet(0x501) })
    const first = await register(upstreamApi, wallet(0x501).toUpperCase().replace('0X', '0x'))
    expect(first).toEqual({ status: 200, body: { builderCode: 'bc_upstrm01', walletAddress: wallet(0x501) } })
    expect(received.at(-1)).toEqual({ method: 'POST', url: '/v1/agents/builder-codes', body: { walletAddress: wallet(0x501) } })

    respond = json(201, { builder_code: 'bc_upstrm02', wallet_address: wallet(0x502).toUpperCase().replace('0X', '0x') })
    const second = await register(upstreamApi, wallet(0x502))
    expect(second.body).toEqual({ builderCode: 'bc_upstrm02', walletAddress: wallet(0x502) })

    expect(await storedCodes(UPSTREAM_CHAIN_ID)).toEqual([
      { builder_code: 'bc_upstrm01', wallet_address: wallet(0x501), source: 'upstream' },
      { builder_code: 'bc_upstrm02', wallet_address: wallet(0x502), source: 'upstream' },
    ])
    // A registered wallet is answered from the store; the service is not asked again.
    const calls = received.length
    respond = json(500, {})
    expect((await register(upstreamApi, wallet(0x501))).body.builderCode).toBe('bc_upstrm01')
    expect(received).toHaveLength(calls)
  })

  it('answers 502 upstream_error naming the status, and stores nothing, when the service fails', async () => {
    const failures: [(body: unknown, response: ServerResponse) => void, RegExp][] = [
      [json(500, { error: 'boom' }), /HTTP 500/],
      [json(429, 'slow down'), /HTTP 429/],
      [json(404, {}), /HTTP 404/],
      [json(200, 'not json'), /HTTP 200 without a valid builder code/],
      [json(200, { builderCode: 'BAD CODE!' }), /without a valid builder code/],
      [json(200, { walletAddress: wallet(0x503) }), /without a valid builder code/],
      [json(200, { builderCode: 'bc_upstrm03', walletAddress: wallet(0x999) }), /another wallet/],
      [json(200, { builderCode: 'bc_upstrm01' }), /already holds/],
    ]
    for (const [failure, message] of failures) {
      respond = failure
      const { status, body } = await register(upstreamApi, wallet(0x503))
      expect([status, body.error.code]).toEqual([502, 'upstream_error'])
      expect(body.error.message).toMatch(message)
    }
    expect((await storedCodes(UPSTREAM_CHAIN_ID)).map((row) => row.wallet_address)).not.toContain(wallet(0x503))
    const lookup = await upstreamApi.app.inject({ url: `/v1/agents/builder-codes/${wallet(0x503)}` })
    expect(lookup.statusCode).toBe(404)
  })

  it('answers 502 when the service is unreachable', async () => {
    const unreachable = await createApi({
      config: { ...baseConfig(db.url), builderApiUrl: `http://127.0.0.1:${await freePort()}` },
      chainId: UPSTREAM_CHAIN_ID,
      store: db.store,
      logger: silentLogger,
    })
    try {
      const { status, body } = await register(unreachable, wallet(0x504))
      expect([status, body.error.code]).toEqual([502, 'upstream_error'])
      expect(body.error.message).toMatch(/could not be reached \(ECONNREFUSED\)/)
    } finally {
      await unreachable.close()
    }
  })
})

describe('createBuilderCodeClient', () => {
  it('registers and reads a wallet over HTTP, and turns errors into BuilderCodeClientError', async () => {
    const served = await createApi({
      config: baseConfig(db.url),
      chainId: CHAIN_ID,
      store: db.store,
      logger: silentLogger,
      host: '127.0.0.1',
    })
    try {
      const url = await served.listen()
      const client = createBuilderCodeClient(`${url}/`)
      const address = wallet(0xc11e)
      expect(await client.get(address)).toBeNull()
      const registered = await client.register(address.toUpperCase().replace('0X', '0x'))
      expect(registered).toEqual({ builderCode: deriveBuilderCode(address, 0), walletAddress: address })
      const record = await client.get(address)
      expect(record).toMatchObject({ builderCode: registered.builderCode, walletAddress: address, source: 'local' })
      const error = await client.register('0x12').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(BuilderCodeClientError)
      expect(error).toMatchObject({ status: 400, code: 'invalid_wallet_address' })
    } finally {
      await served.close()
    }
  })
})
