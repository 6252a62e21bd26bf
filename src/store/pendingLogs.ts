import type pg from 'pg'
import { withTransaction } from './client.js'
import { lockTipWrites } from './chainLock.js'
import { logArrays, LOG_COLUMNS, UNNEST_LOGS } from './logParams.js'
import type { LogRow } from './logRows.js'

/**
 * Stores the node's pre-confirmed logs as `pending` rows keyed by (transaction, ordinal), so a log
 * that moves between flashblocks or blocks updates its row. Logs of blocks the follower has already
 * stored, or of transactions already confirmed (their `transactions` row, written with their canonical
 * logs), are ignored: a stale answer racing the canonical block. Serialised with the tip writes of the
 * chain, so those two reads see every tip commit before this one.
 */
export async function upsertPendingLogs(pool: pg.Pool, chainId: number, rows: readonly LogRow[]): Promise<number> {
  if (rows.length === 0) return 0
  const arrays = logArrays(rows, () => 'pending')
  const result = await withTransaction(pool, async (client) => {
    await lockTipWrites(client, chainId)
    return client.query(
      `INSERT INTO logs (${LOG_COLUMNS})
       SELECT $1, block_number, block_hash, to_timestamp(ts), transaction_hash, transaction_index, log_index, tx_log_ordinal,
              address, topic0, topic1, topic2, topic3, data, status, ts_ms
       FROM ${UNNEST_LOGS}
       WHERE block_number > COALESCE((SELECT live_block FROM chain_state WHERE chain_id = $1), -1)
         AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.chain_id = $1 AND t.hash = u.transaction_hash AND t.status <> 'pending' AND NOT t.removed)
       ON CONFLICT (chain_id, transaction_hash, tx_log_ordinal) WHERE status = 'pending'
       DO UPDATE SET block_number = EXCLUDED.block_number, block_timestamp = EXCLUDED.block_timestamp, block_timestamp_ms = EXCLUDED.block_timestamp_ms,
         transaction_index = EXCLUDED.transaction_index, log_index = EXCLUDED.log_index, address = EXCLUDED.address,
         topic0 = EXCLUDED.topic0, topic1 = EXCLUDED.topic1, topic2 = EXCLUDED.topic2, topic3 = EXCLUDED.topic3,
         data = EXCLUDED.data, removed = false, updated_at = now()
       WHERE (logs.block_number, logs.transaction_index, logs.log_index, logs.address, logs.topic0, logs.topic1, logs.topic2,
              logs.topic3, logs.data, logs.removed)
         IS DISTINCT FROM (EXCLUDED.block_number, EXCLUDED.transaction_index, EXCLUDED.log_index, EXCLUDED.address,
              EXCLUDED.topic0, EXCLUDED.topic1, EXCLUDED.topic2, EXCLUDED.topic3, EXCLUDED.data, false)`,
      [chainId, ...arrays],
    )
  })
  return result.rowCount ?? 0
}
