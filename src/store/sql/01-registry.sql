-- The on-chain BuilderCodes registry: its codes kept in registry_tokens by row triggers on logs (and on
-- builder_code_registries), in the transaction that writes or marks those logs, so a read costs one index
-- lookup instead of a replay of the registry's history.

-- A uint256 (0x hex, any length) as numeric, 32 bits at a time: token ids need all 256 bits.
CREATE OR REPLACE FUNCTION public.hex_to_numeric(hex text) RETURNS numeric LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT trunc(coalesce(sum(('x' || substr(d, 8 * i + 1, 8))::bit(32)::bigint::numeric * (4294967296::numeric ^ (length(d) / 8 - 1 - i))), 0))
  FROM (SELECT lpad(t, (length(t) + 7) / 8 * 8, '0') AS d FROM (SELECT ltrim(lower(substr(hex, 3)), '0') AS t) s) p,
    generate_series(0, length(d) / 8 - 1) AS i
$$;

-- Recomputes a token of a chain from the live logs of its registries. Serialised per chain so two
-- writers of one token's logs cannot each keep a stale answer. A code that is gone after it (a reorg
-- removed its CodeRegistered) unverifies the transactions of any chain verified against that registry:
-- their attributor asks again on its next pass (reason registry_reorg).
CREATE OR REPLACE FUNCTION registry_tokens_refresh(p_chain integer, p_token text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  gone text;
BEGIN
  PERFORM pg_advisory_xact_lock(1668576871, p_chain);
  DELETE FROM registry_tokens WHERE chain_id = p_chain AND token_topic = p_token RETURNING builder_code INTO gone;
  INSERT INTO registry_tokens (chain_id, token_topic, builder_code, token_id, owner, payout_address, registered_block, registered_at)
  WITH events AS (
    SELECT l.chain_id, l.block_number, l.block_timestamp, l.log_index, l.topic0, l.topic1, l.topic2, l.topic3, lower(l.data) AS data
    FROM builder_code_registries r JOIN logs l ON l.chain_id = r.chain_id AND l.address = r.address
    WHERE r.chain_id = p_chain AND NOT l.removed AND l.topic1 = p_token
      AND l.topic0 IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43')
    UNION ALL
    SELECT l.chain_id, l.block_number, l.block_timestamp, l.log_index, l.topic0, l.topic1, l.topic2, l.topic3, lower(l.data)
    FROM builder_code_registries r JOIN logs l ON l.chain_id = r.chain_id AND l.address = r.address
    WHERE r.chain_id = p_chain AND NOT l.removed AND l.topic3 = p_token
      AND l.topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
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
  SELECT g.chain_id, g.token_topic, convert_from(decode(g.code_hex, 'hex'), 'UTF8'), public.hex_to_numeric(g.token_topic),
    NULLIF(o.owner, '0x0000000000000000000000000000000000000000'), p.payout_address, g.block_number, g.block_timestamp
  FROM registered g
  LEFT JOIN owners o USING (chain_id, token_topic)
  LEFT JOIN payouts p USING (chain_id, token_topic)
  WHERE g.code_length BETWEEN 1 AND 32 AND g.code_hex ~ '^(3[0-9]|5f|6[1-9a-f]|7[0-9a])+$' AND length(g.code_hex) = 2 * g.code_length;
  IF gone IS NOT NULL AND NOT EXISTS (SELECT 1 FROM registry_tokens WHERE chain_id = p_chain AND token_topic = p_token) THEN
    UPDATE transactions t SET registry_verified = NULL, registry_unverified_reason = 'registry_reorg', updated_at = now()
    FROM builder_code_registries r
    WHERE r.chain_id = p_chain AND t.registry_chain_id = p_chain AND t.registry_address = r.address
      AND t.registry_verified AND NOT t.removed AND gone = ANY(t.codes);
  END IF;
END
$$;

-- Row-level with a WHEN on the event, so the COPY of other logs queues nothing; a status change alone
-- (finality) leaves the answer as it is and fires nothing.
CREATE OR REPLACE FUNCTION registry_tokens_log_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND EXISTS (SELECT 1 FROM builder_code_registries WHERE chain_id = OLD.chain_id AND address = OLD.address) THEN
    PERFORM registry_tokens_refresh(OLD.chain_id, CASE WHEN OLD.topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' THEN OLD.topic3 ELSE OLD.topic1 END);
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR (OLD.chain_id, OLD.address, OLD.topic0, OLD.topic1, OLD.topic3) IS DISTINCT FROM (NEW.chain_id, NEW.address, NEW.topic0, NEW.topic1, NEW.topic3))
    AND EXISTS (SELECT 1 FROM builder_code_registries WHERE chain_id = NEW.chain_id AND address = NEW.address) THEN
    PERFORM registry_tokens_refresh(NEW.chain_id, CASE WHEN NEW.topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' THEN NEW.topic3 ELSE NEW.topic1 END);
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS logs_registry_insert ON logs;
CREATE TRIGGER logs_registry_insert AFTER INSERT ON logs FOR EACH ROW
  WHEN (NEW.topic0 IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43') AND NEW.topic1 IS NOT NULL
    OR NEW.topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' AND NEW.topic3 IS NOT NULL)
  EXECUTE FUNCTION registry_tokens_log_changed();

DROP TRIGGER IF EXISTS logs_registry_update ON logs;
CREATE TRIGGER logs_registry_update AFTER UPDATE ON logs FOR EACH ROW
  WHEN ((OLD.topic0 IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43', '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef')
      OR NEW.topic0 IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43', '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'))
    AND (OLD.removed, OLD.block_number, OLD.log_index, OLD.block_timestamp, OLD.data, OLD.chain_id, OLD.address, OLD.topic0, OLD.topic1, OLD.topic2, OLD.topic3)
      IS DISTINCT FROM (NEW.removed, NEW.block_number, NEW.log_index, NEW.block_timestamp, NEW.data, NEW.chain_id, NEW.address, NEW.topic0, NEW.topic1, NEW.topic2, NEW.topic3))
  EXECUTE FUNCTION registry_tokens_log_changed();

DROP TRIGGER IF EXISTS logs_registry_delete ON logs;
CREATE TRIGGER logs_registry_delete AFTER DELETE ON logs FOR EACH ROW
  WHEN (OLD.topic0 IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43', '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'))
  EXECUTE FUNCTION registry_tokens_log_changed();

CREATE OR REPLACE FUNCTION registry_tokens_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE registry_tokens;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS logs_registry_truncate ON logs;
CREATE TRIGGER logs_registry_truncate AFTER TRUNCATE ON logs FOR EACH STATEMENT EXECUTE FUNCTION registry_tokens_truncate();

-- A registry recorded (or forgotten) after its logs were stored: its tokens are recomputed.
CREATE OR REPLACE FUNCTION registry_tokens_registry_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  r := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
  PERFORM registry_tokens_refresh(r.chain_id, token) FROM (
    SELECT DISTINCT CASE WHEN topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' THEN topic3 ELSE topic1 END AS token FROM logs
    WHERE chain_id = r.chain_id AND address = r.address
      AND (topic0 IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43') AND topic1 IS NOT NULL
        OR topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' AND topic3 IS NOT NULL)) t;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS builder_code_registries_tokens ON builder_code_registries;
CREATE TRIGGER builder_code_registries_tokens AFTER INSERT OR DELETE ON builder_code_registries FOR EACH ROW EXECUTE FUNCTION registry_tokens_registry_changed();

-- The registry's codes as the API and the analytics views read them.
CREATE VIEW public.registry_codes AS
SELECT chain_id, builder_code, token_id, owner, payout_address, registered_block, registered_at FROM registry_tokens;
