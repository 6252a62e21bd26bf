import type pg from 'pg'
import type { Logger } from '../internal/logger.js'
import { toLogRows, upsertPendingLogs, type LogInput, type LogRow } from '../store/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import { briefly } from '../internal/errors.js'
import { sleep } from '../utils/loop.js'

/** Attempts at a batch of pending attribution before it is left to the tip, which attributes confirmed blocks. */
const PENDING_ATTRIBUTION_ATTEMPTS = 4
/** Wait after the first failed attempt; doubled after each further one. */
const PENDING_ATTRIBUTION_RETRY_MS = 100

export type PendingPollerContext = {
  pool: pg.Pool
  logger: Logger
  chainId: number
  /**
   * The node's pre-confirmed logs (`eth_getLogs` with `fromBlock = toBlock = "pending"` and the filter)
   * and its latest block number, asked in one JSON-RPC batch.
   */
  fetchPendingLogs: () => Promise<{ logs: LogInput[]; head: number }>
  /** Attribution of the pending rows' transactions, written in its own transaction. */
  attributePending?: (rows: readonly LogRow[]) => Promise<void>
}

/**
 * The pre-confirmed poller: each `poll` stores what the node serves as pending. Rows are keyed by
 * (transaction, ordinal), so repeated answers and moved logs update rows instead of adding them;
 * the head follower reconciles them when the canonical block arrives.
 */
export function createPendingPoller(context: PendingPollerContext) {
  // Attribution runs beside the polls, one batch at a time: fetching transactions must not delay the next poll.
  let queued = new Map<string, LogRow>()
  let attributing: Promise<void> | undefined

  async function drain(attribute: (rows: readonly LogRow[]) => Promise<void>) {
    let failures = 0
    while (queued.size > 0) {
      const rows = [...queued.values()]
      queued = new Map()
      try {
        await attribute(rows)
        failures = 0
      } catch (error) {
        failures++
        const fields = { chain_id: context.chainId, transactions: rows.length, failures, reason: briefly(error) }
        if (failures >= PENDING_ATTRIBUTION_ATTEMPTS) {
          failures = 0
          context.logger.warn(fields, 'pending attribution failed: left to the blocks that confirm them')
          continue
        }
        // Asked again with what came meanwhile; a newer version of a row wins.
        queued = new Map([...rows.map((row) => [row.transactionHash, row] as const), ...queued])
        const retryInMs = PENDING_ATTRIBUTION_RETRY_MS * 2 ** (failures - 1)
        context.logger.warn({ ...fields, retry_in_ms: retryInMs }, 'pending attribution failed: retrying')
        await sleep(retryInMs)
      }
    }
  }

  function attributeLater(rows: readonly LogRow[]) {
    const attribute = context.attributePending
    if (!attribute) return
    for (const row of rows) queued.set(row.transactionHash, row)
    attributing ??= drain(attribute).finally(() => (attributing = undefined))
  }

  /** Stores pre-confirmed logs that came from any source (poll or subscription). */
  async function store(logs: readonly LogInput[]): Promise<number> {
    if (logs.length === 0) return 0
    const rows = toLogRows(logs)
    const changed = await upsertPendingLogs(context.pool, context.chainId, rows)
    crashPoint('pending-stored')
    if (changed > 0) attributeLater(rows)
    return changed
  }

  /** One poll; `head` is the node's latest block number as of the poll. */
  async function poll(): Promise<{ served: number; changed: number; head: number }> {
    const { logs, head } = await context.fetchPendingLogs()
    const changed = await store(logs)
    return { served: logs.length, changed, head }
  }

  return {
    poll,
    store,
    /** Resolves once the attribution of what was stored so far is written (for a clean stop). */
    settled: async () => {
      while (attributing) await attributing
    },
  }
}

export type PendingPoller = ReturnType<typeof createPendingPoller>
