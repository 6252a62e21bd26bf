import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApi, type Api } from '../src/api/index.js'
import { silentLogger } from '../src/internal/logger.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'
import { monthSpan } from '../src/store/partitions.js'

const CHAIN_ID = 8453
const OTHER_CHAIN_ID = 10
const T0 = Date.UTC(2025, 0, 1) / 1000
const BLOCK_SECONDS = 1800
const hex = (n: number, length: number, fill = '0') => `0x${n.toString(16).padStart(length, fill)}`
const txHash = (n: number) => hex(n, 64)
const opHash = (n: number) => hex(n, 64, 'e')
const addr = (n: number) => hex(n, 40)
const iso = (seconds: number) => new Date(seconds * 1000).toISOString()

const W1 = addr(0xa1)
const W2 = addr(0xa2)
const C1 = 'bc_aaaaaaa1'
const C2 = 'bc_bbbbbbb2'
const C3 = 'othercode'
const SENDERS = [addr(0x51), addr(0x52), addr(0x53), addr(0x54), addr(0x55)]

type Row = {
  chain_id: number
  tx_hash: string
  user_op_hash: string
  builder_code: string
  code_index: number
  block_number: number
  block_hash: string
  block_timestamp: string
  from_address: string
  sender: string
  to_address: string | null
  schema_id: number
  codes: string[]
  gas_used: number | null
  status: 'pending' | 'confirmed' | 'finalized'
  removed: boolean
}

const statusOf = (block: number) => (block >= 1055 ? 'pending' : block >= 1045 ? 'confirmed' : 'finalized')

/**
 * 60 blocks of 4 transactions, 30 min apart from 2025-01-01T00:00Z: every 3rd transaction carries
 * two codes, every 5th is a bundle of two user operations, every 17th row is removed.
 */
function fixtureRows(): Row[] {
  const rows: Row[] = []
  let n = 0
  for (let block = 1000; block < 1060; block++) {
    for (let t = 0; t < 4; t++) {
      n++
      const codes = n % 3 === 0 ? [C1, C2] : [[C1, C2, C3][n % 3]!]
      const ops = n % 5 === 0 ? [opHash(n * 10), opHash(n * 10 + 1)] : ['']
      for (const op of ops) {
        codes.forEach((code, codeIndex) => {
          rows.push({
            chain_id: CHAIN_ID,
            tx_hash: txHash(n),
            user_op_hash: op,
            builder_code: code,
            code_index: codeIndex,
            block_number: block,
            block_hash: hex(block, 64, 'b'),
            block_timestamp: iso(T0 + (block - 1000) * BLOCK_SECONDS),
            from_address: op ? addr(0xb0) : SENDERS[n % 5]!,
            sender: SENDERS[(n + (op.endsWith('1') ? 1 : 0)) % 5]!,
            to_address: n % 7 === 0 ? null : addr(0xc0),
            schema_id: n % 2,
            codes,
            gas_used: n % 4 === 0 ? null : 21_000 + n,
            status: statusOf(block),
            removed: false,
          })
        })
      }
    }
  }
  rows.forEach((row, index) => (row.removed = index % 17 === 16))
  return rows
}

const key = (row: { tx_hash: string; user_op_hash: string; builder_code: string }) =>
  `${row.tx_hash}|${row.user_op_hash}|${row.builder_code}`
const itemKey = (item: { txHash: string; userOpHash: string | null; builderCode: string }) =>
  `${item.txHash}|${item.userOpHash ?? ''}|${item.builderCode}`

/** The list's item for a row of the fixture. */
const expectedItem = (row: Row) => ({
  chainId: CHAIN_ID,
  txHash: row.tx_hash,
  userOpHash: row.user_op_hash || null,
  blockNumber: row.block_number,
  blockHash: row.block_hash,
  blockTimestamp: row.block_timestamp,
  // Rows stored from a node that serves no milliseconds.
  blockTimestampMs: null,
  from: row.from_address,
  to: row.to_address,
  sender: row.sender,
  builderCode: row.builder_code,
  role: null,
  registry: null,
  walletAddress: row.builder_code === C1 ? W1 : row.builder_code === C2 ? W2 : null,
  schemaId: row.schema_id,
  codes: row.codes,
  gasUsed: row.gas_used,
  status: row.status,
  removed: row.removed,
})

async function insertAttributions(pool: pg.Pool, rows: Row[]): Promise<void> {
  await pool.query(
    `INSERT INTO attributions (chain_id, tx_hash, user_op_hash, builder_code, code_index, block_number, block_hash, block_timestamp,
       from_address, sender, to_address, schema_id, codes, gas_used, status, removed)
     SELECT chain_id, tx_hash, user_op_hash, builder_code, code_index, block_number, block_hash, block_timestamp,
       from_address, sender, to_address, schema_id, codes, gas_used, status, removed
     FROM jsonb_populate_recordset(null::attributions, $1::jsonb)`,
    [JSON.stringify(rows)],
  )
}

let db: TestDatabase
let api: Api
let rows: Row[]

beforeAll(async () => {
  db = await createTestDatabase()
  rows = fixtureRows()
  await insertAttributions(db.store.pool, rows)
  // The same transactions on another chain must never show up.
  await insertAttributions(
    db.store.pool,
    rows.slice(0, 20).map((row) => ({ ...row, chain_id: OTHER_CHAIN_ID })),
  )
  await db.store.pool.query(
    `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source) VALUES ($1, $2, $3, 'local'), ($1, $4, $5, 'upstream'), ($6, $4, $3, 'local')`,
    [CHAIN_ID, C1, W1, C2, W2, OTHER_CHAIN_ID],
  )
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
  })
})

afterAll(async () => {
  await api?.close()
  await db?.drop()
})

async function get<T = any>(url: string): Promise<{ status: number; body: T }> {
  const response = await api.app.inject({ method: 'GET', url })
  return { status: response.statusCode, body: response.json() as T }
}

type Page<T> = { items: T[]; nextCursor: string | null }

/** Every page of a list, following nextCursor. */
async function allPages<T>(url: string, limit: number): Promise<{ items: T[]; pages: number }> {
  const items: T[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const separator = url.includes('?') ? '&' : '?'
    const { status, body }: { status: number; body: Page<T> } = await get<Page<T>>(
      `${url}${separator}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
    )
    expect(status).toBe(200)
    expect(body.items.length).toBeLessThanOrEqual(limit)
    items.push(...body.items)
    cursor = body.nextCursor
    pages++
  } while (cursor !== null)
  return { items, pages }
}

type Item = {
  chainId: number
  txHash: string
  userOpHash: string | null
  blockNumber: number
  blockTimestamp: string
  from: string
  to: string | null
  sender: string
  builderCode: string
  walletAddress: string | null
  schemaId: number
  codes: string[]
  gasUsed: number | null
  status: string
  removed: boolean
}

describe('GET /v1/attributions', () => {
  it('returns items with every documented field, newest block first', async () => {
    const { status, body } = await get<Page<Item>>('/v1/attributions?limit=3')
    expect(status).toBe(200)
    expect(body.items).toHaveLength(3)
    const first = body.items[0]!
    expect(first).toEqual(expectedItem(rows.find((r) => key(r) === itemKey(first))!))
    expect(first.removed).toBe(false)
    expect(first.blockNumber).toBe(1059)
    expect(body.nextCursor).toEqual(expect.any(String))
  })

  it('writes every row, removed ones included, as the documented Attribution: its fields in the document’s order', async () => {
    const document = (await get('/openapi.json')).body
    const fields = Object.keys(document.components.schemas.Attribution.properties)
    const { items } = await allPages<Item>('/v1/attributions?includeRemoved=true', 100)
    expect(items).toHaveLength(rows.length)
    for (const item of items) {
      expect(Object.keys(item)).toEqual(fields)
      expect(item).toEqual(expectedItem(rows.find((r) => key(r) === itemKey(item))!))
    }
  })

  it('pages through everything without loss or repeat, in a stable order, at several page sizes', async () => {
    const visible = rows
      .filter((row) => !row.removed)
      .map(key)
      .sort()
    const { items: reference } = await allPages<Item>('/v1/attributions', 1000)
    expect(reference.map(itemKey).sort()).toEqual(visible)
    for (const limit of [1, 7, 50]) {
      const { items, pages } = await allPages<Item>('/v1/attributions', limit)
      expect(items.map(itemKey)).toEqual(reference.map(itemKey))
      expect(pages).toBe(Math.ceil(visible.length / limit))
    }
    const blocks = reference.map((item) => item.blockNumber)
    expect(blocks).toEqual([...blocks].sort((a, b) => b - a))
  })

  it('orders by block time across the month partitions and the default partition; a cursor without a time continues by block number', async () => {
    // Rows in this deployment's newest month partition, five blocks to a second as Base makes them since Denim,
    // beside the fixture's history of 2025, which no month holds (the default partition).
    const months = await monthSpan(db.store.pool, 'attributions')
    const second = months!.from.getTime() / 1000 + 86_400
    const template = rows.find((row) => row.builder_code === C3 && !row.user_op_hash && !row.removed)!
    const recent = Array.from({ length: 20 }, (_, n) => ({
      ...template,
      tx_hash: txHash(97_000 + n),
      block_number: 3_000 + n,
      block_hash: hex(3_000 + n, 64, 'b'),
      block_timestamp: iso(second + Math.floor(n / 5)),
    }))
    await insertAttributions(db.store.pool, recent)
    try {
      const { rows: placed } = await db.store.pool.query<{ partition: string }>(
        `SELECT DISTINCT tableoid::regclass::text AS partition FROM attributions WHERE chain_id = $1 ORDER BY 1`,
        [CHAIN_ID],
      )
      expect(placed.map((row) => row.partition)).toEqual(['attributions_default', expect.stringMatching(/^attributions_p\d{4}_\d{2}$/)])
      const newestFirst = [...recent].reverse().map(key)
      const visible = rows.filter((row) => !row.removed)
      for (const query of ['', `builderCode=${C3}`, 'status=pending']) {
        const { items: reference } = await allPages<Item>(`/v1/attributions?${query}`, 1000)
        for (const limit of [3, 8]) expect((await allPages<Item>(`/v1/attributions?${query}`, limit)).items).toEqual(reference)
        const times = reference.map((item) => item.blockTimestamp)
        expect(times, query).toEqual([...times].sort().reverse())
        expect(reference.map((item) => item.blockNumber)).toEqual(reference.map((item) => item.blockNumber).sort((a, b) => b - a))
        const wanted =
          query === ''
            ? visible
            : visible.filter((row) => (query === 'status=pending' ? row.status === 'pending' : row.builder_code === C3))
        const recentWanted = query === 'status=pending' ? [] : newestFirst
        expect(reference.slice(0, recentWanted.length).map(itemKey), query).toEqual(recentWanted)
        expect(reference.map(itemKey).sort()).toEqual([...recentWanted, ...wanted.map(key)].sort())
      }
      // A cursor written before the list was ordered by time (the key alone) still reads on, in block number order.
      const { items: reference } = await allPages<Item>('/v1/attributions', 1000)
      const third = reference[2]!
      const row = [...rows, ...recent].find((candidate) => key(candidate) === itemKey(third))!
      const token = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url')
      const keyParts = [row.block_number, row.tx_hash, row.user_op_hash, row.builder_code, '']
      const after = await get<Page<Item>>(`/v1/attributions?limit=1000&cursor=${token(['a2', ...keyParts])}`)
      expect(after.body.items).toEqual(reference.slice(3))
      // A time that is not one the API wrote is refused.
      for (const time of ['2026-02-30T00:00:00.000Z', '2026-01-01T00:00:00Z', 'yesterday'])
        expect((await get(`/v1/attributions?cursor=${token(['a3', time, ...keyParts])}`)).body, time).toMatchObject({
          error: { code: 'invalid_cursor' },
        })
    } finally {
      await db.store.pool.query(`DELETE FROM attributions WHERE block_number >= 3000`)
    }
  })

  it('applies each filter exactly as the model does', async () => {
    const cases: [string, (row: Row) => boolean][] = [
      [`builderCode=${C2}`, (r) => r.builder_code === C2],
      [`walletAddress=${W1}`, (r) => r.builder_code === C1],
      [`walletAddress=${W2.toUpperCase().replace('0X', '0x')}`, (r) => r.builder_code === C2],
      [`walletAddress=${addr(0xdead)}`, () => false],
      ['fromBlock=1010&toBlock=0x3f9', (r) => r.block_number >= 1010 && r.block_number <= 1017],
      ['fromBlock=1058', (r) => r.block_number >= 1058],
      ['toBlock=1001', (r) => r.block_number <= 1001],
      [
        `since=${iso(T0 + 10 * BLOCK_SECONDS)}&until=${iso(T0 + 12 * BLOCK_SECONDS)}`,
        (r) => r.block_number === 1010 || r.block_number === 1011,
      ],
      ['since=2025-01-02', (r) => r.block_timestamp >= '2025-01-02T00:00:00.000Z'],
      ['until=2025-01-01T05:00:00%2B01:00', (r) => r.block_timestamp < '2025-01-01T04:00:00.000Z'],
      ['status=pending', (r) => r.status === 'pending'],
      ['status=pending,confirmed', (r) => r.status !== 'finalized'],
      ['status=finalized&status=confirmed', (r) => r.status !== 'pending'],
      [
        `builderCode=${C1}&status=confirmed&fromBlock=1046`,
        (r) => r.builder_code === C1 && r.status === 'confirmed' && r.block_number >= 1046,
      ],
    ]
    for (const [query, predicate] of cases) {
      const expected = rows
        .filter((r) => !r.removed && predicate(r))
        .map(key)
        .sort()
      const { items } = await allPages<Item>(`/v1/attributions?${query}`, 25)
      expect(items.map(itemKey).sort(), query).toEqual(expected)
    }
  })

  it('hides removed rows unless includeRemoved', async () => {
    const removed = rows
      .filter((r) => r.removed)
      .map(key)
      .sort()
    expect(removed.length).toBeGreaterThan(5)
    const withRemoved = await allPages<Item>('/v1/attributions?includeRemoved=true', 100)
    expect(withRemoved.items).toHaveLength(rows.length)
    expect(
      withRemoved.items
        .filter((item) => item.removed)
        .map(itemKey)
        .sort(),
    ).toEqual(removed)
    const without = await allPages<Item>('/v1/attributions?includeRemoved=0', 100)
    expect(without.items.some((item) => item.removed)).toBe(false)
  })

  it('neither skips nor repeats rows while new rows are inserted between pages', async () => {
    const before = new Set((await allPages<Item>('/v1/attributions?builderCode=othercode', 1000)).items.map(itemKey))
    const template = rows.find((r) => r.builder_code === C3 && !r.user_op_hash)!
    const headKeys: string[] = []
    const lateKeys: string[] = []
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: { body: Page<Item> } = await get<Page<Item>>(
        `/v1/attributions?builderCode=othercode&limit=4${cursor ? `&cursor=${cursor}` : ''}`,
      )
      seen.push(...page.body.items.map(itemKey))
      cursor = page.body.nextCursor
      // A new head block (before the cursor) and a late row deep in the past (after it).
      const n = headKeys.length + 1
      const head = {
        ...template,
        tx_hash: txHash(90_000 + n),
        block_number: 2000 + n,
        block_timestamp: iso(T0 + 86_400 * 30 + n),
        removed: false,
      }
      const late = {
        ...template,
        tx_hash: txHash(95_000 + n),
        block_number: 500 - n,
        block_timestamp: iso(T0 - 86_400 - n),
        removed: false,
      }
      await insertAttributions(db.store.pool, [head, late])
      headKeys.push(key(head))
      lateKeys.push(key(late))
    } while (cursor !== null)
    expect(new Set(seen).size).toBe(seen.length)
    for (const k of before) expect(seen).toContain(k)
    // Rows at the head were inserted above the cursor: never served in later pages of this walk.
    for (const k of headKeys) expect(seen).not.toContain(k)
    // Late rows below the cursor show up, each once (the last was inserted after the walk ended).
    expect(lateKeys.length).toBeGreaterThan(3)
    for (const k of lateKeys.slice(0, -1)) expect(seen).toContain(k)
    await db.store.pool.query(`DELETE FROM attributions WHERE block_number >= 2000 OR block_number < 500`)
  })

  it('refuses inverted ranges, bad cursors and out-of-range limits with 400', async () => {
    const cases: [string, string][] = [
      ['fromBlock=10&toBlock=9', 'invalid_range'],
      ['since=2025-01-02&until=2025-01-01', 'invalid_range'],
      ['limit=0', 'invalid_parameter'],
      ['limit=1001', 'invalid_parameter'],
      ['limit=-1', 'invalid_parameter'],
      ['fromBlock=9007199254740993', 'invalid_parameter'],
      ['cursor=bm90LWEtY3Vyc29y', 'invalid_cursor'],
      ['status=removed', 'invalid_parameter'],
      ['includeRemoved=yes', 'invalid_parameter'],
      ['builderCode=BC_UPPER', 'invalid_parameter'],
      ['walletAddress=0x123', 'invalid_wallet_address'],
      ['since=yesterday', 'invalid_parameter'],
      ['since=2025-01-01T00:00:00', 'invalid_parameter'],
      ['page=2', 'unknown_parameter'],
    ]
    for (const [query, code] of cases) {
      const { status, body } = await get(`/v1/attributions?${query}`)
      expect([status, body.error.code], query).toEqual([400, code])
      expect(body.error.message).toMatch(/\.$/)
    }
    // A logs cursor is not an attributions cursor.
    const logsPage = await get<Page<unknown>>('/v1/logs?limit=1')
    expect(logsPage.status).toBe(200)
  })
})

describe('GET /v1/builder-codes/{code}/stats', () => {
  type Stats = {
    builderCode: string
    walletAddress: string | null
    interval: string
    since: string
    until: string
    total: { attributions: number; confirmed: number; pending: number; distinctSenders: number; gasUsed: string }
    buckets: { start: string; attributions: number; confirmed: number; pending: number; distinctSenders: number; gasUsed: string }[]
  }

  const model = (code: string, from: number, to: number) => {
    const selected = rows.filter(
      (r) =>
        r.builder_code === code && !r.removed && Date.parse(r.block_timestamp) / 1000 >= from && Date.parse(r.block_timestamp) / 1000 < to,
    )
    return {
      attributions: selected.length,
      confirmed: selected.filter((r) => r.status !== 'pending').length,
      pending: selected.filter((r) => r.status === 'pending').length,
      distinctSenders: new Set(selected.map((r) => r.sender)).size,
      gasUsed: String(selected.reduce((sum, r) => sum + (r.gas_used ?? 0), 0)),
      // Every row here is of schema 0 or 1: one share without a role.
      roles:
        selected.length === 0
          ? []
          : [
              {
                role: null,
                attributions: selected.length,
                confirmed: selected.filter((r) => r.status !== 'pending').length,
                pending: selected.filter((r) => r.status === 'pending').length,
              },
            ],
    }
  }

  it('counts per UTC day and in total', async () => {
    const { status, body } = await get<Stats>(`/v1/builder-codes/${C1}/stats?since=2025-01-01&until=2025-01-03&interval=day`)
    expect(status).toBe(200)
    expect(body).toMatchObject({
      builderCode: C1,
      walletAddress: W1,
      interval: 'day',
      since: '2025-01-01T00:00:00.000Z',
      until: '2025-01-03T00:00:00.000Z',
    })
    expect(body.buckets.map((b) => b.start)).toEqual(['2025-01-01T00:00:00.000Z', '2025-01-02T00:00:00.000Z'])
    expect(body.buckets[0]).toEqual({ start: '2025-01-01T00:00:00.000Z', ...model(C1, T0, T0 + 86_400) })
    expect(body.buckets[1]).toEqual({ start: '2025-01-02T00:00:00.000Z', ...model(C1, T0 + 86_400, T0 + 2 * 86_400) })
    expect(body.total).toEqual(model(C1, T0, T0 + 2 * 86_400))
    expect(body.total.pending).toBeGreaterThan(0)
    expect(body.total.confirmed).toBeGreaterThan(0)
  })

  it('counts per hour, zero-fills empty hours and treats until as exclusive', async () => {
    const since = T0 + 3600
    const until = T0 + 6 * 3600
    const { body } = await get<Stats>(`/v1/builder-codes/${C2}/stats?since=${iso(since)}&until=${iso(until)}&interval=hour`)
    expect(body.buckets).toHaveLength(5)
    body.buckets.forEach((bucket, i) =>
      expect(bucket).toEqual({ start: iso(since + i * 3600), ...model(C2, since + i * 3600, since + (i + 1) * 3600) }),
    )
    expect(body.total).toEqual(model(C2, since, until))
    // Blocks land every 30 min: every hour has rows, and the block at `until` is left out.
    expect(body.buckets.every((b) => b.attributions > 0)).toBe(true)
  })

  it('answers zeros for a code nobody used and reports an unregistered code without wallet', async () => {
    const unused = await get<Stats>('/v1/builder-codes/bc_unused00/stats?since=2025-01-01&until=2025-01-02')
    expect(unused.body.total).toEqual({ attributions: 0, confirmed: 0, pending: 0, distinctSenders: 0, gasUsed: '0', roles: [] })
    expect(unused.body.buckets).toEqual([
      { start: '2025-01-01T00:00:00.000Z', attributions: 0, confirmed: 0, pending: 0, distinctSenders: 0, gasUsed: '0', roles: [] },
    ])
    const other = await get<Stats>(`/v1/builder-codes/${C3}/stats?since=2025-01-01&until=2025-01-03`)
    expect(other.body.walletAddress).toBeNull()
    expect(other.body.total).toEqual(model(C3, T0, T0 + 2 * 86_400))
  })

  it('widens the range to whole buckets and reports the widened range', async () => {
    const { body } = await get<Stats>(
      `/v1/builder-codes/${C2}/stats?since=${iso(T0 + 2 * 3600 + 600)}&until=${iso(T0 + 5 * 3600 + 1)}&interval=hour`,
    )
    expect(body).toMatchObject({ since: iso(T0 + 2 * 3600), until: iso(T0 + 6 * 3600) })
    expect(body.buckets.map((b) => b.start)).toEqual([2, 3, 4, 5].map((h) => iso(T0 + h * 3600)))
    expect(body.total).toEqual(model(C2, T0 + 2 * 3600, T0 + 6 * 3600))
  })

  it('counts distinct senders alike for ranges that end before and after the latest attribution', async () => {
    // Until past the code's last block: the rollup answers; until before it: the rows are counted.
    for (const [since, until] of [
      [T0 + 5 * 3600, T0 + 3 * 86_400],
      [T0 + 5 * 3600, T0 + 20 * 3600],
      [T0 + 29 * 3600, T0 + 30 * 3600],
    ] as const) {
      const { body } = await get<Stats>(`/v1/builder-codes/${C1}/stats?since=${iso(since)}&until=${iso(until)}&interval=hour`)
      expect(body.total, `${iso(since)} ${iso(until)}`).toEqual(model(C1, since, until))
      // Every hour's start written as the Date would, across days and two-digit hours.
      expect(body.buckets.map((b) => b.start)).toEqual(Array.from({ length: (until - since) / 3600 }, (_, i) => iso(since + i * 3600)))
    }
  })

  it('defaults to the last 30 days by day, in whole UTC days', async () => {
    const before = Date.now()
    const { body } = await get<Stats>(`/v1/builder-codes/${C1}/stats`)
    expect(body.interval).toBe('day')
    const [since, until] = [Date.parse(body.since), Date.parse(body.until)]
    expect([since % 86_400_000, until % 86_400_000]).toEqual([0, 0])
    expect(until).toBeGreaterThanOrEqual(before)
    expect([30, 31]).toContain((until - since) / 86_400_000)
    expect(body.buckets).toHaveLength((until - since) / 86_400_000)
  })

  it('refuses bad intervals, codes, inverted and oversized ranges', async () => {
    const cases: [string, number, string][] = [
      [`/v1/builder-codes/${C1}/stats?interval=week`, 400, 'invalid_parameter'],
      [`/v1/builder-codes/${C1}/stats?since=2025-01-02&until=2025-01-01`, 400, 'invalid_range'],
      [`/v1/builder-codes/${C1}/stats?since=1990-01-01&until=2025-01-01&interval=hour`, 400, 'range_too_large'],
      [`/v1/builder-codes/${C1}/stats?foo=bar`, 400, 'unknown_parameter'],
      ['/v1/builder-codes/Not-A-Code/stats', 400, 'invalid_code'],
      [`/v1/builder-codes/${'a'.repeat(33)}/stats`, 400, 'invalid_code'],
    ]
    for (const [url, status, code] of cases) {
      const response = await get(url)
      expect([response.status, response.body.error.code], url).toEqual([status, code])
    }
  })
})

describe('GET /v1/logs', () => {
  type Log = {
    chainId: number
    address: string
    topics: string[]
    data: string
    blockNumber: number
    blockHash: string
    blockTimestamp: string
    transactionHash: string
    transactionIndex: number
    logIndex: number
    status: string
    removed: boolean
  }
  type LogRow = {
    chain_id: number
    block_number: number
    block_hash: string
    block_timestamp: string
    transaction_hash: string
    transaction_index: number
    log_index: number
    tx_log_ordinal: number
    address: string
    topic0: string | null
    topic1: string | null
    topic2: string | null
    topic3: string | null
    data: string
    status: string
    removed: boolean
  }
  const A = addr(0xaaa)
  const B = addr(0xbbb)
  const TRANSFER = txHash(0x7777)
  const APPROVAL = txHash(0x8888)
  const logRows: LogRow[] = []

  beforeAll(async () => {
    for (let block = 1; block <= 30; block++) {
      for (let index = 0; index < 5; index++) {
        const pending = block === 30
        logRows.push({
          chain_id: CHAIN_ID,
          block_number: block,
          block_hash: pending ? hex(0, 64) : hex(block, 64, 'b'),
          block_timestamp: iso(T0 + block * 2),
          transaction_hash: txHash(block * 10 + index),
          transaction_index: index,
          log_index: index,
          tx_log_ordinal: 0,
          address: index % 2 === 0 ? A : B,
          topic0: index === 4 ? null : index % 3 === 0 ? TRANSFER : APPROVAL,
          topic1: index === 4 ? null : txHash(block % 3),
          topic2: index < 2 ? txHash(index) : null,
          topic3: null,
          data: `0x${'ab'.repeat(index)}`,
          status: pending ? 'pending' : block > 25 ? 'confirmed' : 'finalized',
          removed: block === 20,
        })
      }
    }
    // A reorged-out copy of block 21: same positions, another hash.
    for (const row of logRows.filter((r) => r.block_number === 21)) logRows.push({ ...row, block_hash: hex(21, 64, 'd'), removed: true })
    await db.store.pool.query(
      `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
         address, topic0, topic1, topic2, topic3, data, status, removed)
       SELECT chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
         address, topic0, topic1, topic2, topic3, data, status, removed
       FROM jsonb_populate_recordset(null::logs, $1::jsonb)`,
      [JSON.stringify(logRows)],
    )
  })

  const logKey = (log: { transaction_hash: string; log_index: number; block_hash: string }) =>
    `${log.block_hash}|${log.transaction_hash}|${log.log_index}`
  const itemKeyOf = (log: Log) => `${log.blockHash}|${log.transactionHash}|${log.logIndex}`

  it('returns logs like eth_getLogs, oldest first, with topics as an array', async () => {
    const { status, body } = await get<Page<Log>>('/v1/logs?limit=2')
    expect(status).toBe(200)
    expect(body.items[0]).toEqual({
      chainId: CHAIN_ID,
      address: A,
      topics: [TRANSFER, txHash(1), txHash(0)],
      data: '0x',
      blockNumber: 1,
      blockHash: hex(1, 64, 'b'),
      blockTimestamp: iso(T0 + 2),
      blockTimestampMs: null,
      transactionHash: txHash(10),
      transactionIndex: 0,
      logIndex: 0,
      status: 'finalized',
      removed: false,
    })
    expect(body.items[1]!.logIndex).toBe(1)
  })

  it('writes every row, removed and pending ones included, as the documented Log: its fields in the document’s order', async () => {
    const document = (await get('/openapi.json')).body
    const fields = Object.keys(document.components.schemas.Log.properties)
    const expectedLog = (row: LogRow) => ({
      chainId: row.chain_id,
      address: row.address,
      topics: [row.topic0, row.topic1, row.topic2, row.topic3].filter((topic) => topic !== null),
      data: row.data,
      blockNumber: row.block_number,
      blockHash: row.block_hash,
      blockTimestamp: row.block_timestamp,
      blockTimestampMs: null,
      transactionHash: row.transaction_hash,
      transactionIndex: row.transaction_index,
      logIndex: row.log_index,
      status: row.status,
      removed: row.removed,
    })
    const cases: [string, (row: LogRow) => boolean][] = [
      ['includeRemoved=true', () => true],
      [`address=${A}&includeRemoved=true`, (row) => row.address === A],
    ]
    for (const [query, predicate] of cases) {
      const { items } = await allPages<Log>(`/v1/logs?${query}`, 7)
      const expected = logRows.filter(predicate)
      expect(items, query).toHaveLength(expected.length)
      for (const item of items) {
        expect(Object.keys(item)).toEqual(fields)
        expect(item).toEqual(expectedLog(expected.find((row) => logKey(row) === itemKeyOf(item))!))
      }
    }
  })

  it('pages without loss or repeat and applies each filter as eth_getLogs would', async () => {
    const cases: [string, (r: LogRow) => boolean][] = [
      ['', () => true],
      [`address=${A}`, (r) => r.address === A],
      [`address=${A.toUpperCase().replace('0X', '0x')},${B}`, () => true],
      [`address=${B}&address=${addr(0xccc)}`, (r) => r.address === B],
      [`topic0=${TRANSFER}`, (r) => r.topic0 === TRANSFER],
      [`topic0=${TRANSFER},${APPROVAL}&topic2=${txHash(1)}`, (r) => r.topic0 !== null && r.topic2 === txHash(1)],
      [`address=${A},${B}&topic1=${txHash(2)}`, (r) => r.topic1 === txHash(2)],
      [`address=${A}&topic3=${txHash(1)}`, () => false],
      ['fromBlock=0x5&toBlock=9', (r) => r.block_number >= 5 && r.block_number <= 9],
      ['status=pending', (r) => r.status === 'pending'],
      ['status=confirmed,finalized&fromBlock=24', (r) => r.status !== 'pending' && r.block_number >= 24],
      [
        `address=${A}&topic0=${APPROVAL}&fromBlock=10&toBlock=12`,
        (r) => r.address === A && r.topic0 === APPROVAL && r.block_number >= 10 && r.block_number <= 12,
      ],
    ]
    for (const [query, predicate] of cases) {
      const expected = logRows.filter((r) => !r.removed && predicate(r)).map(logKey)
      const { items } = await allPages<Log>(`/v1/logs?${query}`, 6)
      expect(new Set(items.map(itemKeyOf)).size, query).toBe(items.length)
      expect(items.map(itemKeyOf).sort(), query).toEqual([...expected].sort())
      const order = items.map((item) => item.blockNumber * 100 + item.logIndex)
      expect(order, query).toEqual([...order].sort((a, b) => a - b))
    }
  })

  it('includes reorged and dropped logs only with includeRemoved', async () => {
    const { items } = await allPages<Log>('/v1/logs?fromBlock=20&toBlock=21&includeRemoved=true', 3)
    expect(items.map(itemKeyOf).sort()).toEqual(
      logRows
        .filter((r) => r.block_number === 20 || r.block_number === 21)
        .map(logKey)
        .sort(),
    )
    expect(items.filter((item) => item.removed)).toHaveLength(10)
  })

  it('refuses malformed filters', async () => {
    const cases: [string, string][] = [
      ['address=0x12', 'invalid_parameter'],
      [`topic0=${TRANSFER.slice(0, 60)}`, 'invalid_parameter'],
      ['topic4=0x00', 'unknown_parameter'],
      ['fromBlock=latest', 'invalid_parameter'],
      ['fromBlock=3&toBlock=2', 'invalid_range'],
      [`address=${Array.from({ length: 101 }, (_, i) => addr(i)).join(',')}`, 'invalid_parameter'],
      ['address=', 'invalid_parameter'],
      [`cursor=${Buffer.from(JSON.stringify(['a1', 1, txHash(1), '', 'x'])).toString('base64url')}`, 'invalid_cursor'],
      // A cursor of the earlier shape, keyed by the dropped row id.
      [`cursor=${Buffer.from(JSON.stringify(['l1', 5, 0, 123])).toString('base64url')}`, 'invalid_cursor'],
      [
        `cursor=${Buffer.from(JSON.stringify(['l2', 5, 0, txHash(1).toUpperCase(), txHash(1), 0])).toString('base64url')}`,
        'invalid_cursor',
      ],
      // No index leads with topic1–3: alone they would be a filtered walk of history.
      [`topic1=${TRANSFER}`, 'unindexed_filter'],
      [`fromBlock=1&toBlock=2&topic2=${TRANSFER}&topic3=${TRANSFER}`, 'unindexed_filter'],
    ]
    for (const [query, code] of cases) {
      const { status, body } = await get(`/v1/logs?${query}`)
      expect([status, body.error.code], query).toEqual([400, code])
    }
  })
})

describe('coverage of /v1/logs and /v1/attributions', () => {
  it('says an answer may be partial while a repair is open over the asked blocks', async () => {
    const complete = { complete: true, openRepairs: [] }
    expect((await get('/v1/logs?fromBlock=10&toBlock=20')).body.coverage).toEqual(complete)
    expect((await get('/v1/attributions?limit=1')).body.coverage).toEqual(complete)

    // Two filters reading blocks 12-14 again, one of them given up on; another chain's repair is not ours.
    await db.store.pool.query(
      `INSERT INTO sync_repairs (chain_id, filter_id, from_block, to_block, reason, quarantined_at)
       VALUES ($1, 'f1', 12, 14, 'reorg', NULL), ($1, 'f2', 12, 14, 'reorg', now()), ($1, 'f1', 1050, 1052, 'orphaned', NULL), ($2, 'f1', 0, 2000, 'reorg', NULL)`,
      [CHAIN_ID, OTHER_CHAIN_ID],
    )
    try {
      const partial = { complete: false, openRepairs: [{ fromBlock: 12, toBlock: 14, reason: 'reorg', quarantined: true }] }
      expect((await get('/v1/logs?fromBlock=10&toBlock=20')).body.coverage).toEqual(partial)
      expect((await get('/v1/logs?fromBlock=14')).body.coverage).toEqual({
        complete: false,
        openRepairs: [partial.openRepairs[0], { fromBlock: 1050, toBlock: 1052, reason: 'orphaned', quarantined: false }],
      })
      expect((await get('/v1/logs?fromBlock=15&toBlock=1049')).body.coverage).toEqual(complete)
      expect((await get('/v1/attributions?fromBlock=1040&toBlock=1050')).body.coverage).toEqual({
        complete: false,
        openRepairs: [{ fromBlock: 1050, toBlock: 1052, reason: 'orphaned', quarantined: false }],
      })
      expect((await get('/v1/attributions?fromBlock=1053')).body.coverage).toEqual(complete)
    } finally {
      await db.store.pool.query('DELETE FROM sync_repairs')
    }
  })

  it('reads a page with rows and its coverage in one statement, one snapshot', async () => {
    const address = addr(0xc0ffee)
    await db.store.pool.query(
      `INSERT INTO sync_repairs (chain_id, filter_id, from_block, to_block, reason, quarantined_at) VALUES ($1, 'f1', 12, 14, 'reorg', NULL)`,
      [CHAIN_ID],
    )
    await db.store.pool.query(
      `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
         address, data, status)
       SELECT ${CHAIN_ID}, 15, '${hex(15, 64, 'e')}', '${iso(T0)}', '${txHash(0xc0ffee)}', 0, i, 0, '${address}', '0x', 'finalized'
       FROM generate_series(0, 4) i`,
    )
    const statements = vi.spyOn(db.store.pool, 'query')
    try {
      const partial = { complete: false, openRepairs: [{ fromBlock: 12, toBlock: 14, reason: 'reorg', quarantined: false }] }
      for (const page of ['/v1/attributions?limit=3', `/v1/logs?address=${address}&fromBlock=10&toBlock=20&limit=3`]) {
        statements.mockClear()
        const { status, body } = await get(page)
        expect([status, body.items.length, body.coverage], page).toEqual([200, 3, partial])
        expect(statements, page).toHaveBeenCalledTimes(1)
      }
      // An empty page has no row to carry them: they are asked for alone.
      statements.mockClear()
      const { body } = await get('/v1/attributions?fromBlock=5&toBlock=13')
      expect([body.items, body.coverage]).toEqual([[], partial])
      expect(statements).toHaveBeenCalledTimes(2)
    } finally {
      statements.mockRestore()
      await db.store.pool.query('DELETE FROM sync_repairs')
      await db.store.pool.query('DELETE FROM logs WHERE address = $1', [address])
    }
  })
})

describe('GET /v1/transactions/{hash}/attribution', () => {
  /** Block 1000 + k's position, the one the fixture's attributions of its transactions have. */
  const placedAt = (block: number) => ({
    block_number: block,
    block_hash: hex(block, 64, 'b'),
    block_timestamp: iso(T0 + (block - 1000) * BLOCK_SECONDS),
  })
  const base = {
    chain_id: CHAIN_ID,
    block_number: 1020,
    block_hash: hex(1020, 64, 'b'),
    block_timestamp: iso(T0 + 20 * BLOCK_SECONDS),
    transaction_index: 3,
    from_address: SENDERS[0],
    to_address: addr(0xc0),
    input_size: 120,
    has_suffix: true,
    registry_address: null,
    registry_chain_id: null,
    registry_verified: null,
    cbor: null,
    malformed_reason: null,
    user_operations: 0,
    gas_used: 50_000,
    status: 'finalized',
    removed: false,
  }
  // Transactions 3 and 5 are at their attributions' blocks (1000 and 1001), as the writers store them.
  const schema0 = { ...base, ...placedAt(1000), hash: txHash(3), schema_id: 0, codes: [C1, C2] }
  const schema1 = {
    ...base,
    hash: txHash(0xf001),
    schema_id: 1,
    codes: [C3],
    registry_address: addr(0xee),
    registry_chain_id: '8453',
    registry_verified: true,
  }
  const cbor = { appCode: C1, walletCode: null, serviceCodes: [], registries: { app: null, wallet: null }, metadata: { note: 'x' } }
  const schema2 = { ...base, hash: txHash(0xf002), schema_id: 2, codes: [C1], cbor }
  const malformed = {
    ...base,
    hash: txHash(0xf003),
    schema_id: 0,
    codes: null,
    malformed_reason: 'codes length 200 points past the start of calldata',
  }
  const plain = { ...base, ...placedAt(1001), hash: txHash(5), has_suffix: false, schema_id: null, codes: null, user_operations: 2 }

  beforeAll(async () => {
    await db.store.pool.query(
      `INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, to_address, input_size,
         has_suffix, schema_id, codes, registry_address, registry_chain_id, registry_verified, cbor, malformed_reason, user_operations, gas_used, status, removed)
       SELECT chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, to_address, input_size,
         has_suffix, schema_id, codes, registry_address, registry_chain_id, registry_verified, cbor, malformed_reason, user_operations, gas_used, status, removed
       FROM jsonb_populate_recordset(null::transactions, $1::jsonb)`,
      [JSON.stringify([schema0, schema1, schema2, malformed, plain])],
    )
    // Each with its key, as every writer stores a transaction.
    await db.store.pool.query(`INSERT INTO transaction_keys SELECT chain_id, hash, block_timestamp FROM transactions`)
  })

  it('returns the decoded schema-0 suffix with every matched code and its wallet', async () => {
    const { status, body } = await get(`/v1/transactions/${schema0.hash.toUpperCase().replace('0X', '0x')}/attribution`)
    expect(status).toBe(200)
    expect(body).toMatchObject({
      chainId: CHAIN_ID,
      hash: schema0.hash,
      blockNumber: 1000,
      blockTimestamp: schema0.block_timestamp,
      from: SENDERS[0],
      to: addr(0xc0),
      inputSize: 120,
      gasUsed: 50_000,
      status: 'finalized',
      removed: false,
      suffix: { schemaId: 0, codes: [C1, C2], registry: null, cbor: null, malformedReason: null },
    })
    const expected = rows.filter((r) => r.tx_hash === schema0.hash)
    expect(body.attributions.map((a: { builderCode: string }) => a.builderCode).sort()).toEqual(expected.map((r) => r.builder_code).sort())
    expect(body.attributions.find((a: { builderCode: string }) => a.builderCode === C2)).toMatchObject({
      walletAddress: W2,
      userOpHash: null,
    })
  })

  it('returns the schema-1 registry, schema-2 CBOR fields and malformed reasons', async () => {
    const one = await get(`/v1/transactions/${schema1.hash}/attribution`)
    expect(one.body.suffix).toEqual({
      schemaId: 1,
      codes: [C3],
      registry: { address: addr(0xee), chainId: '8453', verified: true, unverifiedReason: null },
      cbor: null,
      malformedReason: null,
    })
    const two = await get(`/v1/transactions/${schema2.hash}/attribution`)
    expect(two.body.suffix).toMatchObject({ schemaId: 2, codes: [C1], cbor })
    const bad = await get(`/v1/transactions/${malformed.hash}/attribution`)
    expect(bad.body.suffix).toEqual({ schemaId: 0, codes: [], registry: null, cbor: null, malformedReason: malformed.malformed_reason })
    // Stored, and attributed to nothing.
    expect(rows.some((r) => r.tx_hash === malformed.hash)).toBe(false)
    expect(bad.body.attributions).toEqual([])
  })

  it('lists the codes of user operations of a bundle without a suffix of its own', async () => {
    const { body } = await get(`/v1/transactions/${plain.hash}/attribution`)
    expect(body.suffix).toBeNull()
    expect(body.userOperations).toBe(2)
    const ops = rows.filter((r) => r.tx_hash === plain.hash).map((r) => r.user_op_hash)
    expect(
      body.attributions
        .map((a: { userOpHash: string }) => a.userOpHash)
        .filter(Boolean)
        .sort(),
    ).toEqual(ops.filter(Boolean).sort())
  })

  it('answers 404 for a transaction not indexed and 400 for a malformed hash', async () => {
    const missing = await get(`/v1/transactions/${txHash(0xdead)}/attribution`)
    expect([missing.status, missing.body.error.code]).toEqual([404, 'not_found'])
    for (const bad of ['0x1234', `${txHash(1)}00`, 'not-a-hash', `0x${'g'.repeat(64)}`]) {
      const response = await get(`/v1/transactions/${bad}/attribution`)
      expect([response.status, response.body.error.code], bad).toEqual([400, 'invalid_hash'])
    }
    const query = await get(`/v1/transactions/${txHash(3)}/attribution?verbose=1`)
    expect([query.status, query.body.error.code]).toEqual([400, 'unknown_parameter'])
  })
})
