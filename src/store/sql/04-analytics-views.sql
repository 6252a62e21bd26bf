-- Stable views for SQL analytics: the only relations analytics_reader may read (05-analytics-reader.sql).

CREATE SCHEMA IF NOT EXISTS analytics;

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
  l.removed,
  l.block_timestamp_ms
FROM public.logs l;
COMMENT ON VIEW analytics.logs IS 'One row per event log indexed by codetrail, including pre-confirmed (pending) and reorged (removed) rows.';
COMMENT ON COLUMN analytics.logs.chain_id IS 'EIP-155 chain id of the chain the log belongs to.';
COMMENT ON COLUMN analytics.logs.block_number IS 'Number of the block holding the log (the pending block number while pending).';
COMMENT ON COLUMN analytics.logs.block_hash IS 'Hash of the block holding the log; 32 zero bytes while the log is pending.';
COMMENT ON COLUMN analytics.logs.block_timestamp IS 'Timestamp of the block holding the log.';
COMMENT ON COLUMN analytics.logs.transaction_hash IS 'Hash of the transaction that emitted the log (lowercase hex).';
COMMENT ON COLUMN analytics.logs.transaction_index IS 'Position of the transaction in its block.';
COMMENT ON COLUMN analytics.logs.log_index IS 'Position of the log in its block (cumulative within the pending block while pending).';
COMMENT ON COLUMN analytics.logs.address IS 'Contract that emitted the log (lowercase hex).';
COMMENT ON COLUMN analytics.logs.topics IS 'Indexed topics, 0 to 4 of them; topics[1] is the event signature unless the event is anonymous.';
COMMENT ON COLUMN analytics.logs.data IS 'Non-indexed event data as 0x hex.';
COMMENT ON COLUMN analytics.logs.status IS 'pending (pre-confirmed only), confirmed (in a canonical block) or finalized (at or below the finalized block).';
COMMENT ON COLUMN analytics.logs.removed IS 'True when the log''s block was orphaned by a reorg or a pending log was never confirmed.';
COMMENT ON COLUMN analytics.logs.block_timestamp_ms IS 'Block time in milliseconds since the Unix epoch as the node served it (blockTimestampMs or the header''s timestampMs); null where it served none.';

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
  a.removed,
  NULLIF(a.role, '') AS role,
  a.registry_address,
  a.registry_chain_id,
  (bc.builder_code IS NOT NULL OR rc.builder_code IS NOT NULL) AS registered,
  rc.owner AS code_owner,
  rc.payout_address,
  a.block_timestamp_ms
FROM public.attributions a
LEFT JOIN public.builder_codes bc ON bc.chain_id = a.chain_id AND bc.builder_code = a.builder_code
LEFT JOIN public.registry_codes rc ON rc.chain_id = a.chain_id AND rc.builder_code = a.builder_code;
COMMENT ON VIEW analytics.attributed_transactions IS 'One row per (transaction or ERC-4337 user operation, builder code, role) decoded from an ERC-8021 suffix.';
COMMENT ON COLUMN analytics.attributed_transactions.chain_id IS 'EIP-155 chain id.';
COMMENT ON COLUMN analytics.attributed_transactions.tx_hash IS 'Hash of the transaction carrying the suffix (the bundle transaction for a user operation).';
COMMENT ON COLUMN analytics.attributed_transactions.user_op_hash IS 'ERC-4337 user operation hash; null for a plain transaction.';
COMMENT ON COLUMN analytics.attributed_transactions.block_number IS 'Number of the block holding the transaction.';
COMMENT ON COLUMN analytics.attributed_transactions.block_timestamp IS 'Timestamp of the block holding the transaction.';
COMMENT ON COLUMN analytics.attributed_transactions.from_address IS 'Transaction sender (the bundler for a user operation).';
COMMENT ON COLUMN analytics.attributed_transactions.sender IS 'The user operation''s sender (smart account), else the transaction sender.';
COMMENT ON COLUMN analytics.attributed_transactions.to_address IS 'Transaction recipient; null for contract creation.';
COMMENT ON COLUMN analytics.attributed_transactions.builder_code IS 'One decoded builder code; a transaction with two codes has two rows.';
COMMENT ON COLUMN analytics.attributed_transactions.wallet_address IS 'Wallet that registered the builder code here; null when the code is not registered here.';
COMMENT ON COLUMN analytics.attributed_transactions.schema_id IS 'ERC-8021 schema id of the suffix (0, 1 or 2).';
COMMENT ON COLUMN analytics.attributed_transactions.codes IS 'Every code of the suffix, in suffix order.';
COMMENT ON COLUMN analytics.attributed_transactions.status IS 'pending, confirmed or finalized, in step with the transaction''s logs.';
COMMENT ON COLUMN analytics.attributed_transactions.removed IS 'True when the transaction was reorged out or a pending transaction was dropped.';
COMMENT ON COLUMN analytics.attributed_transactions.role IS 'Schema 2: app (a), wallet (w) or service (s); x402 uses them for seller, facilitator and client. Null for schemas 0 and 1.';
COMMENT ON COLUMN analytics.attributed_transactions.registry_address IS 'Registry the suffix names for this code (schema 1, or schema 2''s r for the role); null when none.';
COMMENT ON COLUMN analytics.attributed_transactions.registry_chain_id IS 'Chain id of that registry (up to 32 bytes, hence numeric).';
COMMENT ON COLUMN analytics.attributed_transactions.registered IS 'The code is known from any source: the BuilderCodes registry, the upstream API or issued here.';
COMMENT ON COLUMN analytics.attributed_transactions.code_owner IS 'Owner of the code''s token on the BuilderCodes registry; null when the registry does not know it.';
COMMENT ON COLUMN analytics.attributed_transactions.payout_address IS 'Payout address the BuilderCodes registry holds for the code.';
COMMENT ON COLUMN analytics.attributed_transactions.block_timestamp_ms IS 'Block time in milliseconds since the Unix epoch as the node served it; null where it served none.';

-- From the day buckets of the stats rollup (kept in the same transactions as the attributions, 02-stats-rollup.sql):
-- a range of days reads those days' buckets (index builder_code_buckets_day), whatever the history holds.
CREATE VIEW analytics.builder_code_daily AS
SELECT
  (b.start AT TIME ZONE 'UTC')::date AS day,
  b.chain_id,
  b.builder_code,
  b.confirmed_tx_count AS tx_count,
  b.confirmed_senders AS distinct_senders,
  b.confirmed_transactions AS distinct_transactions,
  b.confirmed_user_operations AS user_operations,
  CASE WHEN b.confirmed_gas_rows > 0 THEN b.confirmed_gas_used END AS gas_used
FROM public.builder_code_buckets b
WHERE b.bucket = 'day' AND b.confirmed_tx_count > 0;
COMMENT ON VIEW analytics.builder_code_daily IS 'Per UTC day and builder code: confirmed, not removed attributions.';
COMMENT ON COLUMN analytics.builder_code_daily.day IS 'UTC day of the block timestamp.';
COMMENT ON COLUMN analytics.builder_code_daily.chain_id IS 'EIP-155 chain id.';
COMMENT ON COLUMN analytics.builder_code_daily.builder_code IS 'The builder code.';
COMMENT ON COLUMN analytics.builder_code_daily.tx_count IS 'Attributed transactions and user operations.';
COMMENT ON COLUMN analytics.builder_code_daily.distinct_senders IS 'Distinct senders (user operation sender, else transaction sender).';
COMMENT ON COLUMN analytics.builder_code_daily.distinct_transactions IS 'Distinct transaction hashes (a bundle of several user operations counts once).';
COMMENT ON COLUMN analytics.builder_code_daily.user_operations IS 'How many of the attributions are ERC-4337 user operations.';
COMMENT ON COLUMN analytics.builder_code_daily.gas_used IS 'Gas used by the attributed transactions, where fetched.';

CREATE VIEW analytics.wallet_coverage AS
SELECT
  bc.chain_id,
  bc.wallet_address,
  bc.builder_code,
  wn.latest_nonce,
  wn.pending_nonce,
  wn.checked_at,
  COALESCE(c.confirmed, 0)::bigint AS attributed_confirmed,
  COALESCE(c.with_pending, 0)::bigint AS attributed_with_pending,
  CASE WHEN wn.latest_nonce > 0 THEN round(COALESCE(c.confirmed, 0)::numeric / wn.latest_nonce, 4) END AS coverage
FROM public.builder_codes bc
LEFT JOIN public.wallet_nonces wn ON wn.chain_id = bc.chain_id AND wn.wallet_address = bc.wallet_address
LEFT JOIN LATERAL (
  SELECT
    count(DISTINCT (a.tx_hash, a.user_op_hash)) FILTER (WHERE a.status <> 'pending') AS confirmed,
    count(DISTINCT (a.tx_hash, a.user_op_hash)) AS with_pending
  FROM public.attributions a
  WHERE a.chain_id = bc.chain_id AND a.sender = bc.wallet_address AND a.builder_code = bc.builder_code AND NOT a.removed
) c ON true;
COMMENT ON VIEW analytics.wallet_coverage IS 'Per registered wallet: its nonces on the node against the transactions attributed to its own code.';
COMMENT ON COLUMN analytics.wallet_coverage.chain_id IS 'EIP-155 chain id.';
COMMENT ON COLUMN analytics.wallet_coverage.wallet_address IS 'The registered wallet (lowercase hex).';
COMMENT ON COLUMN analytics.wallet_coverage.builder_code IS 'The builder code registered for the wallet.';
COMMENT ON COLUMN analytics.wallet_coverage.latest_nonce IS 'eth_getTransactionCount(wallet, latest): transactions the wallet has sent; null until first checked.';
COMMENT ON COLUMN analytics.wallet_coverage.pending_nonce IS 'eth_getTransactionCount(wallet, pending): including pre-confirmed (Base) or pooled (geth) transactions.';
COMMENT ON COLUMN analytics.wallet_coverage.checked_at IS 'When the nonces were last read from the node.';
COMMENT ON COLUMN analytics.wallet_coverage.attributed_confirmed IS 'Confirmed or finalized, not removed transactions and user operations sent by the wallet with its code.';
COMMENT ON COLUMN analytics.wallet_coverage.attributed_with_pending IS 'The same, pending ones included.';
COMMENT ON COLUMN analytics.wallet_coverage.coverage IS 'attributed_confirmed / latest_nonce: the share of the wallet''s transactions that carry its code (user operations count toward the smart account, not its nonce).';

CREATE VIEW analytics.builder_codes AS
SELECT
  coalesce(rc.chain_id, bc.chain_id) AS chain_id,
  coalesce(rc.builder_code, bc.builder_code) AS builder_code,
  CASE WHEN rc.builder_code IS NOT NULL THEN 'registry' WHEN bc.source = 'upstream' THEN 'api' ELSE 'local' END AS source,
  bc.wallet_address,
  rc.token_id,
  rc.owner,
  rc.payout_address,
  rc.registered_block,
  coalesce(rc.registered_at, bc.created_at) AS registered_at
FROM public.registry_codes rc
FULL JOIN public.builder_codes bc ON bc.chain_id = rc.chain_id AND bc.builder_code = rc.builder_code;
COMMENT ON VIEW analytics.builder_codes IS 'Every known builder code: registered on the BuilderCodes registry (its logs not removed), issued by the upstream API, or issued here.';
COMMENT ON COLUMN analytics.builder_codes.chain_id IS 'EIP-155 chain id.';
COMMENT ON COLUMN analytics.builder_codes.builder_code IS 'The builder code.';
COMMENT ON COLUMN analytics.builder_codes.source IS 'registry (on-chain, BUILDER_CODES_REGISTRY), api (issued by BUILDER_API_URL) or local (derived here); registry wins when both know the code.';
COMMENT ON COLUMN analytics.builder_codes.wallet_address IS 'Wallet the code was issued to through the registration API; null for a code known only on-chain.';
COMMENT ON COLUMN analytics.builder_codes.token_id IS 'The code''s ERC-721 token id on the registry; null when not registered there.';
COMMENT ON COLUMN analytics.builder_codes.owner IS 'Current owner of the code''s token (the last Transfer); null when not on the registry or burnt.';
COMMENT ON COLUMN analytics.builder_codes.payout_address IS 'Payout address the registry last set for the code (PayoutAddressUpdated).';
COMMENT ON COLUMN analytics.builder_codes.registered_block IS 'Block of the CodeRegistered event; null when not on the registry.';
COMMENT ON COLUMN analytics.builder_codes.registered_at IS 'Block time of the CodeRegistered event, else when the code was issued through the API.';

CREATE VIEW analytics.chains AS
SELECT
  cs.chain_id,
  cs.name,
  cs.head_block,
  cs.finalized_block,
  cs.live_block AS indexed_block,
  GREATEST(cs.head_block - cs.live_block, 0) AS lag_blocks,
  cs.block_time_ms,
  cs.preconfirmations,
  cs.updated_at
FROM public.chain_state cs;
COMMENT ON VIEW analytics.chains IS 'One row per indexed chain: its name, the node''s head and finalized blocks and how far the index is behind.';
COMMENT ON COLUMN analytics.chains.chain_id IS 'EIP-155 chain id.';
COMMENT ON COLUMN analytics.chains.name IS 'The chain''s name in the config file (such as base or op); null for a chain configured through the environment.';
COMMENT ON COLUMN analytics.chains.head_block IS 'The node''s head block as the head follower last saw it.';
COMMENT ON COLUMN analytics.chains.finalized_block IS 'The node''s finalized block (or head minus the finality depth where the node has no finalized tag).';
COMMENT ON COLUMN analytics.chains.indexed_block IS 'The newest block the head follower has stored.';
COMMENT ON COLUMN analytics.chains.lag_blocks IS 'Blocks the index is behind the node''s head.';
COMMENT ON COLUMN analytics.chains.block_time_ms IS 'The chain''s measured block time in milliseconds.';
COMMENT ON COLUMN analytics.chains.preconfirmations IS 'Whether the chain pre-confirms through its pending tag (probed, or forced by the configuration).';
COMMENT ON COLUMN analytics.chains.updated_at IS 'When the row last changed.';
