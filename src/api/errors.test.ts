import { describe, expect, it } from 'vitest'
import { ApiError, toErrorAnswer } from './errors.js'

/** What pg throws: an Error with a SQLSTATE `code` and a `severity`. */
const pgError = (code: string) => Object.assign(new Error('pg'), { code, severity: 'ERROR' })

describe('toErrorAnswer', () => {
  it('keeps an ApiError as it is', () => {
    expect(toErrorAnswer(new ApiError(404, 'not_found', 'Nothing here.'))).toEqual({
      status: 404,
      code: 'not_found',
      message: 'Nothing here.',
    })
  })

  it('maps a cancelled statement to 503 query_timeout and a database that is away to 503, also when wrapped', () => {
    expect(toErrorAnswer(pgError('57014'))).toMatchObject({ status: 503, code: 'query_timeout' })
    expect(toErrorAnswer(new Error('Failed query', { cause: pgError('57014') }))).toMatchObject({ status: 503, code: 'query_timeout' })
    expect(toErrorAnswer(new Error('Failed query', { cause: pgError('57P01') }))).toMatchObject({
      status: 503,
      code: 'database_unavailable',
    })
    expect(toErrorAnswer(new Error('timeout exceeded when trying to connect'))).toMatchObject({ status: 503, code: 'database_unavailable' })
    expect(toErrorAnswer(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }))).toMatchObject({
      status: 503,
      code: 'service_unavailable',
    })
  })

  it('maps validation failures to field codes and unknown parameters to unknown_parameter', () => {
    const validation = (context: string, path: string, keyword = 'custom', message = 'must be x', keys?: string[]) => ({
      validationContext: context,
      validation: [{ keyword, instancePath: path, message, params: keys ? { keys } : {} }],
    })
    expect(toErrorAnswer(validation('querystring', '', 'unrecognized_keys', 'x', ['foo', 'bar']))).toEqual({
      status: 400,
      code: 'unknown_parameter',
      message: 'Unknown query parameters: "foo", "bar".',
    })
    expect(toErrorAnswer(validation('querystring', '/cursor'))).toMatchObject({
      code: 'invalid_cursor',
      message: 'Query parameter cursor must be x.',
    })
    expect(
      toErrorAnswer(validation('querystring', '/limit', 'invalid_type', 'Invalid input: expected string, received undefined')),
    ).toMatchObject({
      code: 'invalid_parameter',
      message: 'Query parameter limit is required.',
    })
    expect(toErrorAnswer(validation('params', '/hash'))).toMatchObject({ code: 'invalid_hash' })
    expect(toErrorAnswer(validation('body', '/walletAddress'))).toMatchObject({ code: 'invalid_wallet_address' })
    expect(
      toErrorAnswer(validation('body', '/walletAddress', 'invalid_type', 'Invalid input: expected string, received undefined')),
    ).toMatchObject({
      code: 'invalid_body',
      message: 'The body needs walletAddress.',
    })
    expect(toErrorAnswer(validation('body', ''))).toMatchObject({ code: 'invalid_body' })
  })

  it('answers anything unknown with a 500 that names nothing internal', () => {
    const answer = toErrorAnswer(new TypeError("Cannot read properties of undefined (reading 'secret')"))
    expect(answer).toEqual({ status: 500, code: 'internal_error', message: 'The server hit an unexpected error; it has been logged.' })
    expect(toErrorAnswer('a string')).toMatchObject({ status: 500 })
    expect(toErrorAnswer(null)).toMatchObject({ status: 500 })
  })
})
