import type pg from 'pg'
import type { Logger } from '../logger.js'
import { toLogRows, upsertPendingLogs, type LogInput, type LogRow } from '../store/index.js'

export type PendingPollerContext = {
  pool: pg.Pool
  logger: Logger
  chainId: number
  /** The node's pre-confirmed logs: `eth_getLogs` with `fromBlock = toBlock = "pending"` and the filter. */
  fetchPendingLogs: () => Promise<LogInput[]>
  /** Attribution of the pending rows' transactions, written in its own transaction. */
  attributePending?: (rows: readonly LogRow[]) => Promise<void>
}

/**
 * The pre-confirmed poller: each `poll` stores what the node serves as pending. Rows are keyed by
 * (transaction, ordinal), so repeated answers and moved logs update rows instead of adding them;
 * the head follower reconciles them when the canonical block arrives.
 */
export function createPendingPoller(context: PendingPollerContext) {
  /** Stores pre-confirmed logs that came from any source (poll or subscription). */
  async function store(logs: readonly LogInput[]): Promise<number> {
    if (logs.length === 0) return 0
    const rows = toLogRows(logs)
    const changed = await upsertPendingLogs(context.pool, context.chainId, rows)
    if (changed > 0) await context.attributePending?.(rows)
    return changed
  }

  async function poll(): Promise<{ served: number; changed: number }> {
    const logs = await context.fetchPendingLogs()
    return { served: logs.length, changed: await store(logs) }
  }

  return { poll, store }
}

export type PendingPoller = ReturnType<typeof createPendingPoller>
