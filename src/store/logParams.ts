import type { LogRow } from './logRows.js'
import type { Status } from './schema.js'

/** The `logs` columns the unnest writers fill, in the order of {@link UNNEST_LOGS}. */
export const LOG_COLUMNS = `chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index,
  tx_log_ordinal, address, topic0, topic1, topic2, topic3, data, status, block_timestamp_ms`

/** The rows as unnest-able parameter arrays, from `$2` on (`$1` is the chain id). */
export function logArrays(rows: readonly LogRow[], statusOf: (row: LogRow) => Status) {
  return [
    rows.map((r) => r.blockNumber),
    rows.map((r) => r.blockHash),
    rows.map((r) => r.blockTimestamp),
    rows.map((r) => r.transactionHash),
    rows.map((r) => r.transactionIndex),
    rows.map((r) => r.logIndex),
    rows.map((r) => r.txLogOrdinal),
    rows.map((r) => r.address),
    rows.map((r) => r.topics[0] ?? null),
    rows.map((r) => r.topics[1] ?? null),
    rows.map((r) => r.topics[2] ?? null),
    rows.map((r) => r.topics[3] ?? null),
    rows.map((r) => r.data),
    rows.map((r) => statusOf(r)),
    rows.map((r) => r.blockTimestampMs ?? null),
  ]
}

export const UNNEST_LOGS = `unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::int[], $7::int[], $8::int[], $9::text[],
  $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::bigint[])
  AS u(block_number, block_hash, ts, transaction_hash, transaction_index, log_index, tx_log_ordinal, address,
       topic0, topic1, topic2, topic3, data, status, ts_ms)`
