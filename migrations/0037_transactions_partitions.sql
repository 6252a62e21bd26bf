-- transactions partitioned by month of block_timestamp, with a DEFAULT partition for rows no month holds yet (the
-- scheduler's leader creates months ahead, src/store/partitions.ts). The primary key gains block_timestamp, as
-- PostgreSQL requires of a partitioned table's unique key. One row per transaction holds across months through
-- transaction_keys, keyed by (chain_id, hash) alone: every writer of a transaction writes or locks its key there
-- first, in the same transaction, and moves a stored row instead of inserting it again (src/store/attributions.ts).
-- The key also holds the row's block_timestamp, which each move sets anew: a read by hash looks into one month.
ALTER TABLE "transactions" RENAME TO "transactions_unpartitioned";--> statement-breakpoint
ALTER TABLE "transactions_unpartitioned" RENAME CONSTRAINT "transactions_chain_id_hash_pk" TO "transactions_unpartitioned_pk";--> statement-breakpoint
CREATE TABLE "transactions" (LIKE "transactions_unpartitioned" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE ("block_timestamp");--> statement-breakpoint
CREATE TABLE "transactions_default" PARTITION OF "transactions" DEFAULT;--> statement-breakpoint
-- A month for each month holding rows, and the current month and the two after it.
DO $$
DECLARE
  m timestamptz;
BEGIN
  FOR m IN
    SELECT DISTINCT date_trunc('month', block_timestamp, 'UTC') FROM transactions_unpartitioned
    UNION SELECT date_trunc('month', now(), 'UTC') + make_interval(months => i) FROM generate_series(0, 2) i
  LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF transactions FOR VALUES FROM (%L) TO (%L)',
      'transactions_' || to_char(m AT TIME ZONE 'UTC', '"p"YYYY"_"MM'), m, m + interval '1 month');
  END LOOP;
END
$$;--> statement-breakpoint
CREATE TABLE "transaction_keys" (
	"chain_id" integer NOT NULL,
	"hash" text NOT NULL,
	"block_timestamp" timestamp with time zone NOT NULL,
	CONSTRAINT "transaction_keys_pk" PRIMARY KEY("chain_id","hash")
);--> statement-breakpoint
INSERT INTO "transaction_keys" SELECT "chain_id", "hash", "block_timestamp" FROM "transactions_unpartitioned";--> statement-breakpoint
INSERT INTO "transactions" SELECT * FROM "transactions_unpartitioned";--> statement-breakpoint
DROP TABLE "transactions_unpartitioned";--> statement-breakpoint
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_pk" PRIMARY KEY ("chain_id","hash","block_timestamp");--> statement-breakpoint
CREATE INDEX "transactions_block_number" ON "transactions" USING btree ("chain_id","block_number");--> statement-breakpoint
CREATE INDEX "transactions_live_pending" ON "transactions" USING btree ("chain_id","block_number") WHERE status = 'pending' AND NOT removed;--> statement-breakpoint
CREATE INDEX "transactions_registry_unknown" ON "transactions" USING btree ("chain_id","registry_chain_id","updated_at") WHERE "transactions"."registry_verified" IS NULL AND "transactions"."registry_address" IS NOT NULL AND "transactions"."codes" IS NOT NULL AND NOT "transactions"."removed";--> statement-breakpoint
CREATE INDEX "transactions_registry_verified" ON "transactions" USING btree ("registry_chain_id","registry_address") WHERE "transactions"."registry_verified" AND NOT "transactions"."removed";
