-- Indexes for the HTTP API's read paths (src/api/queries), checked with EXPLAIN on 10 million attributions.
-- Stats per code and time bucket read the index alone (no heap visit per row) for a code's time range.
CREATE INDEX IF NOT EXISTS "attributions_code_time" ON "attributions" USING btree ("chain_id","builder_code","block_timestamp") INCLUDE ("sender","gas_used","status","removed");
--> statement-breakpoint
-- A wallet's own attributed transactions (coverage of GET /v1/agents/builder-codes/{walletAddress}).
CREATE INDEX IF NOT EXISTS "attributions_sender" ON "attributions" USING btree ("chain_id","sender","builder_code");
--> statement-breakpoint
-- status=pending / confirmed lists, newest first: only the unfinalized tip of the table is indexed.
CREATE INDEX IF NOT EXISTS "attributions_unfinalized_block" ON "attributions" USING btree ("chain_id","block_number") WHERE status <> 'finalized';
--> statement-breakpoint
-- GET /v1/logs?topic0= without an address.
CREATE INDEX IF NOT EXISTS "logs_topic0_block" ON "logs" USING btree ("chain_id","topic0","block_number");
