import { setTimeout as sleep } from 'node:timers/promises'
import type { Address, Hex } from 'viem'
import { alignedChunks, type Interval } from '../../utils/interval.js'
import { backoffDelay } from '../../utils/backoff.js'
import { MAX_BLOCKS_PER_REQUEST } from '../../config/limits.js'
import { CodetrailError } from '../../internal/errors.js'
import type { RpcCall, RpcClient } from '../client.js'
import { classifyRpcError, type RpcErrorAction } from '../errors.js'
import { blockCount, halveInterval, narrowInterval } from '../ranges.js'
import { verifyLogsRequested } from '../verify.js'
import { malformed } from './answer.js'
import { getBlockRequest } from './getBlock.js'

export const DEFAULT_GET_LOGS_RETRY: GetLogsRetryPolicy = {
  maxRetries: 4,
  maxBackoffs: 8,
  baseDelayMs: 250,
  maxDelayMs: 30_000,
}

/** A log exactly as the node serves it; pending logs may carry null or zero positions. */
export type RpcLog = {
  address: Hex
  topics: Hex[]
  data: Hex
  blockNumber: Hex | null
  blockHash: Hex | null
  /** Node extension: hex, a JSON number on some geth builds, or absent. */
  blockTimestamp?: Hex | number
  /** Base's extension: the block time in milliseconds. */
  blockTimestampMs?: Hex | number
  transactionHash: Hex | null
  transactionIndex: Hex | null
  logIndex: Hex | null
  removed: boolean
}

export type GetLogsRetryPolicy = {
  /** Repeats of one range after transient errors; then a wide range is halved and a single block fails. */
  maxRetries: number
  /** Waits on one range for rate limits before failing. */
  maxBackoffs: number
  baseDelayMs: number
  /** Longest wait; a `Retry-After` beyond it fails the call (retryable) instead of holding it. */
  maxDelayMs: number
}

/** Block numbers are JS numbers (safe integers), as everywhere in codetrail. */
export type GetLogsParameters = (
  | { fromBlock: number; toBlock: number }
  /** The pre-confirmed logs: one request, never split. */
  | { fromBlock: 'pending'; toBlock: 'pending' }
) & {
  address?: Address | readonly Address[]
  topics?: readonly (Hex | readonly Hex[] | null)[]
  /** Widest range per request, at most {@link MAX_BLOCKS_PER_REQUEST}. */
  maxBlocks: number
  /**
   * Sub-requests in flight. Default 1: chunk jobs already run in parallel across workers, and one
   * response at a time bounds memory; raise it to read one wide range fast.
   */
  concurrency?: number
  signal?: AbortSignal
  retry?: Partial<GetLogsRetryPolicy>
}

type BlockTag = number | 'pending' | 'latest'

/** One `eth_getLogs` request: a range (or `pending`, or `latest`: the head's block) and the filter. */
export type LogsRequest = {
  fromBlock: BlockTag
  toBlock: BlockTag
  address?: Address | readonly Address[]
  topics?: readonly (Hex | readonly Hex[] | null)[]
}

/**
 * The single `eth_getLogs` call for `request`, never split: for a batch with other calls (a short range
 * at the tip, pending logs with the head). A range that may be wide or dense goes through {@link getLogs}.
 *
 * @example
 * const [logs, head] = await client.batch([getLogsRequest({ fromBlock: 'pending', toBlock: 'pending', address }), getBlockNumberRequest()])
 */
export function getLogsRequest({ fromBlock, toBlock, address, topics }: LogsRequest): RpcCall {
  return {
    method: 'eth_getLogs',
    params: [
      {
        fromBlock: hexTag(fromBlock),
        toBlock: hexTag(toBlock),
        ...(address === undefined ? {} : { address }),
        ...(topics === undefined ? {} : { topics }),
      },
    ],
  }
}

/**
 * The node's answer to {@link getLogsRequest}, checked to be a list of logs that were all asked for
 * (`verifyLogsRequested`); anything else throws an `InconsistentAnswerError`.
 */
export function parseLogs(answer: unknown, request: LogsRequest): RpcLog[] {
  if (!Array.isArray(answer)) return malformed('eth_getLogs', `${typeof answer}, not an array`)
  verifyLogsRequested(answer as RpcLog[], request)
  return answer as RpcLog[]
}

/** A node refused a range; it is asked for again in `parts` narrower ranges. */
export type GetLogsSplitEvent = { fromBlock: number; toBlock: number; parts: number; reason: RpcErrorAction }
/** A range is asked for again, unchanged, after `delayMs`. */
export type GetLogsBackoffEvent = { fromBlock: BlockTag; toBlock: BlockTag; attempt: number; delayMs: number; reason: RpcErrorAction }
/** A range's logs arrived. */
export type GetLogsRangeEvent = { fromBlock: BlockTag; toBlock: BlockTag; logs: number; durationMs: number }

/** Where metrics count splits, waits and answered ranges. */
export type GetLogsHooks = {
  onSplit?: (event: GetLogsSplitEvent) => void
  onBackoff?: (event: GetLogsBackoffEvent) => void
  onRange?: (event: GetLogsRangeEvent) => void
}

export type GetLogsReturnType = RpcLog[]

/** `eth_getLogs` gave up on a range; `retryable` says whether a later attempt may succeed. */
export class GetLogsError extends CodetrailError {
  override name = 'GetLogsError'
  readonly fromBlock: BlockTag
  readonly toBlock: BlockTag
  readonly attempts: number
  readonly reason: RpcErrorAction
  readonly retryable: boolean
  /** The node's own words, from the cause. */
  readonly details: string

  constructor(args: {
    fromBlock: BlockTag
    toBlock: BlockTag
    attempts: number
    reason: RpcErrorAction
    retryable: boolean
    cause: unknown
  }) {
    super(
      `eth_getLogs failed for blocks ${args.fromBlock}..${args.toBlock} after ${args.attempts} attempts (${args.reason.kind}: ${args.reason.pattern})`,
      {
        cause: args.cause,
      },
    )
    this.fromBlock = args.fromBlock
    this.toBlock = args.toBlock
    this.attempts = args.attempts
    this.reason = args.reason
    this.retryable = args.retryable
    this.details = describeCause(args.cause)
  }
}

/** The node that answered has not reached the range's last block; its message reads as `retry` to {@link classifyRpcError}. */
export class NodeBehindError extends CodetrailError {
  override name = 'NodeBehindError'
  constructor(toBlock: number) {
    super(`block ${toBlock} is beyond current head of the node that answered`)
  }
}

type Outcome = { logs: RpcLog[] } | { parts: Interval[]; reason: RpcErrorAction }

/**
 * Every log of `[fromBlock, toBlock]`, exactly as the node returned them, in block order. Ranges wider
 * than `maxBlocks` are asked for in parts; refused ranges are narrowed as the provider's error says
 * (see {@link classifyRpcError}); rate limits are waited out. It resolves only when every block was
 * answered, else rejects with a {@link GetLogsError}.
 *
 * @example
 * const logs = await getLogs(client, { fromBlock: 1_000, toBlock: 1_999, address, maxBlocks: 1_000 })
 */
export async function getLogs(
  client: Pick<RpcClient, 'request' | 'batch' | 'logger'>,
  parameters: GetLogsParameters,
  hooks: GetLogsHooks = {},
): Promise<GetLogsReturnType> {
  const { maxBlocks, concurrency = 1, signal } = parameters
  if (!Number.isSafeInteger(maxBlocks) || maxBlocks < 1 || maxBlocks > MAX_BLOCKS_PER_REQUEST)
    throw new RangeError(`maxBlocks must be an integer from 1 to ${MAX_BLOCKS_PER_REQUEST}, got ${maxBlocks}`)
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`)
  signal?.throwIfAborted()
  const policy = { ...DEFAULT_GET_LOGS_RETRY, ...parameters.retry }
  const { logger } = client

  const request = (fromBlock: BlockTag, toBlock: BlockTag): LogsRequest => ({
    fromBlock,
    toBlock,
    ...(parameters.address === undefined ? {} : { address: parameters.address }),
    ...(parameters.topics === undefined ? {} : { topics: parameters.topics }),
  })

  /**
   * A range's logs with the header of its last block from the same HTTP request: a node behind the others
   * (load-balanced endpoints) may answer a range past its head with fewer logs and no error; it has no such header.
   */
  async function logsFromNodeAt(fromBlock: BlockTag, toBlock: number, runSignal: AbortSignal | undefined): Promise<unknown> {
    const [logs, last] = await client.batch<unknown>([getLogsRequest(request(fromBlock, toBlock)), getBlockRequest(toBlock)], {
      signal: runSignal,
    })
    // Only whether the node has the block matters here, not what it says of it.
    if (last === null) throw new NodeBehindError(toBlock)
    return logs
  }

  /** Asks for one range until it answers, must be narrowed, or fails for good. */
  async function fetchRange(
    fromBlock: BlockTag,
    toBlock: BlockTag,
    runSignal: AbortSignal | undefined,
    narrow: (reason: RpcErrorAction) => Interval[] | undefined,
  ): Promise<Outcome> {
    let attempts = 0
    let retries = 0
    let backoffs = 0
    const fail = (reason: RpcErrorAction, retryable: boolean, cause: unknown) =>
      new GetLogsError({ fromBlock, toBlock, attempts, reason, retryable, cause })
    const wait = async (attempt: number, delayMs: number, reason: RpcErrorAction) => {
      logger.debug(
        { from_block: fromBlock, to_block: toBlock, attempt, delay_ms: delayMs, reason: reason.kind, pattern: reason.pattern },
        'eth_getLogs waiting to ask again',
      )
      hooks.onBackoff?.({ fromBlock, toBlock, attempt, delayMs, reason })
      await sleep(delayMs, undefined, { signal: runSignal })
    }
    for (;;) {
      const started = performance.now()
      attempts++
      try {
        const asked = request(fromBlock, toBlock)
        const alone = getLogsRequest(asked)
        const answer =
          typeof toBlock === 'number'
            ? await logsFromNodeAt(fromBlock, toBlock, runSignal)
            : await client.request(alone.method, alone.params, { signal: runSignal })
        const logs = parseLogs(answer, asked)
        hooks.onRange?.({ fromBlock, toBlock, logs: logs.length, durationMs: performance.now() - started })
        return { logs }
      } catch (error) {
        if (runSignal?.aborted) throw error
        const reason = classifyRpcError(error)
        if (reason.kind === 'fatal') throw fail(reason, false, error)
        if (reason.kind === 'backoff') {
          backoffs++
          if (backoffs > policy.maxBackoffs || (reason.retryAfterMs ?? 0) > policy.maxDelayMs) throw fail(reason, true, error)
          await wait(backoffs, reason.retryAfterMs ?? backoffDelay(backoffs, policy), reason)
          continue
        }
        if (reason.kind !== 'retry') {
          const parts = narrow(reason)
          if (parts) return { parts, reason }
        }
        retries++
        if (retries > policy.maxRetries) {
          // A wide range that keeps failing for no stated reason may still answer in smaller parts.
          const parts = narrow({ kind: 'halve', pattern: reason.pattern })
          if (parts) return { parts, reason }
          throw fail(reason, true, error)
        }
        await wait(retries, backoffDelay(retries, policy), reason)
      }
    }
  }

  if (parameters.fromBlock === 'pending') {
    // Nothing narrows `pending`, so the outcome is always its logs.
    const outcome = (await fetchRange('pending', 'pending', signal, () => undefined)) as { logs: RpcLog[] }
    return outcome.logs
  }

  const { fromBlock, toBlock } = parameters
  if (!Number.isSafeInteger(fromBlock) || !Number.isSafeInteger(toBlock) || fromBlock < 0 || toBlock < fromBlock)
    throw new RangeError(`invalid block range ${fromBlock}..${toBlock}`)

  // The narrowest cap a provider named so far; later ranges are cut to it before they are asked for.
  let cap = maxBlocks
  const queue: Interval[] = alignedChunks([[fromBlock, toBlock]], cap)
  const answered: { fromBlock: number; logs: RpcLog[] }[] = []
  const stop = new AbortController()
  const runSignal = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal
  const inFlight = new Set<Promise<void>>()
  let failure: { error: unknown } | undefined

  const run = async (interval: Interval) => {
    try {
      const outcome = await fetchRange(interval[0], interval[1], runSignal, (reason) => {
        if (reason.kind === 'cap' && reason.maxBlocks < blockCount(interval)) cap = Math.min(cap, reason.maxBlocks)
        return narrowInterval(interval, reason) ?? halveInterval(interval)
      })
      if ('logs' in outcome) {
        answered.push({ fromBlock: interval[0], logs: outcome.logs })
        return
      }
      const { parts, reason } = outcome
      logger.debug(
        { from_block: interval[0], to_block: interval[1], parts: parts.length, reason: reason.kind, pattern: reason.pattern },
        'eth_getLogs range split',
      )
      hooks.onSplit?.({ fromBlock: interval[0], toBlock: interval[1], parts: parts.length, reason })
      queue.unshift(...parts)
    } catch (error) {
      if (failure) return
      failure = { error }
      // Siblings stop too: the call fails as a whole, so their answers would be thrown away.
      stop.abort(error)
    }
  }

  while (!failure && (queue.length > 0 || inFlight.size > 0)) {
    while (!failure && inFlight.size < concurrency && queue.length > 0) {
      const interval = queue.shift()!
      if (blockCount(interval) > cap) {
        queue.unshift(...alignedChunks([interval], cap))
        continue
      }
      const task: Promise<void> = run(interval).finally(() => inFlight.delete(task))
      inFlight.add(task)
    }
    if (inFlight.size > 0) await Promise.race(inFlight)
  }
  await Promise.allSettled(inFlight)
  if (failure) throw signal?.aborted ? signal.reason : failure.error

  answered.sort((a, b) => a.fromBlock - b.fromBlock)
  const logs = answered.length === 1 ? answered[0]!.logs : answered.flatMap((part) => part.logs)
  logger.debug({ from_block: fromBlock, to_block: toBlock, logs: logs.length, requests: answered.length }, 'eth_getLogs range done')
  return logs
}

function hexTag(block: BlockTag): string {
  return typeof block === 'string' ? block : `0x${block.toString(16)}`
}

function describeCause(cause: unknown): string {
  if (cause && typeof cause === 'object') {
    const { details, message } = cause as { details?: unknown; message?: unknown }
    if (typeof details === 'string' && details) return details
    if (typeof message === 'string') return message.split('\n')[0] ?? ''
  }
  return String(cause)
}
