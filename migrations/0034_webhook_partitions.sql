-- webhook_events and webhook_deliveries partitioned by month of created_at (when the event was published, when the
-- attempt was made; neither row ever changes), each with a DEFAULT partition for rows no month holds yet (the
-- dispatcher creates months ahead, src/store/partitions.ts), so retention drops whole months. Each primary key gains
-- created_at, as PostgreSQL requires; ids still come from one identity sequence per table, which continues from the
-- old one's value, so no id is ever given twice (receivers and stream readers resume by event id).
ALTER TABLE "webhook_events" RENAME TO "webhook_events_unpartitioned";--> statement-breakpoint
ALTER SEQUENCE "webhook_events_id_seq" RENAME TO "webhook_events_unpartitioned_id_seq";--> statement-breakpoint
CREATE TABLE "webhook_events" (LIKE "webhook_events_unpartitioned" INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)
  PARTITION BY RANGE ("created_at");--> statement-breakpoint
SELECT setval(pg_get_serial_sequence('webhook_events', 'id'), last_value, is_called) FROM "webhook_events_unpartitioned_id_seq";--> statement-breakpoint
CREATE TABLE "webhook_events_default" PARTITION OF "webhook_events" DEFAULT;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" RENAME TO "webhook_deliveries_unpartitioned";--> statement-breakpoint
ALTER SEQUENCE "webhook_deliveries_id_seq" RENAME TO "webhook_deliveries_unpartitioned_id_seq";--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (LIKE "webhook_deliveries_unpartitioned" INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)
  PARTITION BY RANGE ("created_at");--> statement-breakpoint
SELECT setval(pg_get_serial_sequence('webhook_deliveries', 'id'), last_value, is_called) FROM "webhook_deliveries_unpartitioned_id_seq";--> statement-breakpoint
CREATE TABLE "webhook_deliveries_default" PARTITION OF "webhook_deliveries" DEFAULT;--> statement-breakpoint
-- For each table, a month for each month holding rows, and the current month and the two after it.
DO $$
DECLARE
  t text;
  m timestamptz;
BEGIN
  FOREACH t IN ARRAY ARRAY['webhook_events', 'webhook_deliveries'] LOOP
    FOR m IN EXECUTE format(
      'SELECT DISTINCT date_trunc(''month'', created_at, ''UTC'') FROM %I
       UNION SELECT date_trunc(''month'', now(), ''UTC'') + make_interval(months => i) FROM generate_series(0, 2) i', t || '_unpartitioned')
    LOOP
      EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
        t || '_' || to_char(m AT TIME ZONE 'UTC', '"p"YYYY"_"MM'), t, m, m + interval '1 month');
    END LOOP;
  END LOOP;
END
$$;--> statement-breakpoint
INSERT INTO "webhook_events" OVERRIDING SYSTEM VALUE SELECT * FROM "webhook_events_unpartitioned";--> statement-breakpoint
DROP TABLE "webhook_events_unpartitioned";--> statement-breakpoint
INSERT INTO "webhook_deliveries" OVERRIDING SYSTEM VALUE SELECT * FROM "webhook_deliveries_unpartitioned";--> statement-breakpoint
DROP TABLE "webhook_deliveries_unpartitioned";--> statement-breakpoint
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_pkey" PRIMARY KEY ("id", "created_at");--> statement-breakpoint
CREATE INDEX "webhook_events_attribution" ON "webhook_events" USING btree ("chain_id","tx_hash","user_op_hash","builder_code");--> statement-breakpoint
CREATE INDEX "webhook_events_created" ON "webhook_events" USING brin ("created_at");--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id", "created_at");--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_id_webhook_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."webhook_subscriptions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_subscription" ON "webhook_deliveries" USING btree ("subscription_id","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_created" ON "webhook_deliveries" USING brin ("created_at");
