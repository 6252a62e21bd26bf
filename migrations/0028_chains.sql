-- Several chains in one deployment: each chain's name from the config file, and a view of every chain's progress.
ALTER TABLE chain_state ADD COLUMN name text;
--> statement-breakpoint
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
--> statement-breakpoint
COMMENT ON VIEW analytics.chains IS 'One row per indexed chain: its name, the node''s head and finalized blocks and how far the index is behind.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.chain_id IS 'EIP-155 chain id.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.name IS 'The chain''s name in the config file (such as base or op); null for a chain configured through the environment.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.head_block IS 'The node''s head block as the head follower last saw it.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.finalized_block IS 'The node''s finalized block (or head minus the finality depth where the node has no finalized tag).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.indexed_block IS 'The newest block the head follower has stored.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.lag_blocks IS 'Blocks the index is behind the node''s head.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.block_time_ms IS 'The chain''s measured block time in milliseconds.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.preconfirmations IS 'Whether the chain pre-confirms through its pending tag (probed, or forced by the configuration).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.chains.updated_at IS 'When the row last changed.';
--> statement-breakpoint
GRANT SELECT ON analytics.chains TO analytics_reader;
