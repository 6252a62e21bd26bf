-- attributions partitioned by month of block_timestamp, with a DEFAULT partition for rows no month holds yet (the
-- scheduler's leader creates months ahead, src/store/partitions.ts). The primary key gains block_timestamp, as
-- PostgreSQL requires of a partitioned table's unique key; one row per (transaction, user operation, code, role)
-- still holds across months because every writer stores the transaction's row in `transactions` (keyed by hash
-- alone) first, in the same transaction, and moves rows stored at another time instead of inserting them again
-- (src/store/attributions.ts). The triggers and the views over the table are created again by src/store/sql.
DROP VIEW IF EXISTS analytics.builder_code_daily;--> statement-breakpoint
DROP VIEW IF EXISTS analytics.wallet_coverage;--> statement-breakpoint
DROP VIEW IF EXISTS analytics.attributed_transactions;--> statement-breakpoint
ALTER TABLE "attributions" RENAME TO "attributions_unpartitioned";--> statement-breakpoint
ALTER TABLE "attributions_unpartitioned" RENAME CONSTRAINT "attributions_pk" TO "attributions_unpartitioned_pk";--> statement-breakpoint
CREATE TABLE "attributions" (LIKE "attributions_unpartitioned" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE ("block_timestamp");--> statement-breakpoint
CREATE TABLE "attributions_default" PARTITION OF "attributions" DEFAULT;--> statement-breakpoint
-- A month for each month holding rows, and the current month and the two after it.
DO $$
DECLARE
  m timestamptz;
BEGIN
  FOR m IN
    SELECT DISTINCT date_trunc('month', block_timestamp, 'UTC') FROM attributions_unpartitioned
    UNION SELECT date_trunc('month', now(), 'UTC') + make_interval(months => i) FROM generate_series(0, 2) i
  LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF attributions FOR VALUES FROM (%L) TO (%L)',
      'attributions_' || to_char(m AT TIME ZONE 'UTC', '"p"YYYY"_"MM'), m, m + interval '1 month');
  END LOOP;
END
$$;--> statement-breakpoint
INSERT INTO "attributions" SELECT * FROM "attributions_unpartitioned";--> statement-breakpoint
DROP TABLE "attributions_unpartitioned";--> statement-breakpoint
ALTER TABLE "attributions" ADD CONSTRAINT "attributions_pk" PRIMARY KEY ("chain_id","tx_hash","user_op_hash","builder_code","role","block_timestamp");--> statement-breakpoint
CREATE INDEX "attributions_code_block" ON "attributions" USING btree ("chain_id","builder_code","block_number","tx_hash");--> statement-breakpoint
CREATE INDEX "attributions_block" ON "attributions" USING btree ("chain_id","block_number","tx_hash");--> statement-breakpoint
CREATE INDEX "attributions_timestamp" ON "attributions" USING btree ("chain_id","block_timestamp");--> statement-breakpoint
CREATE INDEX "attributions_code_time" ON "attributions" USING btree ("chain_id","builder_code","block_timestamp") INCLUDE ("sender","gas_used","status","removed");--> statement-breakpoint
CREATE INDEX "attributions_sender" ON "attributions" USING btree ("chain_id","sender","builder_code");--> statement-breakpoint
CREATE INDEX "attributions_unfinalized_block" ON "attributions" USING btree ("chain_id","block_number") WHERE status <> 'finalized';--> statement-breakpoint
CREATE INDEX "attributions_live_pending" ON "attributions" USING btree ("chain_id","block_number") WHERE status = 'pending' AND NOT removed;--> statement-breakpoint
CREATE INDEX "attributions_gas_missing" ON "attributions" USING btree ("chain_id","block_number","tx_hash") WHERE gas_used IS NULL AND status <> 'pending' AND NOT removed;
