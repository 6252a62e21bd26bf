import { sql } from 'drizzle-orm'
import { ISO_TIMESTAMPS, queryPrepared, type Database } from '../client.js'
import type { RegistryUnverifiedReason, Status } from '../schema.js'

/** A stored transaction as the transaction route reads it; `block_timestamp` in ISO 8601 (UTC, milliseconds). */
type TransactionRow = {
  hash: string
  block_number: string
  block_hash: string
  block_timestamp: string
  block_timestamp_ms: string | null
  transaction_index: number
  from_address: string
  to_address: string | null
  input_size: number
  has_suffix: boolean
  schema_id: number | null
  codes: string[] | null
  registry_address: string | null
  registry_chain_id: string | null
  registry_verified: boolean | null
  registry_unverified_reason: RegistryUnverifiedReason | null
  cbor: unknown
  malformed_reason: string | null
  user_operations: number
  gas_used: string | null
  status: Status
  removed: boolean
}

/** One attribution of the transaction, its columns prefixed `match_`; all null when it has none. */
type MatchColumns = {
  match_user_op_hash: string | null
  match_builder_code: string | null
  match_code_index: number | null
  match_sender: string | null
  match_schema_id: number | null
  match_codes: string[] | null
  match_wallet_address: string | null
  match_status: Status | null
  match_removed: boolean | null
}

/**
 * The transaction and its attributions in one prepared statement: one round trip and one wait for a pooled
 * connection (two statements waited twice, which under load doubled the route's latency), planned once per
 * connection (planned afresh, its 32 partitions cost 3–4 ms of planning for 0.3 ms of execution). Its key's
 * time is a value the plan takes at run time (a join would be planned as a filter on `hash` in every month),
 * and the attributions, which move with their transaction, are asked for the time of the row read: each table
 * is read in that one month. The registering wallet is a lookup per attribution: joined, the generic plan
 * hashed every code of the chain (0.2 ms at 1,000 codes, growing with the codes).
 */
const TRANSACTION_ATTRIBUTION = sql`
  select t.hash, t.block_number, t.block_hash, t.block_timestamp, t.block_timestamp_ms, t.transaction_index, t.from_address,
    t.to_address, t.input_size, t.has_suffix, t.schema_id, t.codes, t.registry_address, t.registry_chain_id,
    t.registry_verified, t.registry_unverified_reason, t.cbor, t.malformed_reason, t.user_operations, t.gas_used, t.status,
    t.removed, m.user_op_hash AS match_user_op_hash, m.builder_code AS match_builder_code, m.code_index AS match_code_index,
    m.sender AS match_sender, m.schema_id AS match_schema_id, m.codes AS match_codes, m.wallet_address AS match_wallet_address,
    m.status AS match_status, m.removed AS match_removed
  from transactions t
  left join lateral (
    select a.user_op_hash, a.builder_code, a.code_index, a.sender, a.schema_id, a.codes,
      (select w.wallet_address from builder_codes w where w.chain_id = a.chain_id and w.builder_code = a.builder_code) as wallet_address,
      a.status, a.removed
    from attributions a
    where a.chain_id = t.chain_id and a.tx_hash = t.hash and a.block_timestamp = t.block_timestamp
  ) m on true
  where t.chain_id = ${sql.placeholder('chainId')} and t.hash = ${sql.placeholder('hash')}
    and t.block_timestamp = (
      select k.block_timestamp from transaction_keys k where k.chain_id = ${sql.placeholder('chainId')} and k.hash = ${sql.placeholder('hash')})
  order by m.user_op_hash, m.code_index`

/** A stored transaction with its decoded suffix and the attributions made from it (the tx's own and its user operations'). */
export async function getTransactionAttribution(db: Database, chainId: number, hash: string) {
  const rows = await queryPrepared<TransactionRow & MatchColumns>(
    db,
    'transaction-attribution',
    () => TRANSACTION_ATTRIBUTION,
    { chainId, hash },
    ISO_TIMESTAMPS,
  )
  const row = rows[0]
  if (!row) return null
  const transaction = {
    hash: row.hash,
    blockNumber: Number(row.block_number),
    blockHash: row.block_hash,
    blockTimestamp: row.block_timestamp,
    blockTimestampMs: row.block_timestamp_ms === null ? null : Number(row.block_timestamp_ms),
    transactionIndex: row.transaction_index,
    fromAddress: row.from_address,
    toAddress: row.to_address,
    inputSize: row.input_size,
    hasSuffix: row.has_suffix,
    schemaId: row.schema_id,
    codes: row.codes,
    registryAddress: row.registry_address,
    registryChainId: row.registry_chain_id,
    registryVerified: row.registry_verified,
    registryUnverifiedReason: row.registry_unverified_reason,
    cbor: row.cbor,
    malformedReason: row.malformed_reason,
    userOperations: row.user_operations,
    gasUsed: row.gas_used === null ? null : Number(row.gas_used),
    status: row.status,
    removed: row.removed,
  }
  const matches = rows.flatMap((m) =>
    m.match_builder_code === null
      ? []
      : [
          {
            userOpHash: m.match_user_op_hash!,
            builderCode: m.match_builder_code,
            codeIndex: m.match_code_index!,
            sender: m.match_sender!,
            schemaId: m.match_schema_id!,
            codes: m.match_codes!,
            walletAddress: m.match_wallet_address,
            status: m.match_status!,
            removed: m.match_removed!,
          },
        ],
  )
  return { transaction, matches }
}
