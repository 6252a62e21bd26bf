import { pino, type Logger } from 'pino'

export type { Logger }

/** The process logger: JSON lines (stdout unless `fd` says otherwise), one `msg` and snake_case fields. */
export function createLogger(level = 'info', bindings: Record<string, unknown> = {}, fd: 1 | 2 = 1): Logger {
  return pino({ level, base: { service: 'codetrail', ...bindings } }, pino.destination({ fd, sync: true }))
}

/** A logger that drops everything, for tests and library callers that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' })
