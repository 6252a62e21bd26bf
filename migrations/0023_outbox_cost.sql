-- The outbox writes each change's milliseconds and transaction from the statement's transition table
-- in its one INSERT … SELECT: no per-row trigger looking the attribution up again (it doubled the cost of a COPY).
DROP TRIGGER IF EXISTS "attribution_changes_timestamp_ms" ON "attribution_changes";
--> statement-breakpoint
DROP FUNCTION IF EXISTS attribution_change_timestamp_ms();
--> statement-breakpoint
-- The outbox's writer, gated: it records only the event types someone can want (a removal needs the
-- announcements it retracts, so wanting it wants every type). A backfill COPY nobody listens to costs one lookup.
CREATE OR REPLACE FUNCTION attribution_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed bigint;
  wanted text[];
  xact bigint := (pg_current_xact_id()::text)::bigint;
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
    INSERT INTO attribution_changes (type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number, block_timestamp,
      block_timestamp_ms, status, removed, xact_id)
    SELECT c.type, n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULLIF(n.role, ''), n.sender, n.block_number, n.block_timestamp,
      n.block_timestamp_ms, n.status, n.removed, xact
    FROM new_rows n CROSS JOIN LATERAL (SELECT CASE WHEN n.removed THEN 'attribution.removed' ELSE 'attribution.' || n.status END AS type) c
    WHERE wanted IS NULL OR c.type = ANY(wanted);
  ELSE
    INSERT INTO attribution_changes (type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number, block_timestamp,
      block_timestamp_ms, status, removed, xact_id)
    SELECT c.type, n.chain_id, n.tx_hash, n.user_op_hash, n.builder_code, NULLIF(n.role, ''), n.sender, n.block_number, n.block_timestamp,
      n.block_timestamp_ms, n.status, n.removed, xact
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
