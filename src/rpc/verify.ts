import { RetryableError } from './errors.js'

/** What the checks read of a log. */
type VerifiedLog = { blockHash: string | null; blockNumber: string | number | null; transactionHash: string | null }

/** The node answered with logs that contradict its own headers: the request is made again, nothing is stored. Retryable. */
export class InconsistentAnswerError extends RetryableError {
  override name = 'InconsistentAnswerError'
}

const EMPTY_BLOOM = `0x${'0'.repeat(512)}`

export type VerifyLogsParameters = {
  /** Headers fetched with the logs, for the blocks that have one; logs of other blocks get the shape checks only. */
  headers: ReadonlyMap<number, { hash: string; logsBloom?: string | undefined }>
  /** The request matched every log (no address or topic): a block whose bloom is not empty must then have logs. */
  everyLog: boolean
}

/**
 * Checks confirmed logs the way Ponder distrusts a node: each has a block hash and number, each agrees
 * with the header fetched with it, and with an unfiltered request no block whose bloom says it has logs
 * comes back without any. Throws {@link InconsistentAnswerError} on the first contradiction.
 */
export function verifyLogs(logs: readonly VerifiedLog[], { headers, everyLog }: VerifyLogsParameters): void {
  const withLogs = new Set<number>()
  for (const log of logs) {
    if (typeof log.blockHash !== 'string' || log.blockNumber === null || log.blockNumber === undefined) {
      throw new InconsistentAnswerError(`a confirmed log of transaction ${log.transactionHash} has no block hash or number`)
    }
    const number = Number(log.blockNumber)
    withLogs.add(number)
    const header = headers.get(number)
    if (header && header.hash !== log.blockHash.toLowerCase()) {
      throw new InconsistentAnswerError(`a log of block ${number} names block ${log.blockHash}, the header says ${header.hash}`)
    }
  }
  if (!everyLog) return
  for (const [number, header] of headers) {
    if (header.logsBloom && header.logsBloom !== EMPTY_BLOOM && !withLogs.has(number)) {
      throw new InconsistentAnswerError(`block ${number} has a non-empty logs bloom but the node returned no logs for it`)
    }
  }
}

export type RequestedLogs = {
  /** Numbers for a confirmed range; `pending` (and `latest`) logs are checked by address and topics only. */
  fromBlock: number | 'pending' | 'latest'
  toBlock: number | 'pending' | 'latest'
  address?: string | readonly string[]
  topics?: readonly (string | readonly string[] | null)[]
}

/**
 * Checks that every log is one that was asked for, as Ponder does: its address among the requested
 * ones, each requested topic position matched, its block inside the range. A node that answers with
 * anything else (a bug, a proxy mixing answers, a hostile endpoint) gets asked again; such a log is
 * never stored. Throws {@link InconsistentAnswerError} on the first log outside the request.
 */
export function verifyLogsRequested(
  logs: readonly { address: string; topics: readonly string[]; blockNumber: string | number | null }[],
  { fromBlock, toBlock, address, topics = [] }: RequestedLogs,
): void {
  const addresses = address === undefined ? undefined : new Set([address].flat().map((item) => item.toLowerCase()))
  const wanted = topics.map((position) => (position === null ? null : new Set([position].flat().map((item) => item.toLowerCase()))))
  for (const log of logs) {
    const shown = `a log of ${log.address} in block ${log.blockNumber}`
    if (addresses && !addresses.has(String(log.address).toLowerCase()))
      throw new InconsistentAnswerError(`${shown} was not asked for (address)`)
    for (const [i, set] of wanted.entries()) {
      if (set && !set.has(String(log.topics?.[i]).toLowerCase()))
        throw new InconsistentAnswerError(`${shown} was not asked for (topic ${i})`)
    }
    if (typeof fromBlock === 'number' && typeof toBlock === 'number') {
      const number = log.blockNumber === null ? NaN : Number(log.blockNumber)
      if (!(number >= fromBlock && number <= toBlock))
        throw new InconsistentAnswerError(`${shown} is outside the blocks asked for, ${fromBlock}..${toBlock}`)
    }
  }
}
