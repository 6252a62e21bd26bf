/** The first line of an error's message, capped: viem's messages carry whole request bodies. */
export function briefly(error: unknown): string {
  const message = (error as { shortMessage?: string; message?: string })?.shortMessage ?? (error as Error)?.message ?? String(error)
  const details = (error as { details?: string })?.details
  const line = `${message.split('\n')[0]}${details ? `: ${details}` : ''}`
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}
