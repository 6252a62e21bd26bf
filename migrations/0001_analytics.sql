-- Stable views for SQL analytics (SPEC §8) and the read-only role that may select them and nothing else.
CREATE SCHEMA IF NOT EXISTS analytics;
--> statement-breakpoint
CREATE VIEW analytics.logs AS
SELECT
  l.chain_id,
  l.block_number,
  l.block_hash,
  l.block_timestamp,
  l.transaction_hash,
  l.transaction_index,
  l.log_index,
  l.address,
  array_remove(ARRAY[l.topic0, l.topic1, l.topic2, l.topic3], NULL)::text[] AS topics,
  l.data,
  l.status,
  l.removed
FROM public.logs l;
--> statement-breakpoint
COMMENT ON VIEW analytics.logs IS 'One row per event log indexed by codetrail, including pre-confirmed (pending) and reorged (removed) rows.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.chain_id IS 'EIP-155 chain id of the chain the log belongs to.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.block_number IS 'Number of the block holding the log (the pending block number while pending).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.block_hash IS 'Hash of the block holding the log; 32 zero bytes while the log is pending.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.block_timestamp IS 'Timestamp of the block holding the log.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.transaction_hash IS 'Hash of the transaction that emitted the log (lowercase hex).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.transaction_index IS 'Position of the transaction in its block.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.log_index IS 'Position of the log in its block (cumulative within the pending block while pending).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.address IS 'Contract that emitted the log (lowercase hex).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.topics IS 'Indexed topics, 0 to 4 of them; topics[1] is the event signature unless the event is anonymous.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.data IS 'Non-indexed event data as 0x hex.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.status IS 'pending (pre-confirmed only), confirmed (in a canonical block) or finalized (at or below the finalized block).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.removed IS 'True when the log''s block was orphaned by a reorg or a pending log was never confirmed.';
--> statement-breakpoint
CREATE VIEW analytics.attributed_transactions AS
SELECT
  a.chain_id,
  a.tx_hash,
  NULLIF(a.user_op_hash, '') AS user_op_hash,
  a.block_number,
  a.block_timestamp,
  a.from_address,
  a.sender,
  a.to_address,
  a.builder_code,
  bc.wallet_address,
  a.schema_id,
  a.codes,
  a.status,
  a.removed
FROM public.attributions a
LEFT JOIN public.builder_codes bc ON bc.chain_id = a.chain_id AND bc.builder_code = a.builder_code;
--> statement-breakpoint
COMMENT ON VIEW analytics.attributed_transactions IS 'One row per (transaction or ERC-4337 user operation, builder code) decoded from an ERC-8021 suffix.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.chain_id IS 'EIP-155 chain id.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.tx_hash IS 'Hash of the transaction carrying the suffix (the bundle transaction for a user operation).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.user_op_hash IS 'ERC-4337 user operation hash; null for a plain transaction.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.block_number IS 'Number of the block holding the transaction.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.block_timestamp IS 'Timestamp of the block holding the transaction.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.from_address IS 'Transaction sender (the bundler for a user operation).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.sender IS 'The user operation''s sender (smart account), else the transaction sender.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.to_address IS 'Transaction recipient; null for contract creation.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.builder_code IS 'One decoded builder code; a transaction with two codes has two rows.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.wallet_address IS 'Wallet that registered the builder code here; null when the code is not registered here.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.schema_id IS 'ERC-8021 schema id of the suffix (0, 1 or 2).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.codes IS 'Every code of the suffix, in suffix order.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.status IS 'pending, confirmed or finalized, in step with the transaction''s logs.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.removed IS 'True when the transaction was reorged out or a pending transaction was dropped.';
--> statement-breakpoint
CREATE VIEW analytics.builder_code_daily AS
SELECT
  date_trunc('day', a.block_timestamp AT TIME ZONE 'UTC')::date AS day,
  a.chain_id,
  a.builder_code,
  count(DISTINCT (a.tx_hash, a.user_op_hash))::bigint AS tx_count,
  count(DISTINCT a.sender)::bigint AS distinct_senders,
  count(DISTINCT a.tx_hash)::bigint AS distinct_transactions,
  count(*) FILTER (WHERE a.user_op_hash <> '')::bigint AS user_operations,
  sum(a.gas_used)::numeric AS gas_used
FROM public.attributions a
WHERE a.status IN ('confirmed', 'finalized') AND NOT a.removed
GROUP BY 1, 2, 3;
--> statement-breakpoint
COMMENT ON VIEW analytics.builder_code_daily IS 'Per UTC day and builder code: confirmed, not removed attributions.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.day IS 'UTC day of the block timestamp.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.chain_id IS 'EIP-155 chain id.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.builder_code IS 'The builder code.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.tx_count IS 'Attributed transactions and user operations.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.distinct_senders IS 'Distinct senders (user operation sender, else transaction sender).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.distinct_transactions IS 'Distinct transaction hashes (a bundle of several user operations counts once).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.user_operations IS 'How many of the attributions are ERC-4337 user operations.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_code_daily.gas_used IS 'Gas used by the attributed transactions, where fetched.';
--> statement-breakpoint
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'analytics_reader') THEN
    CREATE ROLE analytics_reader NOLOGIN;
  END IF;
END
$$;
--> statement-breakpoint
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM analytics_reader;
--> statement-breakpoint
GRANT USAGE ON SCHEMA analytics TO analytics_reader;
--> statement-breakpoint
GRANT SELECT ON ALL TABLES IN SCHEMA analytics TO analytics_reader;
--> statement-breakpoint
ALTER DEFAULT PRIVILEGES IN SCHEMA analytics GRANT SELECT ON TABLES TO analytics_reader;
