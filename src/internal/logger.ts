import { pino, type Logger } from 'pino'
import { createRedactor, MASK } from '../utils/redact.js'

export type { Logger }

/**
 * Fields of logged errors that carry a node's URL, a request body or its headers (viem's
 * `HttpRequestError`, `RpcRequestError`, `TimeoutError` and the causes they wrap).
 */
const ERROR_FIELDS = ['url', 'body', 'headers', 'request', 'metaMessages']
const REDACTED_PATHS = ['err', 'err.cause'].flatMap((error) => ERROR_FIELDS.map((field) => `${error}.${field}`))

export type CreateLoggerOptions = {
  /** stdout unless 2 (a command whose stdout is for its results). @default 1 */
  fd?: 1 | 2
  /** Strings masked wherever they appear in a line: the configuration's keys and passwords ({@link secretsOf}). */
  secrets?: readonly string[]
}

/** The process logger: JSON lines, one `msg` and snake_case fields, no secret of the configuration in any of them. */
export function createLogger(
  level = 'info',
  bindings: Record<string, unknown> = {},
  { fd = 1, secrets = [] }: CreateLoggerOptions = {},
): Logger {
  const redact = createRedactor(secrets)
  return pino(
    {
      level,
      base: { service: 'codetrail', ...bindings },
      redact: { paths: REDACTED_PATHS, censor: MASK },
      // Messages and stacks quote URLs too (viem writes "URL: …" into them): the whole line is scrubbed.
      hooks: { streamWrite: redact },
    },
    pino.destination({ fd, sync: true }),
  )
}

/** A logger that drops everything, for tests and library callers that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' })
