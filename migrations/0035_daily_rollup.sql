-- analytics.builder_code_daily answers from the day buckets of builder_code_buckets instead of grouping every
-- attribution: each bucket gains the figures of its confirmed (not pending, not removed) attributions, which the
-- triggers keep from now on (src/store/sql/02-stats-rollup.sql), and each sender of a bucket its pending ones, so
-- the bucket knows its senders with a confirmed attribution. Both are filled here once from the rows stored.
ALTER TABLE "builder_code_bucket_senders" ADD COLUMN "pending" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "builder_code_buckets" ADD COLUMN "confirmed_tx_count" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "confirmed_senders" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "confirmed_transactions" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "confirmed_user_operations" bigint DEFAULT 0 NOT NULL,
  ADD COLUMN "confirmed_gas_used" numeric DEFAULT 0 NOT NULL,
  ADD COLUMN "confirmed_gas_rows" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Pending rows are few (the live ones at the tip): only their senders' rows change.
UPDATE "builder_code_bucket_senders" s SET "pending" = p.n
FROM (
  SELECT a.chain_id, a.builder_code, b.bucket, date_trunc(b.bucket, a.block_timestamp, 'UTC') AS start, a.sender, count(*)::int AS n
  FROM attributions a CROSS JOIN (VALUES ('hour'), ('day')) AS b(bucket)
  WHERE a.status = 'pending' AND NOT a.removed
  GROUP BY 1, 2, 3, 4, 5
) p
WHERE (s.chain_id, s.builder_code, s.bucket, s.start, s.sender) = (p.chain_id, p.builder_code, p.bucket, p.start, p.sender);--> statement-breakpoint
UPDATE "builder_code_buckets" k SET "confirmed_tx_count" = c.tx_count, "confirmed_senders" = c.senders,
  "confirmed_transactions" = c.transactions, "confirmed_user_operations" = c.user_operations,
  "confirmed_gas_used" = c.gas_used, "confirmed_gas_rows" = c.gas_rows
FROM (
  SELECT a.chain_id, a.builder_code, b.bucket, date_trunc(b.bucket, a.block_timestamp, 'UTC') AS start,
    count(DISTINCT (a.tx_hash, a.user_op_hash)) AS tx_count, count(DISTINCT a.sender) AS senders, count(DISTINCT a.tx_hash) AS transactions,
    count(*) FILTER (WHERE a.user_op_hash <> '') AS user_operations, coalesce(sum(a.gas_used), 0) AS gas_used, count(a.gas_used) AS gas_rows
  FROM attributions a CROSS JOIN (VALUES ('hour'), ('day')) AS b(bucket)
  WHERE a.status <> 'pending' AND NOT a.removed
  GROUP BY 1, 2, 3, 4
) c
WHERE (k.chain_id, k.builder_code, k.bucket, k.start) = (c.chain_id, c.builder_code, c.bucket, c.start);--> statement-breakpoint
-- The view's day, so that a range of days reads the days asked for and not every bucket.
CREATE INDEX "builder_code_buckets_day" ON "builder_code_buckets" USING btree (((start AT TIME ZONE 'UTC')::date), "chain_id", "builder_code") WHERE bucket = 'day';
