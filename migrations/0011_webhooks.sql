CREATE TABLE "attribution_changes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "attribution_changes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"type" text NOT NULL,
	"chain_id" integer NOT NULL,
	"tx_hash" text NOT NULL,
	"user_op_hash" text NOT NULL,
	"builder_code" text NOT NULL,
	"role" text,
	"sender" text NOT NULL,
	"block_number" bigint NOT NULL,
	"block_timestamp" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"removed" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_cursor" (
	"name" text PRIMARY KEY NOT NULL,
	"event_id" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_deliveries_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"subscription_id" text NOT NULL,
	"event_id" bigint NOT NULL,
	"ok" boolean NOT NULL,
	"http_status" integer,
	"error" text,
	"duration_ms" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "webhook_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"type" text NOT NULL,
	"chain_id" integer NOT NULL,
	"tx_hash" text NOT NULL,
	"user_op_hash" text NOT NULL,
	"builder_code" text NOT NULL,
	"role" text,
	"sender" text NOT NULL,
	"block_number" bigint NOT NULL,
	"block_timestamp" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"removed" boolean NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"wallet_address" text
);
--> statement-breakpoint
CREATE TABLE "webhook_outstanding" (
	"subscription_id" text NOT NULL,
	"event_id" bigint NOT NULL,
	"tx_hash" text NOT NULL,
	CONSTRAINT "webhook_outstanding_subscription_id_event_id_pk" PRIMARY KEY("subscription_id","event_id")
);
--> statement-breakpoint
CREATE TABLE "webhook_subscriptions" (
	"id" text PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"secret" text NOT NULL,
	"events" text[] NOT NULL,
	"builder_codes" text[],
	"wallet_addresses" text[],
	"roles" text[],
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"retry_at" timestamp with time zone,
	"disabled_at" timestamp with time zone,
	"disabled_reason" text
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_id_webhook_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."webhook_subscriptions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_outstanding" ADD CONSTRAINT "webhook_outstanding_subscription_id_webhook_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."webhook_subscriptions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_subscription" ON "webhook_deliveries" USING btree ("subscription_id","id");--> statement-breakpoint
CREATE INDEX "webhook_events_attribution" ON "webhook_events" USING btree ("chain_id","tx_hash","user_op_hash","builder_code");--> statement-breakpoint
CREATE INDEX "webhook_outstanding_tx" ON "webhook_outstanding" USING btree ("subscription_id","tx_hash","event_id");--> statement-breakpoint
-- The outbox's writer: one statement-level trigger per write kind on attributions turns the statement's
-- transition tables into one change row per attribution whose state (status, removed) it changed, so
-- COPYs, tip upserts, reorg marks, pending drops and finality moves all record their events in their
-- own transaction, and a rollback takes them back. Statement-level: a backfill COPY costs one INSERT … SELECT.
CREATE FUNCTION attribution_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed bigint;
BEGIN
  -- role: null until attributions carry a role column; then read n.role here (the one place).
  IF TG_OP = 'INSERT' THEN
    INSERT INTO attribution_changes (type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number, block_timestamp, status, removed)
    SELECT CASE WHEN n.removed THEN 'attribution.removed' ELSE 'attribution.' || n.status END,
      n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULL, n.sender, n.block_number, n.block_timestamp, n.status, n.removed
    FROM new_rows n;
  ELSE
    INSERT INTO attribution_changes (type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number, block_timestamp, status, removed)
    SELECT CASE WHEN n.removed THEN 'attribution.removed' ELSE 'attribution.' || n.status END,
      n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULL, n.sender, n.block_number, n.block_timestamp, n.status, n.removed
    FROM new_rows n JOIN old_rows o USING (chain_id, tx_hash, user_op_hash, builder_code)
    -- A row that stays removed has nothing to tell, whatever else moved.
    WHERE (o.status, o.removed) IS DISTINCT FROM (n.status, n.removed) AND NOT (o.removed AND n.removed);
  END IF;
  GET DIAGNOSTICS changed = ROW_COUNT;
  -- Delivered on commit only, once per transaction: wakes the dispatcher.
  IF changed > 0 THEN
    PERFORM pg_notify('codetrail_attribution_changes', '');
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER attributions_outbox_insert AFTER INSERT ON attributions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION attribution_outbox();
--> statement-breakpoint
CREATE TRIGGER attributions_outbox_update AFTER UPDATE ON attributions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION attribution_outbox();
--> statement-breakpoint
INSERT INTO webhook_cursor (name, event_id) VALUES ('dispatch', 0);
