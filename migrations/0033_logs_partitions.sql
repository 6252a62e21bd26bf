-- logs partitioned by month of block_timestamp, with a DEFAULT partition for rows no month holds yet (the
-- scheduler's leader creates months ahead, src/store/partitions.ts). Every unique key gains block_timestamp:
-- a block hash fixes its time, so the canonical key keeps one row per log. The pending key is no longer
-- unique: pending writes hold the chain's tip-writes lock, which keeps one row per (transaction, ordinal).
DROP VIEW IF EXISTS analytics.logs;--> statement-breakpoint
ALTER TABLE "logs" RENAME TO "logs_unpartitioned";--> statement-breakpoint
CREATE TABLE "logs" (LIKE "logs_unpartitioned" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE ("block_timestamp");--> statement-breakpoint
CREATE TABLE "logs_default" PARTITION OF "logs" DEFAULT;--> statement-breakpoint
-- A month for each month holding rows, and the current month and the two after it.
DO $$
DECLARE
  m timestamptz;
BEGIN
  FOR m IN
    SELECT DISTINCT date_trunc('month', block_timestamp, 'UTC') FROM logs_unpartitioned
    UNION SELECT date_trunc('month', now(), 'UTC') + make_interval(months => i) FROM generate_series(0, 2) i
  LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF logs FOR VALUES FROM (%L) TO (%L)', 'logs_' || to_char(m AT TIME ZONE 'UTC', '"p"YYYY"_"MM'),
      m, m + interval '1 month');
  END LOOP;
END
$$;--> statement-breakpoint
INSERT INTO "logs" SELECT * FROM "logs_unpartitioned";--> statement-breakpoint
DROP TABLE "logs_unpartitioned";--> statement-breakpoint
CREATE UNIQUE INDEX "logs_canonical_key" ON "logs" USING btree ("chain_id","block_number","block_hash","log_index","block_timestamp") WHERE status <> 'pending';--> statement-breakpoint
CREATE INDEX "logs_pending_key" ON "logs" USING btree ("chain_id","transaction_hash","tx_log_ordinal") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "logs_address_block" ON "logs" USING btree ("chain_id","address","block_number");--> statement-breakpoint
CREATE INDEX "logs_topic0_block" ON "logs" USING btree ("chain_id","topic0","block_number");--> statement-breakpoint
CREATE INDEX "logs_live_pending" ON "logs" USING btree ("chain_id","block_number") WHERE status = 'pending' AND NOT removed;--> statement-breakpoint
CREATE INDEX "logs_dropped_pending" ON "logs" USING btree ("chain_id","block_number") WHERE status = 'pending' AND removed;--> statement-breakpoint
CREATE INDEX "logs_registry_token" ON "logs" USING btree ("chain_id","topic1") WHERE "logs"."topic0" IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43');--> statement-breakpoint
CREATE INDEX "logs_registry_transfer" ON "logs" USING btree ("chain_id","topic3") WHERE "logs"."topic0" = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' AND "logs"."topic3" IS NOT NULL;
