-- Wallet coverage: each registered wallet's nonces (refreshed by the scheduler) beside its attributed transactions.
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
--> statement-breakpoint
COMMENT ON VIEW analytics.wallet_coverage IS 'Per registered wallet: its nonces on the node against the transactions attributed to its own code.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.chain_id IS 'EIP-155 chain id.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.wallet_address IS 'The registered wallet (lowercase hex).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.builder_code IS 'The builder code registered for the wallet.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.latest_nonce IS 'eth_getTransactionCount(wallet, latest): transactions the wallet has sent; null until first checked.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.pending_nonce IS 'eth_getTransactionCount(wallet, pending): including pre-confirmed (Base) or pooled (geth) transactions.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.checked_at IS 'When the nonces were last read from the node.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.attributed_confirmed IS 'Confirmed or finalized, not removed transactions and user operations sent by the wallet with its code.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.attributed_with_pending IS 'The same, pending ones included.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.wallet_coverage.coverage IS 'attributed_confirmed / latest_nonce: the share of the wallet''s transactions that carry its code (user operations count toward the smart account, not its nonce).';
--> statement-breakpoint
GRANT SELECT ON analytics.wallet_coverage TO analytics_reader;
