-- The webhook outbox: what each statement on attributions changed, recorded in its own transaction so a
-- rollback takes it back, and read by the publisher.

-- The unpublished changes one per row, in the order they were written (for reading; the publisher reads the sets).
CREATE VIEW public.attribution_changes AS
SELECT row_number() OVER (ORDER BY s.id, u.position) AS id, s.xact_id, s.created_at, u.type, u.chain_id, u.tx_hash, u.user_op_hash, u.builder_code,
  u.role, u.sender, u.block_number, u.block_timestamp, u.block_timestamp_ms, u.status, u.removed
FROM attribution_change_sets s
  CROSS JOIN LATERAL unnest(s.changes) WITH ORDINALITY AS u(type, chain_id, tx_hash, user_op_hash, builder_code, role, sender, block_number,
    block_timestamp, block_timestamp_ms, status, removed, position);

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

DROP TRIGGER IF EXISTS attributions_outbox_insert ON attributions;
CREATE TRIGGER attributions_outbox_insert AFTER INSERT ON attributions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION attribution_outbox();

DROP TRIGGER IF EXISTS attributions_outbox_update ON attributions;
CREATE TRIGGER attributions_outbox_update AFTER UPDATE ON attributions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION attribution_outbox();
