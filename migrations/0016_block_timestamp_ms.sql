-- Block time in milliseconds where the node serves it (timestampMs, blockTimestampMs): null where it serves none.
ALTER TABLE "blocks" ADD COLUMN "block_timestamp_ms" bigint;
--> statement-breakpoint
ALTER TABLE "logs" ADD COLUMN "block_timestamp_ms" bigint;
--> statement-breakpoint
ALTER TABLE "transactions" ADD COLUMN "block_timestamp_ms" bigint;
--> statement-breakpoint
ALTER TABLE "attributions" ADD COLUMN "block_timestamp_ms" bigint;
--> statement-breakpoint
ALTER TABLE "attribution_changes" ADD COLUMN "block_timestamp_ms" bigint;
--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "block_timestamp_ms" bigint;
--> statement-breakpoint
-- The outbox trigger writes the change rows; this fills each one's milliseconds from the attribution as
-- that statement left it, so the outbox trigger itself stays as it is.
CREATE FUNCTION attribution_change_timestamp_ms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.block_timestamp_ms IS NULL THEN
    SELECT a.block_timestamp_ms INTO NEW.block_timestamp_ms FROM attributions a
    WHERE a.chain_id = NEW.chain_id AND a.tx_hash = NEW.tx_hash AND a.user_op_hash = NEW.user_op_hash
      AND a.builder_code = NEW.builder_code AND a.role = coalesce(NEW.role, '') AND a.block_number = NEW.block_number;
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER attribution_changes_timestamp_ms BEFORE INSERT ON attribution_changes
  FOR EACH ROW EXECUTE FUNCTION attribution_change_timestamp_ms();
--> statement-breakpoint
CREATE OR REPLACE VIEW analytics.logs AS
SELECT
  l.chain_id,
  l.block_number,
  l.block_hash,
  l.block_timestamp,
  l.transaction_hash,
  l.transaction_index,
  l.log_index,
  l.address,
  array_remove(ARRAY[l.topic0, l.topic1, l.topic2, l.topic3], NULL)::text[] AS topics,
  l.data,
  l.status,
  l.removed,
  l.block_timestamp_ms
FROM public.logs l;
--> statement-breakpoint
COMMENT ON COLUMN analytics.logs.block_timestamp_ms IS 'Block time in milliseconds since the Unix epoch as the node served it (blockTimestampMs or the header''s timestampMs); null where it served none.';
--> statement-breakpoint
CREATE OR REPLACE VIEW analytics.attributed_transactions AS
SELECT
  a.chain_id,
  a.tx_hash,
  NULLIF(a.user_op_hash, '') AS user_op_hash,
  a.block_number,
  a.block_timestamp,
  a.from_address,
  a.sender,
  a.to_address,
  a.builder_code,
  bc.wallet_address,
  a.schema_id,
  a.codes,
  a.status,
  a.removed,
  NULLIF(a.role, '') AS role,
  a.registry_address,
  a.registry_chain_id,
  (bc.builder_code IS NOT NULL OR rc.builder_code IS NOT NULL) AS registered,
  rc.owner AS code_owner,
  rc.payout_address,
  a.block_timestamp_ms
FROM public.attributions a
LEFT JOIN public.builder_codes bc ON bc.chain_id = a.chain_id AND bc.builder_code = a.builder_code
LEFT JOIN public.registry_codes rc ON rc.chain_id = a.chain_id AND rc.builder_code = a.builder_code;
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.block_timestamp_ms IS 'Block time in milliseconds since the Unix epoch as the node served it; null where it served none.';
