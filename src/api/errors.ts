import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from '../internal/logger.js'
import { CodetrailError } from '../internal/errors.js'

/** An error the API answers as it is: status, snake_case code and a sentence for the client. */
export class ApiError extends CodetrailError {
  override name = 'ApiError'
  readonly statusCode: number
  readonly code: string

  constructor(statusCode: number, code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.statusCode = statusCode
    this.code = code
  }
}

export type ErrorEnvelope = { error: { code: string; message: string } }

type Answer = { status: number; code: string; message: string }

/** Longest piece of client input quoted back in a message. */
const QUOTE_LENGTH = 64

/** Field names whose validation failure has an error code of its own. */
const FIELD_CODES: Record<string, string> = {
  walletAddress: 'invalid_wallet_address',
  cursor: 'invalid_cursor',
}

/** Fastify's own client errors, by `error.code`. */
const FASTIFY_CODES: Record<string, Answer> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'body_too_large', message: 'The request body is larger than this endpoint accepts.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'The request body must be sent with Content-Type: application/json.',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_body', message: 'The JSON request body is empty.' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_content_length',
    message: 'The Content-Length header does not match the body.',
  },
  FST_ERR_BAD_URL: { status: 400, code: 'invalid_url', message: 'The request URL is malformed.' },
  FST_ERR_CTP_INVALID_TYPE: { status: 415, code: 'unsupported_media_type', message: 'The Content-Type header is malformed.' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 400, code: 'invalid_parameter', message: 'A path parameter is longer than any valid value.' },
}

/** PostgreSQL SQLSTATE classes meaning the database is down or refusing connections. */
const UNAVAILABLE_SQLSTATE = /^(08|53|57P0)/
const QUERY_CANCELED = '57014'
/** lock_timeout: the query waited too long for a table another session holds. */
const LOCK_NOT_AVAILABLE = '55P03'
const MAX_CAUSE_DEPTH = 5
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN', 'EPIPE'])

/**
 * Maps any error to its status and the error envelope every route answers with: known client errors get their 4xx and code,
 * the database being slow or away gets 503, anything else a 500 that says nothing of the internals.
 */
export function toErrorAnswer(error: unknown): Answer {
  if (error instanceof ApiError) return { status: error.statusCode, code: error.code, message: error.message }
  const e = (typeof error === 'object' && error !== null ? error : {}) as Partial<FastifyError> & { validation?: unknown }
  if (Array.isArray(e.validation)) return validationAnswer(e as ValidationError)
  if (typeof e.code === 'string') {
    const known = FASTIFY_CODES[e.code]
    if (known) return known
  }
  const backing = backingServiceAnswer(error)
  if (backing) return backing
  if (error instanceof SyntaxError && e.statusCode === 400)
    return { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON.' }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500)
    return { status: e.statusCode, code: 'bad_request', message: sentence(e.message ?? 'The request is invalid.') }
  return { status: 500, code: 'internal_error', message: 'The server hit an unexpected error; it has been logged.' }
}

/** Errors of the database or the network, looked for along the cause chain (drizzle wraps pg's errors). */
function backingServiceAnswer(error: unknown): Answer | null {
  for (let current = error, depth = 0; current instanceof Error && depth < MAX_CAUSE_DEPTH; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code
    if (code === QUERY_CANCELED || code === LOCK_NOT_AVAILABLE)
      return {
        status: 503,
        code: 'query_timeout',
        message: 'The query took too long and was cancelled; narrow the filters or the time range.',
      }
    if (isPostgresError(current) && typeof code === 'string' && UNAVAILABLE_SQLSTATE.test(code))
      return { status: 503, code: 'database_unavailable', message: 'The database is not available right now; retry later.' }
    if (typeof code === 'string' && NETWORK_CODES.has(code))
      return { status: 503, code: 'service_unavailable', message: 'A backing service is not reachable right now; retry later.' }
    if (/timeout exceeded when trying to connect|Connection terminated/i.test(current.message))
      return { status: 503, code: 'database_unavailable', message: 'The database is not available right now; retry later.' }
  }
  return null
}

type ValidationError = {
  validation: { keyword?: string; instancePath?: string; message?: string; params?: { keys?: unknown } }[]
  validationContext?: string
}

function validationAnswer({ validation, validationContext }: ValidationError): Answer {
  const issue = validation[0] ?? {}
  const field = (issue.instancePath ?? '').split('/').filter(Boolean)[0]
  const detail = issue.message ?? 'is invalid'
  const missing = /received undefined$/.test(detail)
  if (validationContext === 'body') {
    if (issue.keyword === 'unrecognized_keys')
      return { status: 400, code: 'invalid_body', message: `The body has unknown fields: ${quoteKeys(issue.params?.keys)}.` }
    if (field === undefined) return { status: 400, code: 'invalid_body', message: 'The body must be a JSON object.' }
    if (missing) return { status: 400, code: 'invalid_body', message: `The body needs ${field}.` }
    if (field === 'walletAddress') return { status: 400, code: 'invalid_wallet_address', message: `walletAddress ${describe(detail)}.` }
    return { status: 400, code: 'invalid_body', message: `Body field ${field} ${describe(detail)}.` }
  }
  if (validationContext === 'querystring' && issue.keyword === 'unrecognized_keys')
    return { status: 400, code: 'unknown_parameter', message: `Unknown query parameters: ${quoteKeys(issue.params?.keys)}.` }
  const where = validationContext === 'params' ? 'Path parameter' : 'Query parameter'
  if (field === undefined) return { status: 400, code: 'invalid_parameter', message: `${where}s are invalid: ${lowerFirst(detail)}.` }
  if (missing) return { status: 400, code: 'invalid_parameter', message: `${where} ${field} is required.` }
  return {
    status: 400,
    code: FIELD_CODES[field] ?? (validationContext === 'params' ? `invalid_${snake(field)}` : 'invalid_parameter'),
    message: `${where} ${field} ${describe(detail)}.`,
  }
}

/** Zod's built-in messages start with a capital ("Invalid input: …"); ours read as a predicate ("must be …"). */
function describe(detail: string): string {
  return /^(must|may|has|is) /.test(detail) ? detail : `is invalid: ${lowerFirst(detail)}`
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1)
}

function snake(field: string): string {
  return field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)
}

function quoteKeys(keys: unknown): string {
  const list = Array.isArray(keys) ? keys : []
  return list.map((key) => JSON.stringify(String(key).slice(0, QUOTE_LENGTH))).join(', ') || 'none'
}

function sentence(message: string): string {
  const text = message.slice(0, 200)
  return /[.!?]$/.test(text) ? text : `${text}.`
}

function isPostgresError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'severity' in error && 'code' in error
}

/** The Fastify error handler: logs server-side failures with their stack, answers with the envelope only. */
export function createErrorHandler(logger: Logger) {
  return function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply) {
    const answer = toErrorAnswer(error)
    if (answer.status >= 500) logger.error({ err: error, method: request.method, url: request.url, code: answer.code }, 'request failed')
    else logger.debug({ method: request.method, url: request.url, code: answer.code }, 'request refused')
    return reply.status(answer.status).send({ error: { code: answer.code, message: answer.message } } satisfies ErrorEnvelope)
  }
}

/**
 * Fastify's `clientErrorHandler`: HTTP the parser cannot read never reaches a route, so the envelope
 * is written to the socket by hand.
 */
export function handleClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const answer: Answer =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? { status: 431, code: 'headers_too_large', message: 'The request headers are larger than the server accepts.' }
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? { status: 408, code: 'request_timeout', message: 'The request was not received in time.' }
        : { status: 400, code: 'malformed_request', message: 'The HTTP request is malformed.' }
  const body = JSON.stringify({ error: { code: answer.code, message: answer.message } } satisfies ErrorEnvelope)
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    )
  socket.destroy(error)
}
