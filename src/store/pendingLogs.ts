import type pg from 'pg'
import { withTransaction } from './client.js'
import { lockTipWrites } from './chainLock.js'
import { logArrays, LOG_COLUMNS, UNNEST_LOGS } from './logParams.js'
import type { LogRow } from './logRows.js'
import { inKeyMonths } from './transactionKeys.js'

/**
 * The rows to store: not of a block the follower has stored, nor of a transaction already confirmed (looked for
 * in the months the transactions' keys name). One per pending key.
 */
const INCOMING = `(SELECT DISTINCT ON (transaction_hash, tx_log_ordinal) * FROM ${UNNEST_LOGS}
  WHERE block_number > COALESCE((SELECT live_block FROM chain_state WHERE chain_id = $1), -1)
    AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.chain_id = $1 AND t.hash = u.transaction_hash AND t.status <> 'pending' AND NOT t.removed
      AND ${inKeyMonths('t.block_timestamp', '$5::text[]')})
  ORDER BY transaction_hash, tx_log_ordinal) AS u`

/**
 * Stores the node's pre-confirmed logs as `pending` rows keyed by (transaction, ordinal), so a log
 * that moves between flashblocks or blocks updates its row. Logs of blocks the follower has already
 * stored, or of transactions already confirmed (their `transactions` row, written with their canonical
 * logs), are ignored: a stale answer racing the canonical block. Serialised with the tip writes of the
 * chain, so those two reads see every tip commit before this one.
 *
 * `logs` is partitioned by block time and a pending row's time changes between polls, so no unique index
 * can hold the pending key (it would have to include the time). The tip-writes lock holds it instead:
 * every writer of pending rows (this one, and the tip's claim and drop in src/store/tip.ts) takes it, so
 * updating the rows there and then inserting the rest leaves one row per (transaction, ordinal). The update
 * moves a row whose time changed to its new month's partition.
 */
export async function upsertPendingLogs(pool: pg.Pool, chainId: number, rows: readonly LogRow[]): Promise<number> {
  if (rows.length === 0) return 0
  const arrays = logArrays(rows, () => 'pending')
  return withTransaction(pool, async (client) => {
    await lockTipWrites(client, chainId)
    const updated = await client.query(
      `UPDATE logs SET block_number = u.block_number, block_timestamp = to_timestamp(u.ts), block_timestamp_ms = u.ts_ms,
         transaction_index = u.transaction_index, log_index = u.log_index, address = u.address,
         topic0 = u.topic0, topic1 = u.topic1, topic2 = u.topic2, topic3 = u.topic3, data = u.data, removed = false, updated_at = now()
       FROM ${INCOMING}
       WHERE logs.chain_id = $1 AND logs.status = 'pending' AND logs.transaction_hash = u.transaction_hash AND logs.tx_log_ordinal = u.tx_log_ordinal
         AND (logs.block_number, logs.transaction_index, logs.log_index, logs.address, logs.topic0, logs.topic1, logs.topic2,
              logs.topic3, logs.data, logs.removed)
           IS DISTINCT FROM (u.block_number, u.transaction_index, u.log_index, u.address, u.topic0, u.topic1, u.topic2,
              u.topic3, u.data, false)`,
      [chainId, ...arrays],
    )
    const inserted = await client.query(
      `INSERT INTO logs (${LOG_COLUMNS})
       SELECT $1, block_number, block_hash, to_timestamp(ts), transaction_hash, transaction_index, log_index, tx_log_ordinal,
              address, topic0, topic1, topic2, topic3, data, status, ts_ms
       FROM ${INCOMING}
       WHERE NOT EXISTS (SELECT 1 FROM logs l WHERE l.chain_id = $1 AND l.status = 'pending'
         AND l.transaction_hash = u.transaction_hash AND l.tx_log_ordinal = u.tx_log_ordinal)`,
      [chainId, ...arrays],
    )
    return (updated.rowCount ?? 0) + (inserted.rowCount ?? 0)
  })
}
