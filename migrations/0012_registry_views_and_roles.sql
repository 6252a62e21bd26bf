-- Roles and the on-chain BuilderCodes registry in the analytics views; the stats' split by role.
-- A uint256 (0x hex, any length) as numeric, 32 bits at a time: token ids need all 256 bits.
CREATE FUNCTION public.hex_to_numeric(hex text) RETURNS numeric LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT trunc(coalesce(sum(('x' || substr(d, 8 * i + 1, 8))::bit(32)::bigint::numeric * (4294967296::numeric ^ (length(d) / 8 - 1 - i))), 0))
  FROM (SELECT lpad(t, (length(t) + 7) / 8 * 8, '0') AS d FROM (SELECT ltrim(lower(substr(hex, 3)), '0') AS t) s) p,
    generate_series(0, length(d) / 8 - 1) AS i
$$;
--> statement-breakpoint
-- Each code of the configured registries as their logs that are not removed say, so a reorg or a
-- dropped pending log takes it back with no further write. Codes are read from the event's ABI-encoded
-- string only when they are valid codes (^[a-z0-9_]{1,32}$), so no log can make the view fail.
CREATE VIEW public.registry_codes AS
WITH events AS (
  SELECT l.chain_id, l.block_number, l.block_timestamp, l.log_index, l.topic0, l.topic1, l.topic2, l.topic3, lower(l.data) AS data
  FROM public.logs l
  JOIN public.builder_code_registries r ON r.chain_id = l.chain_id AND r.address = l.address
  WHERE NOT l.removed
),
registered AS (
  SELECT DISTINCT ON (chain_id, topic1) chain_id, topic1 AS token_topic, block_number, block_timestamp,
    CASE WHEN substr(data, 67, 62) = repeat('0', 62) THEN substr(data, 131, 2 * ('x' || substr(data, 129, 2))::bit(8)::int) END AS code_hex,
    CASE WHEN substr(data, 67, 62) = repeat('0', 62) THEN ('x' || substr(data, 129, 2))::bit(8)::int END AS code_length
  FROM events
  WHERE topic0 = '0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410' AND topic1 IS NOT NULL AND length(data) >= 130
  ORDER BY chain_id, topic1, block_number, log_index
),
owners AS (
  SELECT DISTINCT ON (chain_id, topic3) chain_id, topic3 AS token_topic, '0x' || substr(topic2, 27) AS owner
  FROM events
  WHERE topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' AND topic3 IS NOT NULL
  ORDER BY chain_id, topic3, block_number DESC, log_index DESC
),
payouts AS (
  SELECT DISTINCT ON (chain_id, topic1) chain_id, topic1 AS token_topic, '0x' || substr(data, 27, 40) AS payout_address
  FROM events
  WHERE topic0 = '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43' AND topic1 IS NOT NULL AND length(data) = 66
  ORDER BY chain_id, topic1, block_number DESC, log_index DESC
)
SELECT
  g.chain_id,
  convert_from(decode(g.code_hex, 'hex'), 'UTF8') AS builder_code,
  public.hex_to_numeric(g.token_topic) AS token_id,
  NULLIF(o.owner, '0x0000000000000000000000000000000000000000') AS owner,
  p.payout_address,
  g.block_number AS registered_block,
  g.block_timestamp AS registered_at
FROM registered g
LEFT JOIN owners o USING (chain_id, token_topic)
LEFT JOIN payouts p USING (chain_id, token_topic)
WHERE g.code_length BETWEEN 1 AND 32 AND g.code_hex ~ '^(3[0-9]|5f|6[1-9a-f]|7[0-9a])+$' AND length(g.code_hex) = 2 * g.code_length;
--> statement-breakpoint
CREATE VIEW analytics.builder_codes AS
SELECT
  coalesce(rc.chain_id, bc.chain_id) AS chain_id,
  coalesce(rc.builder_code, bc.builder_code) AS builder_code,
  CASE WHEN rc.builder_code IS NOT NULL THEN 'registry' WHEN bc.source = 'upstream' THEN 'api' ELSE 'local' END AS source,
  bc.wallet_address,
  rc.token_id,
  rc.owner,
  rc.payout_address,
  rc.registered_block,
  coalesce(rc.registered_at, bc.created_at) AS registered_at
FROM public.registry_codes rc
FULL JOIN public.builder_codes bc ON bc.chain_id = rc.chain_id AND bc.builder_code = rc.builder_code;
--> statement-breakpoint
COMMENT ON VIEW analytics.builder_codes IS 'Every known builder code: registered on the BuilderCodes registry (its logs not removed), issued by the upstream API, or issued here.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.chain_id IS 'EIP-155 chain id.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.builder_code IS 'The builder code.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.source IS 'registry (on-chain, BUILDER_CODES_REGISTRY), api (issued by BUILDER_API_URL) or local (derived here); registry wins when both know the code.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.wallet_address IS 'Wallet the code was issued to through the registration API; null for a code known only on-chain.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.token_id IS 'The code''s ERC-721 token id on the registry; null when not registered there.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.owner IS 'Current owner of the code''s token (the last Transfer); null when not on the registry or burnt.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.payout_address IS 'Payout address the registry last set for the code (PayoutAddressUpdated).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.registered_block IS 'Block of the CodeRegistered event; null when not on the registry.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.builder_codes.registered_at IS 'Block time of the CodeRegistered event, else when the code was issued through the API.';
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
  rc.payout_address
FROM public.attributions a
LEFT JOIN public.builder_codes bc ON bc.chain_id = a.chain_id AND bc.builder_code = a.builder_code
LEFT JOIN public.registry_codes rc ON rc.chain_id = a.chain_id AND rc.builder_code = a.builder_code;
--> statement-breakpoint
COMMENT ON VIEW analytics.attributed_transactions IS 'One row per (transaction or ERC-4337 user operation, builder code, role) decoded from an ERC-8021 suffix.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.role IS 'Schema 2: app (a), wallet (w) or service (s); x402 uses them for seller, facilitator and client. Null for schemas 0 and 1.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.registry_address IS 'Registry the suffix names for this code (schema 1, or schema 2''s r for the role); null when none.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.registry_chain_id IS 'Chain id of that registry (up to 32 bytes, hence numeric).';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.registered IS 'The code is known from any source: the BuilderCodes registry, the upstream API or issued here.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.code_owner IS 'Owner of the code''s token on the BuilderCodes registry; null when the registry does not know it.';
--> statement-breakpoint
COMMENT ON COLUMN analytics.attributed_transactions.payout_address IS 'Payout address the BuilderCodes registry holds for the code.';
--> statement-breakpoint
GRANT SELECT ON analytics.builder_codes, analytics.attributed_transactions TO analytics_reader;
--> statement-breakpoint
-- Split of the stats by role, kept like builder_code_buckets (0007): signed changes of each statement's rows.
CREATE FUNCTION builder_code_role_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  added CONSTANT text := 'SELECT chain_id, builder_code, role, block_timestamp, status, 1 AS sign FROM new_rows WHERE NOT removed';
  taken CONSTANT text := 'SELECT chain_id, builder_code, role, block_timestamp, status, -1 AS sign FROM old_rows WHERE NOT removed';
  changes text := CASE TG_OP WHEN 'INSERT' THEN added WHEN 'DELETE' THEN taken ELSE added || ' UNION ALL ' || taken END;
BEGIN
  EXECUTE format($sql$
    WITH changes AS (%s),
    counts AS (
      SELECT c.chain_id, c.builder_code, k.bucket, date_trunc(k.bucket, c.block_timestamp, 'UTC') AS start, c.role,
        sum(c.sign) AS attributions, coalesce(sum(c.sign) FILTER (WHERE c.status = 'pending'), 0) AS pending
      FROM changes c CROSS JOIN (VALUES ('hour'), ('day')) AS k(bucket)
      GROUP BY 1, 2, 3, 4, 5
    )
    INSERT INTO builder_code_role_buckets AS b (chain_id, builder_code, bucket, start, role, attributions, pending)
    SELECT * FROM counts WHERE (attributions, pending) <> (0, 0)
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (chain_id, builder_code, bucket, start, role) DO UPDATE SET attributions = b.attributions + excluded.attributions,
      pending = b.pending + excluded.pending
  $sql$, changes);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE FUNCTION builder_code_role_rollup_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE builder_code_role_buckets;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER attributions_role_rollup_insert AFTER INSERT ON attributions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup();
--> statement-breakpoint
CREATE TRIGGER attributions_role_rollup_update AFTER UPDATE ON attributions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup();
--> statement-breakpoint
CREATE TRIGGER attributions_role_rollup_delete AFTER DELETE ON attributions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup();
--> statement-breakpoint
CREATE TRIGGER attributions_role_rollup_truncate AFTER TRUNCATE ON attributions
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup_truncate();
--> statement-breakpoint
INSERT INTO builder_code_role_buckets (chain_id, builder_code, bucket, start, role, attributions, pending)
SELECT a.chain_id, a.builder_code, k.bucket, date_trunc(k.bucket, a.block_timestamp, 'UTC'), a.role, count(*), count(*) FILTER (WHERE a.status = 'pending')
FROM attributions a CROSS JOIN (VALUES ('hour'), ('day')) AS k(bucket)
WHERE NOT a.removed
GROUP BY 1, 2, 3, 4, 5;
