-- The outbox writes one row per statement: the statement's changes as one compressed array, built from its
-- transition table with no per-row insert, index entry or lookup (a 100,000-row COPY's changes in one row).
CREATE TYPE "attribution_change" AS (
	"type" text,
	"chain_id" integer,
	"tx_hash" text,
	"user_op_hash" text,
	"builder_code" text,
	"role" text,
	"sender" text,
	"block_number" bigint,
	"block_timestamp" timestamp with time zone,
	"block_timestamp_ms" bigint,
	"status" text,
	"removed" boolean
);
--> statement-breakpoint
CREATE TABLE "attribution_change_sets" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "attribution_change_sets_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"xact_id" bigint DEFAULT (pg_current_xact_id()::text)::bigint NOT NULL,
	"size" integer NOT NULL,
	"changes" attribution_change[] COMPRESSION lz4 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "attribution_change_sets_xact" ON "attribution_change_sets" USING btree ("xact_id");
--> statement-breakpoint
INSERT INTO attribution_change_sets (xact_id, size, changes, created_at)
SELECT xact_id, count(*), array_agg(ROW(type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number, block_timestamp,
  block_timestamp_ms, status, removed)::attribution_change ORDER BY id), min(created_at)
FROM attribution_changes GROUP BY xact_id ORDER BY min(id);
--> statement-breakpoint
DROP TRIGGER IF EXISTS "attribution_changes_timestamp_ms" ON "attribution_changes";
--> statement-breakpoint
DROP FUNCTION IF EXISTS attribution_change_timestamp_ms();
--> statement-breakpoint
DROP TABLE "attribution_changes";
--> statement-breakpoint
-- The unpublished changes one per row, in the order they were written (for reading; the publisher reads the sets).
CREATE VIEW "attribution_changes" AS
SELECT row_number() OVER (ORDER BY s.id, u.position) AS id, s.xact_id, s.created_at, u.type, u.chain_id, u.tx_hash, u.user_op_hash, u.builder_code,
  u.role, u.sender, u.block_number, u.block_timestamp, u.block_timestamp_ms, u.status, u.removed
FROM attribution_change_sets s
  CROSS JOIN LATERAL unnest(s.changes) WITH ORDINALITY AS u(type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number,
    block_timestamp, block_timestamp_ms, status, removed, position);
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
    INSERT INTO attribution_change_sets (size, changes)
    SELECT count(*), array_agg(ROW(c.type, n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULLIF(n.role, ''), n.sender, n.block_number,
      n.block_timestamp, n.block_timestamp_ms, n.status, n.removed)::attribution_change)
    FROM new_rows n CROSS JOIN LATERAL (SELECT CASE WHEN n.removed THEN 'attribution.removed' ELSE 'attribution.' || n.status END AS type) c
    WHERE wanted IS NULL OR c.type = ANY(wanted)
    HAVING count(*) > 0;
  ELSE
    INSERT INTO attribution_change_sets (size, changes)
    SELECT count(*), array_agg(ROW(c.type, n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULLIF(n.role, ''), n.sender, n.block_number,
      n.block_timestamp, n.block_timestamp_ms, n.status, n.removed)::attribution_change)
    FROM new_rows n JOIN old_rows o USING (chain_id, tx_hash, user_op_hash, builder_code, role)
      CROSS JOIN LATERAL (SELECT CASE WHEN n.removed THEN 'attribution.removed' ELSE 'attribution.' || n.status END AS type) c
    -- A row that stays removed has nothing to tell, whatever else moved.
    WHERE (o.status, o.removed) IS DISTINCT FROM (n.status, n.removed) AND NOT (o.removed AND n.removed)
      AND (wanted IS NULL OR c.type = ANY(wanted))
    HAVING count(*) > 0;
  END IF;
  GET DIAGNOSTICS changed = ROW_COUNT;
  -- Delivered on commit only, once per transaction: wakes the dispatcher.
  IF changed > 0 THEN
    PERFORM pg_notify('codetrail_attribution_changes', '');
  END IF;
  RETURN NULL;
END
$$;
