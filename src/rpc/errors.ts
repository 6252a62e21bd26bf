/**
 * What to do about a failed node request, read from the error itself, and the two kinds every failure
 * comes down to: retryable or fatal.
 *
 * Providers refuse wide `eth_getLogs` ranges and big results in many dialects; the catalogue below
 * lists them as data, most specific first, so adding a provider is adding an entry.
 */
import { briefly, FatalError, RetryableError } from '../internal/errors.js'

export { FatalError, RetryableError }

/** What a caller should do after a failed request. */
export type RpcErrorAction =
  /** The provider named a range that works: fetch ranges of that width. */
  | { kind: 'suggested-range'; fromBlock: number; toBlock: number; pattern: string }
  /** The provider refuses ranges wider than `maxBlocks` blocks. */
  | { kind: 'cap'; maxBlocks: number; pattern: string }
  /** The range or its result is too big, with no hint how much: split it in two. */
  | { kind: 'halve'; pattern: string }
  /** Rate limited: wait (`retryAfterMs` when the provider said how long), then ask again unchanged. */
  | { kind: 'backoff'; retryAfterMs?: number; pattern: string }
  /** Transient: ask again unchanged, a bounded number of times. */
  | { kind: 'retry'; pattern: string }
  /** Asking again cannot help. */
  | { kind: 'fatal'; pattern: string }

export type RpcErrorActionKind = RpcErrorAction['kind']

/** One way providers say one thing; every given condition must hold. */
export type RpcErrorPattern = {
  /** Who says it this way, for logs, metrics and tests. */
  name: string
  /** The JSON-RPC error code. */
  code?: number | readonly number[]
  /** The HTTP status of the response. */
  status?: number | readonly number[]
  /**
   * Tested against every message in the cause chain. Named groups feed the action: `from` and `to`
   * (hex block numbers) for `suggested-range`, `max` (decimal, `,` separators and a `k` suffix allowed)
   * for `cap`.
   */
  message?: RegExp
  /** The `name` of an error anywhere in the cause chain. */
  errorName?: string
  /** `error.data` carries the suggested range as `{ from, to }` (Infura). */
  dataRange?: true
  /** `error.data` is revert data: hex of at least a 4-byte selector. */
  revertData?: true
  action: RpcErrorActionKind
}

/** Range syntax providers quote: `[0x1a, 0x2b]`. */
const HEX_RANGE = String.raw`\[\s*(?<from>0x[0-9a-f]+)\s*,\s*(?<to>0x[0-9a-f]+)\s*\]`
/** A block count as providers write it: `1000`, `10,000`, `10k`, `2K`. */
const COUNT = String.raw`(?<max>\d[\d,]*k?)`

/** The catalogue, in matching order: the first entry whose conditions all hold decides. */
export const rpcErrorPatterns: readonly RpcErrorPattern[] = [
  { name: 'aborted', errorName: 'AbortError', action: 'fatal' },

  // Ranges the provider suggests (these messages also mention limits, so they come first).
  { name: 'alchemy-suggested-range', message: new RegExp(`this block range should work:\\s*${HEX_RANGE}`, 'i'), action: 'suggested-range' },
  { name: 'infura-suggested-range', message: new RegExp(`try with this block range\\s*${HEX_RANGE}`, 'i'), action: 'suggested-range' },
  { name: 'infura-data-range', code: -32005, dataRange: true, action: 'suggested-range' },

  // Fixed caps the provider names.
  { name: 'limited-to', message: new RegExp(`limited to (?:an? )?${COUNT}`, 'i'), action: 'cap' },
  { name: 'max-is', message: new RegExp(`max(?:imum)? is (?:set to )?${COUNT}`, 'i'), action: 'cap' },
  { name: 'range-exceeds', message: new RegExp(`range exceeds ${COUNT}`, 'i'), action: 'cap' },
  { name: 'at-most-blocks', message: new RegExp(`(?:to|of) at most ${COUNT} blocks`, 'i'), action: 'cap' },
  { name: 'max-block-range', message: new RegExp(`max(?:imum)? block range:? ${COUNT}`, 'i'), action: 'cap' },
  { name: 'max-range', message: new RegExp(`max range: ${COUNT}`, 'i'), action: 'cap' },
  { name: 'allowed-number-of-blocks', message: new RegExp(`allowed number of requested blocks is ${COUNT}`, 'i'), action: 'cap' },
  { name: 'plan-range', message: new RegExp(`range allowed for your plan \\(\\d+ > ${COUNT}\\)`, 'i'), action: 'cap' },
  { name: 'too-wide-maximum', message: new RegExp(`too wide \\(maximum ${COUNT}\\)`, 'i'), action: 'cap' },
  { name: 'up-to-block-range', message: new RegExp(`up to an? ${COUNT} block range`, 'i'), action: 'cap' },
  { name: 'blocks-distance', message: new RegExp(`blocks distance: ${COUNT}`, 'i'), action: 'cap' },

  // The node has not caught up with the block asked for (load-balanced providers): ask again.
  {
    name: 'block-not-found',
    message: /cannot be found|block not found|header not found|unknown block|beyond (?:the )?current head/i,
    action: 'retry',
  },

  // Rate limits and quotas (before the size errors: -32005 also means "limit exceeded" for quotas).
  {
    name: 'rate-limit-message',
    message:
      /rate.?limit|too many requests|request rate exceeded|request limit reached|(?:quota|capacity|compute units?)(?: \w+)? exceeded|exceeded (?:\w+ ){0,5}(?:quota|capacity)/i,
    action: 'backoff',
  },
  { name: 'rate-limit-code', code: [429, -32007], action: 'backoff' },
  { name: 'http-429', status: 429, action: 'backoff' },

  // Too much: no hint how much, split the range.
  {
    name: 'more-than-results',
    message: /returned more than [\d,]+ results|query exceeds max results|matched by query exceeds limit/i,
    action: 'halve',
  },
  {
    name: 'response-size',
    message: /response size (?:exceeded|should not|is too)|response (?:is )?too large|size exceeded/i,
    action: 'halve',
  },
  {
    name: 'block-range-too-large',
    message: /block range (?:is )?too (?:large|wide)|block range limit exceeded|too many blocks/i,
    action: 'halve',
  },
  { name: 'invalid-params-range', code: -32602, message: /range|blocks/i, action: 'halve' },
  { name: 'limit-exceeded', code: -32005, action: 'halve' },
  { name: 'no-healthy-backend', message: /no backend is currently healthy/i, action: 'halve' },
  { name: 'http-413', status: 413, action: 'halve' },
  { name: 'response-body-too-large', errorName: 'ResponseBodyTooLargeError', action: 'halve' },
  { name: 'timeout', errorName: 'TimeoutError', action: 'halve' },

  { name: 'http-503', status: 503, action: 'backoff' },

  // Transient transport trouble.
  { name: 'malformed-json', errorName: 'SyntaxError', action: 'retry' },
  { name: 'inconsistent-answer', errorName: 'InconsistentAnswerError', action: 'retry' },
  {
    name: 'network',
    message: /fetch failed|socket hang up|other side closed|terminated|ECONN\w+|EPIPE|ETIMEDOUT|EAI_AGAIN/,
    action: 'retry',
  },
  { name: 'http-5xx', status: [500, 502, 504, 520, 521, 522, 523, 524], action: 'retry' },
  { name: 'internal-error', code: -32603, action: 'retry' },

  // Asking again gets the same answer. (A malformed answer is not here: another try, or another node behind the endpoint, may serve it whole.)
  // The contract's code decides a revert, the same at the same block.
  { name: 'execution-reverted', code: 3, action: 'fatal' },
  // The seed interface (and some geth builds) report reverts as -32000 "execution reverted", others with their own codes.
  { name: 'execution-reverted-message', message: /execution reverted/i, action: 'fatal' },
  { name: 'revert-data', revertData: true, action: 'fatal' },
  // Parameters the node cannot read (range-size complaints were caught above as `halve`).
  { name: 'invalid-params', code: -32602, action: 'fatal' },
  // An invalid request, or a method the node does not have or does not offer.
  { name: 'invalid-request', code: [-32600, -32601, -32004], action: 'fatal' },
  // A wrong URL or key: only the operator can fix it.
  { name: 'http-client-error', status: [400, 401, 403, 404, 405], action: 'fatal' },
]

/**
 * Any failure as one of the two kinds: itself, or the first of them in its cause chain; otherwise as
 * {@link classifyRpcError} reads it, its `fatal` actions fatal (an abort aside: a stop, not the node's
 * answer) and everything else retryable, unknown errors included, since retries are bounded.
 *
 * @example
 * if (toKindedError(error) instanceof FatalError) throw new UnrecoverableError(error.message)
 */
export function toKindedError(error: unknown): FatalError | RetryableError {
  let node: unknown = error
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && node && typeof node === 'object'; depth++) {
    if (node instanceof FatalError || node instanceof RetryableError) return node
    node = (node as { cause?: unknown }).cause
  }
  const action = classifyRpcError(error)
  const Kind = action.kind === 'fatal' && action.pattern !== 'aborted' ? FatalError : RetryableError
  return new Kind(briefly(error), { cause: error })
}

/** The catalogue's entries that mean "the call reverted". */
const REVERT_PATTERNS = new Set(['execution-reverted', 'execution-reverted-message', 'revert-data'])

/**
 * Whether a failed `eth_call` reverted (code 3, revert data, or "execution reverted"): the contract's
 * answer. Anything else (a node error such as geth's -32000 "header not found") tells nothing about the call.
 */
export function isRevert(error: unknown): boolean {
  return REVERT_PATTERNS.has(classifyRpcError(error).pattern)
}

/** When nothing in the catalogue matches: retrying is bounded, so an unknown error costs little. */
const UNKNOWN: RpcErrorAction = { kind: 'retry', pattern: 'unknown' }
/** How deep to follow `cause`; viem chains are 2–4 long. */
const MAX_CAUSE_DEPTH = 8

/** What the cause chain of an error says, gathered once for all patterns. */
type ErrorFacts = {
  code?: number
  status?: number
  headers?: { get(name: string): string | null }
  data?: unknown
  names: Set<string>
  messages: string[]
}

/**
 * Classifies a failed request (viem's `HttpRequestError`, `RpcRequestError`, `RpcError` subclasses,
 * `TimeoutError`, or anything else) by walking its cause chain against {@link rpcErrorPatterns}.
 *
 * @example
 * const action = classifyRpcError(error)
 * if (action.kind === 'cap') split(range, action.maxBlocks)
 */
export function classifyRpcError(error: unknown, patterns: readonly RpcErrorPattern[] = rpcErrorPatterns): RpcErrorAction {
  const facts = gatherFacts(error)
  for (const pattern of patterns) {
    const action = matchPattern(pattern, facts)
    if (action) return action
  }
  return UNKNOWN
}

/** `Retry-After` in milliseconds: delta seconds or an HTTP date; `undefined` when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Reads a provider's block count: `10,000` → 10000, `2K` → 2000. */
export function parseBlockCount(text: string): number {
  const digits = text.replace(/,/g, '')
  return /k$/i.test(digits) ? Number(digits.slice(0, -1)) * 1000 : Number(digits)
}

function gatherFacts(error: unknown): ErrorFacts {
  const facts: ErrorFacts = { names: new Set(), messages: [] }
  let node: unknown = error
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && node && typeof node === 'object'; depth++) {
    const e = node as Record<string, unknown>
    if (facts.code === undefined && typeof e.code === 'number') facts.code = e.code
    if (facts.status === undefined && typeof e.status === 'number') facts.status = e.status
    if (!facts.headers && isHeaders(e.headers)) facts.headers = e.headers
    if (facts.data === undefined && e.data !== undefined) facts.data = e.data
    if (typeof e.name === 'string') facts.names.add(e.name)
    // viem's `message` repeats the request body; `details` is the node's own words.
    const text = 'shortMessage' in e ? e.details : e.message
    if (typeof text === 'string' && text) facts.messages.push(text)
    if (typeof e.code === 'string') facts.messages.push(e.code)
    if (typeof e.data === 'string') facts.messages.push(e.data)
    node = e.cause
  }
  return facts
}

function matchPattern(pattern: RpcErrorPattern, facts: ErrorFacts): RpcErrorAction | undefined {
  if (pattern.code !== undefined && !oneOf(pattern.code, facts.code)) return undefined
  if (pattern.status !== undefined && !oneOf(pattern.status, facts.status)) return undefined
  if (pattern.errorName !== undefined && !facts.names.has(pattern.errorName)) return undefined
  let groups: Record<string, string | undefined> = {}
  if (pattern.message) {
    const regex = pattern.message
    const match = facts.messages.map((text) => regex.exec(text)).find((m) => m !== null)
    if (!match) return undefined
    groups = match.groups ?? {}
  }
  if (pattern.revertData && !(typeof facts.data === 'string' && /^0x(?:[0-9a-f]{2}){4,}$/i.test(facts.data))) return undefined
  if (pattern.dataRange) {
    const range = dataRange(facts.data)
    if (!range) return undefined
    groups = range
  }
  return buildAction(pattern, groups, facts)
}

function buildAction(pattern: RpcErrorPattern, groups: Record<string, string | undefined>, facts: ErrorFacts): RpcErrorAction | undefined {
  const name = pattern.name
  switch (pattern.action) {
    case 'suggested-range': {
      const fromBlock = Number(groups.from)
      const toBlock = Number(groups.to)
      if (!Number.isSafeInteger(fromBlock) || !Number.isSafeInteger(toBlock) || toBlock < fromBlock) return undefined
      return { kind: 'suggested-range', fromBlock, toBlock, pattern: name }
    }
    case 'cap': {
      const maxBlocks = groups.max === undefined ? Number.NaN : parseBlockCount(groups.max)
      if (!Number.isSafeInteger(maxBlocks) || maxBlocks < 1) return undefined
      return { kind: 'cap', maxBlocks, pattern: name }
    }
    case 'backoff': {
      const retryAfterMs = parseRetryAfter(facts.headers?.get('retry-after'))
      return retryAfterMs === undefined ? { kind: 'backoff', pattern: name } : { kind: 'backoff', retryAfterMs, pattern: name }
    }
    default:
      return { kind: pattern.action, pattern: name }
  }
}

function oneOf(expected: number | readonly number[], actual: number | undefined): boolean {
  if (actual === undefined) return false
  return typeof expected === 'number' ? expected === actual : expected.includes(actual)
}

function isHeaders(value: unknown): value is { get(name: string): string | null } {
  return typeof value === 'object' && value !== null && typeof (value as { get?: unknown }).get === 'function'
}

function dataRange(data: unknown): { from: string; to: string } | undefined {
  if (typeof data !== 'object' || data === null) return undefined
  const { from, to } = data as { from?: unknown; to?: unknown }
  return typeof from === 'string' && typeof to === 'string' ? { from, to } : undefined
}
