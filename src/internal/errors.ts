/**
 * The errors codetrail throws on purpose, one base class: a short message, the cause chain kept. Each
 * domain's own classes extend it beside their code; the kinds every layer reads live here.
 */
export class CodetrailError extends Error {
  override name = 'CodetrailError'
}

/** A failure asking again cannot change: the node lacks the method, refuses the parameters or the credentials. */
export class FatalError extends CodetrailError {
  override name = 'FatalError'
}

/** A failure a later attempt may get past: a node behind, a rate limit, a timeout, a malformed answer. */
export class RetryableError extends CodetrailError {
  override name = 'RetryableError'
}

/** A setting the process cannot start with: one line naming the variable, its value (masked if secret) and what is allowed. */
export class ConfigError extends CodetrailError {
  override name = 'ConfigError'
}

/** A flag value a command cannot use: reported with exit 2, like an unknown flag. */
export class UsageError extends CodetrailError {
  override name = 'UsageError'
}

/** The first line of an error's message, capped: viem's messages carry whole request bodies. */
export function briefly(error: unknown): string {
  const message = (error as { shortMessage?: string; message?: string })?.shortMessage ?? (error as Error)?.message ?? String(error)
  const details = (error as { details?: string })?.details
  const line = `${message.split('\n')[0]}${details ? `: ${details}` : ''}`
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}
