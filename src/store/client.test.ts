import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { isoFromTimestamptz } from './client.js'

const viaDate = (text: string) => (pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ)(text) as Date).toISOString()

describe('isoFromTimestamptz', () => {
  it("writes PostgreSQL's timestamptz text as the Date of pg's parser would, in every fraction and zone form", () => {
    const texts = [
      '2026-11-05 12:34:56+00',
      '2026-11-05 12:34:56.7+00',
      '2026-11-05 12:34:56.78+00',
      '2026-11-05 12:34:56.789+00',
      '2026-11-05 12:34:56.7891+00',
      '2026-11-05 12:34:56.999999+00',
      '2026-12-31 23:59:59.000001+00',
      '1970-01-01 00:00:00+00',
      // Another session time zone, and forms the fast path leaves to the Date.
      '2026-11-05 18:04:56.789+05:30',
      '2026-11-05 04:34:56-08',
      '2026-11-05 12:34:56.5-03:30',
      '12026-11-05 12:34:56+00',
    ]
    for (const text of texts) expect([text, isoFromTimestamptz(text)]).toEqual([text, viaDate(text)])
  })
})
