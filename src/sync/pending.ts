import type pg from 'pg'
import type { Logger } from '../logger.js'
import { toLogRows, upsertPendingLogs, type LogInput, type LogRow } from '../store/index.js'
import { crashPoint } from '../utils/crashPoint.js'

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
    while (queued.size > 0) {
      const rows = [...queued.values()]
      queued = new Map()
      await attribute(rows).catch((error: Error) =>
        context.logger.warn({ chain_id: context.chainId, reason: error.message }, 'pending attribution failed'),
      )
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
