import { pino, type Logger } from 'pino'

export type { Logger }

/** The process logger: JSON lines on stdout, one `msg` and snake_case fields. */
export function createLogger(level = 'info', bindings: Record<string, unknown> = {}): Logger {
  return pino({ level, base: { service: 'codetrail', ...bindings } })
}

/** A logger that drops everything, for tests and library callers that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' })
