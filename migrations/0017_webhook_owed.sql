-- The writing transaction of each outbox change: the publisher nets one transaction's changes of an
-- attribution into its final state (pending -> confirmed replaces the pending row, never a removal).
ALTER TABLE "attribution_changes" ADD COLUMN "xact_id" bigint DEFAULT (pg_current_xact_id()::text)::bigint NOT NULL;
--> statement-breakpoint
CREATE INDEX "attribution_changes_xact" ON "attribution_changes" USING btree ("xact_id");
--> statement-breakpoint
-- One drainer per subscription at a time: a lease, so a killed worker's drain is taken over when it lapses.
ALTER TABLE "webhook_subscriptions" ADD COLUMN "drain_until" timestamp with time zone;
--> statement-breakpoint
-- Secret rotation: the replaced secret still signs (beside the new one) until its overlap ends.
ALTER TABLE "webhook_subscriptions" ADD COLUMN "previous_secret" text;
--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "previous_secret_until" timestamp with time zone;
--> statement-breakpoint
-- Until when a reader of the stream may come back for events (a client connected lately): while no
-- enabled subscription wants an event type and no stream reader may, the outbox records nothing of it.
CREATE TABLE "outbox_demand" (
	"name" text PRIMARY KEY NOT NULL,
	"until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "webhook_events_created" ON "webhook_events" USING brin ("created_at");
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_created" ON "webhook_deliveries" USING brin ("created_at");
--> statement-breakpoint
-- The outbox's writer, gated: it records only the event types someone can want (a removal needs the
-- announcements it retracts, so wanting it wants every type). A backfill COPY nobody listens to costs one lookup.
CREATE OR REPLACE FUNCTION attribution_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed bigint;
  wanted text[];
BEGIN
  IF EXISTS (SELECT 1 FROM outbox_demand WHERE until > now()) THEN
    wanted := NULL;
  ELSE
    SELECT coalesce(array_agg(DISTINCT e), '{}') INTO wanted FROM webhook_subscriptions, unnest(events) e WHERE disabled_at IS NULL;
    IF 'attribution.removed' = ANY(wanted) THEN
      wanted := NULL;
    ELSIF cardinality(wanted) = 0 THEN
      RETURN NULL;
    END IF;
  END IF;
  -- role is stored '' for schema 0 and 1 codes (part of the key); events carry null there.
  IF TG_OP = 'INSERT' THEN
    INSERT INTO attribution_changes (type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number, block_timestamp, status, removed)
    SELECT c.type, n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULLIF(n.role, ''), n.sender, n.block_number, n.block_timestamp, n.status, n.removed
    FROM new_rows n CROSS JOIN LATERAL (SELECT CASE WHEN n.removed THEN 'attribution.removed' ELSE 'attribution.' || n.status END AS type) c
    WHERE wanted IS NULL OR c.type = ANY(wanted);
  ELSE
    INSERT INTO attribution_changes (type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number, block_timestamp, status, removed)
    SELECT c.type, n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULLIF(n.role, ''), n.sender, n.block_number, n.block_timestamp, n.status, n.removed
    FROM new_rows n JOIN old_rows o USING (chain_id, tx_hash, user_op_hash, builder_code, role)
      CROSS JOIN LATERAL (SELECT CASE WHEN n.removed THEN 'attribution.removed' ELSE 'attribution.' || n.status END AS type) c
    -- A row that stays removed has nothing to tell, whatever else moved.
    WHERE (o.status, o.removed) IS DISTINCT FROM (n.status, n.removed) AND NOT (o.removed AND n.removed)
      AND (wanted IS NULL OR c.type = ANY(wanted));
  END IF;
  GET DIAGNOSTICS changed = ROW_COUNT;
  -- Delivered on commit only, once per transaction: wakes the dispatcher.
  IF changed > 0 THEN
    PERFORM pg_notify('codetrail_attribution_changes', '');
  END IF;
  RETURN NULL;
END
$$;
