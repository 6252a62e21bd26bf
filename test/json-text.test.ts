/**
 * The JSON that PostgreSQL writes for the API (`src/store/reads/jsonText.ts`) parses to what the values are,
 * whatever a string holds, and writes times as `Date#toISOString` does.
 */
import { sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'
import { jsonIsoTime, jsonObject, jsonPlainString, jsonScalar, jsonValue } from '../src/store/reads/jsonText.js'

let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
})

afterAll(async () => {
  await db?.drop()
})

const dialect = new PgDialect()

/** The JSON text `json` is written as, on `client` (a connection of the pool if none). */
async function written(json: SQL, client: Pick<pg.PoolClient, 'query'> = db.store.pool): Promise<string> {
  const { sql: text, params } = dialect.sqlToQuery(sql`select ${json} as json`)
  const { rows } = await client.query<{ json: string }>(text, params)
  return rows[0]!.json
}

describe('JSON written by PostgreSQL', () => {
  it('escapes every string it is given and writes SQL null as null', async () => {
    const awkward = ['', 'plain', 'a "quoted" \\ back\\slash', 'line\nbreak\ttab\u0001\u001f', 'ünïcødé ✓ 𝄞', '</script>']
    for (const text of awkward) expect(JSON.parse(await written(jsonValue(sql`${text}::text`)))).toBe(text)
    expect(await written(jsonValue(sql`null::text`))).toBe('null')
    expect(JSON.parse(await written(jsonValue(sql`array['a', 'b"c']::text[]`)))).toEqual(['a', 'b"c'])
    expect(JSON.parse(await written(jsonPlainString(sql`'bc_00000001'::text`)))).toBe('bc_00000001')
    expect(await written(jsonPlainString(sql`null::text`))).toBe('null')
  })

  it('writes numbers and booleans as JSON numbers and booleans', async () => {
    expect(JSON.parse(await written(jsonScalar(sql`9007199254740991::int8`)))).toBe(Number.MAX_SAFE_INTEGER)
    expect(JSON.parse(await written(jsonScalar(sql`0::int2`)))).toBe(0)
    expect(JSON.parse(await written(jsonScalar(sql`true`)))).toBe(true)
    expect(await written(jsonScalar(sql`null::int8`))).toBe('null')
  })

  it('writes a time as Date#toISOString does, in UTC to the millisecond, whatever the session time zone', async () => {
    const client = await db.store.pool.connect()
    try {
      await client.query(`SET TIME ZONE 'America/Los_Angeles'`)
      const times = ['2026-11-05T00:00:00.000Z', '2026-12-31T23:59:59.999Z', '2025-03-09T10:30:01.200Z', '1970-01-01T00:00:00.000Z']
      for (const time of times)
        expect(JSON.parse(await written(jsonIsoTime(sql`${time}::timestamptz`), client))).toBe(new Date(time).toISOString())
      expect(await written(jsonIsoTime(sql`null::timestamptz`), client)).toBe('null')
    } finally {
      client.release(true)
    }
  })

  it('writes an object with its fields in order, nested, and refuses a field name it would have to escape', async () => {
    const object = jsonObject({ b: jsonScalar(sql`1`), a: jsonObject({ x: jsonValue(sql`'"'::text`) }), empty: jsonObject({}) })
    const text = await written(object)
    expect(Object.keys(JSON.parse(text))).toEqual(['b', 'a', 'empty'])
    expect(JSON.parse(text)).toEqual({ b: 1, a: { x: '"' }, empty: {} })
    expect(() => jsonObject({ 'a"b': jsonScalar(sql`1`) })).toThrow(/not a plain identifier/)
  })
})
