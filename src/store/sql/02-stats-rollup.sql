-- The stats rollup (builder_code_buckets, builder_code_bucket_senders, builder_code_senders and
-- builder_code_role_buckets), kept by statement-level triggers on attributions.

-- Stats rollup upkeep: one statement-level trigger per write kind on attributions turns the statement's
-- transition tables into signed changes (a counted row added +1, one taken away −1; counted = not
-- removed) and applies them set-wise, so backfill upserts, status moves, reorgs and deletes all keep
-- the rollup exact. Rows are upserted in key order so concurrent writers lock them in the same order.
-- The `confirmed_` figures count the confirmed rows (not pending) alone, for analytics.builder_code_daily.
-- Its distinct transactions (and transaction, user operation pairs) are found by counting, after the
-- statement, the rows each changed transaction has in the bucket (through the primary key), the count
-- before being that less the statement's changes. That holds while no statement both inserts and updates
-- (an upsert's insert and update triggers would each see the other's rows as there before: upsertAttributions
-- updates stored rows and inserts the others in two statements), and while two transactions never change
-- different rows of one transaction's code at once (every writer writes all of them, so they wait for each other).
CREATE OR REPLACE FUNCTION builder_code_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  added CONSTANT text := 'SELECT chain_id, builder_code, block_timestamp, sender, status, gas_used, tx_hash, user_op_hash, 1 AS sign FROM new_rows WHERE NOT removed';
  taken CONSTANT text := 'SELECT chain_id, builder_code, block_timestamp, sender, status, gas_used, tx_hash, user_op_hash, -1 AS sign FROM old_rows WHERE NOT removed';
  changes text := CASE TG_OP WHEN 'INSERT' THEN added WHEN 'DELETE' THEN taken ELSE added || ' UNION ALL ' || taken END;
  any_change boolean;
BEGIN
  -- An upsert fires the update trigger too, mostly with nothing updated.
  EXECUTE format('SELECT EXISTS (%s)', changes) INTO any_change;
  IF NOT any_change THEN
    RETURN NULL;
  END IF;
  -- Per bucket: the counts, and the senders whose count there (or count of confirmed rows) leaves or reaches zero.
  EXECUTE format($sql$
    WITH changes AS (%s),
    per_bucket AS (
      SELECT c.chain_id, c.builder_code, b.bucket, date_trunc(b.bucket, c.block_timestamp, 'UTC') AS start, c.sender,
        c.status <> 'pending' AS confirmed, c.gas_used, c.tx_hash, c.user_op_hash, c.sign
      FROM changes c CROSS JOIN (VALUES ('hour'), ('day')) AS b(bucket)
    ),
    sender_changes AS (
      SELECT chain_id, builder_code, bucket, start, sender, sum(sign)::int AS dn, coalesce(sum(sign) FILTER (WHERE NOT confirmed), 0)::int AS dp
      FROM per_bucket GROUP BY 1, 2, 3, 4, 5 HAVING sum(sign) <> 0 OR sum(sign) FILTER (WHERE NOT confirmed) <> 0
    ),
    members AS (
      INSERT INTO builder_code_bucket_senders AS s (chain_id, builder_code, bucket, start, sender, n, pending)
      SELECT * FROM sender_changes ORDER BY 1, 2, 3, 4, 5
      ON CONFLICT (chain_id, builder_code, bucket, start, sender) DO UPDATE SET n = s.n + excluded.n, pending = s.pending + excluded.pending
      RETURNING s.chain_id, s.builder_code, s.bucket, s.start, s.sender, s.n, s.pending
    ),
    senders AS (
      -- +1 where the sender's count went from 0 to above, −1 where it went back to 0; the same for its confirmed rows.
      SELECT m.chain_id, m.builder_code, m.bucket, m.start, sum((m.n > 0)::int - (m.n - c.dn > 0)::int) AS senders,
        sum((m.n - m.pending > 0)::int - (m.n - m.pending - (c.dn - c.dp) > 0)::int) AS confirmed_senders
      FROM members m JOIN sender_changes c USING (chain_id, builder_code, bucket, start, sender)
      GROUP BY 1, 2, 3, 4
    ),
    pair_changes AS (
      SELECT chain_id, builder_code, bucket, start, tx_hash, user_op_hash, sum(sign) AS dn
      FROM per_bucket WHERE confirmed GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(sign) <> 0
    ),
    pairs_now AS (
      -- Each changed transaction's confirmed rows of the code in the bucket now, per user operation: one index scan
      -- each, of the bucket's month (the bucket's time range, a UTC hour or day, prunes the other partitions as the
      -- scan runs).
      SELECT t.chain_id, t.builder_code, t.bucket, t.start, t.tx_hash, n.user_op_hash, n.n
      FROM (SELECT DISTINCT chain_id, builder_code, bucket, start, tx_hash FROM pair_changes) t CROSS JOIN LATERAL (
        SELECT a.user_op_hash, count(*) AS n FROM attributions a
        WHERE a.chain_id = t.chain_id AND a.tx_hash = t.tx_hash AND a.builder_code = t.builder_code
          AND a.status <> 'pending' AND NOT a.removed
          AND a.block_timestamp >= t.start AND a.block_timestamp < t.start + CASE t.bucket WHEN 'hour' THEN interval '1 hour' ELSE interval '24 hours' END
        GROUP BY a.user_op_hash
      ) n
    ),
    pairs AS (
      SELECT chain_id, builder_code, bucket, start, tx_hash, coalesce(n.n, 0) AS n, coalesce(p.dn, 0) AS dn
      FROM pairs_now n FULL JOIN pair_changes p USING (chain_id, builder_code, bucket, start, tx_hash, user_op_hash)
    ),
    crossings AS (
      -- +1 where a (transaction, user operation), or a transaction, went from no confirmed row of the code in the
      -- bucket to some, −1 where it went back.
      SELECT chain_id, builder_code, bucket, start, sum(pairs) AS tx_count, sum((n > 0)::int - (n - dn > 0)::int) AS transactions
      FROM (
        SELECT chain_id, builder_code, bucket, start, tx_hash, sum((n > 0)::int - (n - dn > 0)::int) AS pairs, sum(n) AS n, sum(dn) AS dn
        FROM pairs GROUP BY 1, 2, 3, 4, 5
      ) per_transaction
      GROUP BY 1, 2, 3, 4
    ),
    counts AS (
      SELECT chain_id, builder_code, bucket, start, sum(sign) AS attributions,
        coalesce(sum(sign) FILTER (WHERE NOT confirmed), 0) AS pending, coalesce(sum(sign * gas_used), 0) AS gas_used,
        coalesce(sum(sign) FILTER (WHERE confirmed AND user_op_hash <> ''), 0) AS user_operations,
        coalesce(sum(sign * gas_used) FILTER (WHERE confirmed), 0) AS confirmed_gas_used,
        coalesce(sum(sign) FILTER (WHERE confirmed AND gas_used IS NOT NULL), 0) AS gas_rows
      FROM per_bucket GROUP BY 1, 2, 3, 4
    )
    INSERT INTO builder_code_buckets AS b (chain_id, builder_code, bucket, start, attributions, pending, gas_used, senders, latest_senders,
      confirmed_tx_count, confirmed_senders, confirmed_transactions, confirmed_user_operations, confirmed_gas_used, confirmed_gas_rows)
    SELECT c.chain_id, c.builder_code, c.bucket, c.start, c.attributions, c.pending, c.gas_used, coalesce(s.senders, 0), 0,
      coalesce(x.tx_count, 0), coalesce(s.confirmed_senders, 0), coalesce(x.transactions, 0), c.user_operations, c.confirmed_gas_used, c.gas_rows
    FROM counts c LEFT JOIN senders s USING (chain_id, builder_code, bucket, start) LEFT JOIN crossings x USING (chain_id, builder_code, bucket, start)
    WHERE (c.attributions, c.pending, c.gas_used, coalesce(s.senders, 0), coalesce(x.tx_count, 0), coalesce(s.confirmed_senders, 0),
      coalesce(x.transactions, 0), c.user_operations, c.confirmed_gas_used, c.gas_rows) <> (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (chain_id, builder_code, bucket, start) DO UPDATE SET attributions = b.attributions + excluded.attributions,
      pending = b.pending + excluded.pending, gas_used = b.gas_used + excluded.gas_used, senders = b.senders + excluded.senders,
      confirmed_tx_count = b.confirmed_tx_count + excluded.confirmed_tx_count,
      confirmed_senders = b.confirmed_senders + excluded.confirmed_senders,
      confirmed_transactions = b.confirmed_transactions + excluded.confirmed_transactions,
      confirmed_user_operations = b.confirmed_user_operations + excluded.confirmed_user_operations,
      confirmed_gas_used = b.confirmed_gas_used + excluded.confirmed_gas_used, confirmed_gas_rows = b.confirmed_gas_rows + excluded.confirmed_gas_rows
  $sql$, changes);

  -- Per sender: the count and the latest block time, as far as the added rows tell ('-infinity' when none);
  -- the triggers on builder_code_senders move the sender between buckets' latest_senders.
  EXECUTE format($sql$
    WITH changes AS (%s),
    per_sender AS (
      SELECT chain_id, builder_code, sender, sum(sign) AS dn,
        max(block_timestamp) FILTER (WHERE sign > 0) AS added_last, max(block_timestamp) FILTER (WHERE sign < 0) AS taken_last
      FROM changes GROUP BY 1, 2, 3
    )
    INSERT INTO builder_code_senders AS s (chain_id, builder_code, sender, n, last_seen)
    SELECT chain_id, builder_code, sender, dn, coalesce(added_last, '-infinity') FROM per_sender
    WHERE dn <> 0 OR added_last IS DISTINCT FROM taken_last
    ORDER BY 1, 2, 3
    ON CONFLICT (chain_id, builder_code, sender) DO UPDATE SET n = s.n + excluded.n, last_seen = greatest(s.last_seen, excluded.last_seen)
    WHERE excluded.n <> 0 OR excluded.last_seen > s.last_seen
  $sql$, changes);

  IF TG_OP = 'INSERT' THEN
    RETURN NULL;
  END IF;
  -- Rows taken away: drop members and senders left at zero, and where the sender's latest row went and
  -- no added row took its place, read the latest block time again from its rows of the code (index
  -- attributions_sender). A new statement, so it sees every write committed before the rows above were locked.
  EXECUTE format($sql$
    WITH changes AS (%s),
    taken_members AS (
      SELECT DISTINCT c.chain_id, c.builder_code, b.bucket, date_trunc(b.bucket, c.block_timestamp, 'UTC') AS start, c.sender
      FROM changes c CROSS JOIN (VALUES ('hour'), ('day')) AS b(bucket) WHERE c.sign < 0
    ),
    empty_members AS (
      DELETE FROM builder_code_bucket_senders s USING taken_members t
      WHERE (s.chain_id, s.builder_code, s.bucket, s.start, s.sender) = (t.chain_id, t.builder_code, t.bucket, t.start, t.sender) AND s.n = 0
    ),
    per_sender AS (
      SELECT chain_id, builder_code, sender,
        max(block_timestamp) FILTER (WHERE sign > 0) AS added_last, max(block_timestamp) FILTER (WHERE sign < 0) AS taken_last
      FROM changes GROUP BY 1, 2, 3 HAVING bool_or(sign < 0)
    ),
    gone AS (
      DELETE FROM builder_code_senders s USING per_sender p
      WHERE (s.chain_id, s.builder_code, s.sender) = (p.chain_id, p.builder_code, p.sender) AND s.n = 0
    )
    UPDATE builder_code_senders s SET last_seen = (
      SELECT max(a.block_timestamp) FROM attributions a
      WHERE a.chain_id = s.chain_id AND a.builder_code = s.builder_code AND a.sender = s.sender AND NOT a.removed)
    FROM per_sender p
    WHERE (s.chain_id, s.builder_code, s.sender) = (p.chain_id, p.builder_code, p.sender) AND s.n > 0
      AND s.last_seen <= p.taken_last AND s.last_seen IS DISTINCT FROM p.added_last
  $sql$, changes);
  RETURN NULL;
END
$$;

-- Each sender counts in latest_senders of the hour and day of its last_seen: a row of builder_code_senders
-- inserted adds one there, one deleted takes one away, an update moves it.
CREATE OR REPLACE FUNCTION builder_code_latest_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  added CONSTANT text := 'SELECT chain_id, builder_code, last_seen, 1 AS sign FROM new_rows';
  taken CONSTANT text := 'SELECT chain_id, builder_code, last_seen, -1 AS sign FROM old_rows';
  changes text := CASE TG_OP WHEN 'INSERT' THEN added WHEN 'DELETE' THEN taken ELSE added || ' UNION ALL ' || taken END;
BEGIN
  EXECUTE format($sql$
    WITH changes AS (%s)
    INSERT INTO builder_code_buckets AS b (chain_id, builder_code, bucket, start, attributions, pending, gas_used, senders, latest_senders)
    SELECT c.chain_id, c.builder_code, k.bucket, date_trunc(k.bucket, c.last_seen, 'UTC'), 0, 0, 0, 0, sum(c.sign)
    FROM changes c CROSS JOIN (VALUES ('hour'), ('day')) AS k(bucket)
    GROUP BY 1, 2, 3, 4 HAVING sum(c.sign) <> 0
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (chain_id, builder_code, bucket, start) DO UPDATE SET latest_senders = b.latest_senders + excluded.latest_senders
  $sql$, changes);
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION builder_code_rollup_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE builder_code_buckets, builder_code_bucket_senders, builder_code_senders;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS attributions_rollup_insert ON attributions;
CREATE TRIGGER attributions_rollup_insert AFTER INSERT ON attributions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_rollup();

DROP TRIGGER IF EXISTS attributions_rollup_update ON attributions;
CREATE TRIGGER attributions_rollup_update AFTER UPDATE ON attributions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_rollup();

DROP TRIGGER IF EXISTS attributions_rollup_delete ON attributions;
CREATE TRIGGER attributions_rollup_delete AFTER DELETE ON attributions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_rollup();

DROP TRIGGER IF EXISTS attributions_rollup_truncate ON attributions;
CREATE TRIGGER attributions_rollup_truncate AFTER TRUNCATE ON attributions
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_rollup_truncate();

DROP TRIGGER IF EXISTS builder_code_senders_latest_insert ON builder_code_senders;
CREATE TRIGGER builder_code_senders_latest_insert AFTER INSERT ON builder_code_senders REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_latest_rollup();

DROP TRIGGER IF EXISTS builder_code_senders_latest_update ON builder_code_senders;
CREATE TRIGGER builder_code_senders_latest_update AFTER UPDATE ON builder_code_senders REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_latest_rollup();

DROP TRIGGER IF EXISTS builder_code_senders_latest_delete ON builder_code_senders;
CREATE TRIGGER builder_code_senders_latest_delete AFTER DELETE ON builder_code_senders REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_latest_rollup();

-- Split of the stats by role, kept like builder_code_buckets: signed changes of each statement's rows.
CREATE OR REPLACE FUNCTION builder_code_role_rollup() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION builder_code_role_rollup_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE builder_code_role_buckets;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS attributions_role_rollup_insert ON attributions;
CREATE TRIGGER attributions_role_rollup_insert AFTER INSERT ON attributions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup();

DROP TRIGGER IF EXISTS attributions_role_rollup_update ON attributions;
CREATE TRIGGER attributions_role_rollup_update AFTER UPDATE ON attributions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup();

DROP TRIGGER IF EXISTS attributions_role_rollup_delete ON attributions;
CREATE TRIGGER attributions_role_rollup_delete AFTER DELETE ON attributions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup();

DROP TRIGGER IF EXISTS attributions_role_rollup_truncate ON attributions;
CREATE TRIGGER attributions_role_rollup_truncate AFTER TRUNCATE ON attributions
  FOR EACH STATEMENT EXECUTE FUNCTION builder_code_role_rollup_truncate();

-- The whole rollup counted once from the rows, as the triggers above keep it: for a bulk load made with
-- the triggers off (the bench's seeder loads under session_replication_role = replica) and for a repair.
-- It runs in that mode only, so that no trigger on the rollup tables counts a second time what it inserts.
-- Hours are counted from the rows, days from the hours (a UTC day is whole UTC hours).
CREATE OR REPLACE FUNCTION builder_code_rollup_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('session_replication_role') <> 'replica' THEN
    RAISE EXCEPTION 'builder_code_rollup_rebuild() runs with session_replication_role = replica (the triggers off)';
  END IF;
  TRUNCATE builder_code_buckets, builder_code_bucket_senders, builder_code_senders, builder_code_role_buckets;
  INSERT INTO builder_code_bucket_senders (chain_id, builder_code, bucket, start, sender, n, pending)
  SELECT chain_id, builder_code, 'hour', date_trunc('hour', block_timestamp, 'UTC'), sender, count(*), count(*) FILTER (WHERE status = 'pending')
  FROM attributions WHERE NOT removed
  GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO builder_code_bucket_senders (chain_id, builder_code, bucket, start, sender, n, pending)
  SELECT chain_id, builder_code, 'day', date_trunc('day', start, 'UTC'), sender, sum(n), sum(pending)
  FROM builder_code_bucket_senders WHERE bucket = 'hour'
  GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO builder_code_senders (chain_id, builder_code, sender, n, last_seen)
  SELECT chain_id, builder_code, sender, count(*), max(block_timestamp)
  FROM attributions WHERE NOT removed
  GROUP BY 1, 2, 3;
  INSERT INTO builder_code_role_buckets (chain_id, builder_code, bucket, start, role, attributions, pending)
  SELECT chain_id, builder_code, 'hour', date_trunc('hour', block_timestamp, 'UTC'), role, count(*), count(*) FILTER (WHERE status = 'pending')
  FROM attributions WHERE NOT removed
  GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO builder_code_role_buckets (chain_id, builder_code, bucket, start, role, attributions, pending)
  SELECT chain_id, builder_code, 'day', date_trunc('day', start, 'UTC'), role, sum(attributions), sum(pending)
  FROM builder_code_role_buckets WHERE bucket = 'hour'
  GROUP BY 1, 2, 3, 4, 5;
  INSERT INTO builder_code_buckets (chain_id, builder_code, bucket, start, attributions, pending, gas_used, senders, latest_senders,
    confirmed_tx_count, confirmed_senders, confirmed_transactions, confirmed_user_operations, confirmed_gas_used, confirmed_gas_rows)
  WITH hours AS (
    SELECT chain_id, builder_code, date_trunc('hour', block_timestamp, 'UTC') AS start, count(*) AS attributions,
      count(*) FILTER (WHERE status = 'pending') AS pending, coalesce(sum(gas_used), 0) AS gas_used,
      count(*) FILTER (WHERE status <> 'pending' AND user_op_hash <> '') AS user_operations,
      coalesce(sum(gas_used) FILTER (WHERE status <> 'pending'), 0) AS confirmed_gas_used,
      count(gas_used) FILTER (WHERE status <> 'pending') AS gas_rows
    FROM attributions WHERE NOT removed
    GROUP BY 1, 2, 3
  ),
  counts AS (
    SELECT chain_id, builder_code, 'hour' AS bucket, start, attributions, pending, gas_used, user_operations, confirmed_gas_used, gas_rows FROM hours
    UNION ALL
    SELECT chain_id, builder_code, 'day', date_trunc('day', start, 'UTC'), sum(attributions), sum(pending), sum(gas_used), sum(user_operations),
      sum(confirmed_gas_used), sum(gas_rows)
    FROM hours GROUP BY 1, 2, 3, 4
  ),
  senders AS (
    SELECT chain_id, builder_code, bucket, start, count(*) AS senders, count(*) FILTER (WHERE n > pending) AS confirmed_senders
    FROM builder_code_bucket_senders GROUP BY 1, 2, 3, 4
  ),
  -- Distinct counts do not add up from hours to days: both are counted from the rows.
  distinct_confirmed AS (
    SELECT a.chain_id, a.builder_code, k.bucket, date_trunc(k.bucket, a.block_timestamp, 'UTC') AS start,
      count(DISTINCT (a.tx_hash, a.user_op_hash)) AS tx_count, count(DISTINCT a.tx_hash) AS transactions
    FROM attributions a CROSS JOIN (VALUES ('hour'), ('day')) AS k(bucket)
    WHERE a.status <> 'pending' AND NOT a.removed
    GROUP BY 1, 2, 3, 4
  ),
  latest AS (
    SELECT s.chain_id, s.builder_code, k.bucket, date_trunc(k.bucket, s.last_seen, 'UTC') AS start, count(*) AS latest_senders
    FROM builder_code_senders s CROSS JOIN (VALUES ('hour'), ('day')) AS k(bucket)
    GROUP BY 1, 2, 3, 4
  )
  SELECT c.chain_id, c.builder_code, c.bucket, c.start, c.attributions, c.pending, c.gas_used, s.senders, coalesce(l.latest_senders, 0),
    coalesce(d.tx_count, 0), s.confirmed_senders, coalesce(d.transactions, 0), c.user_operations, c.confirmed_gas_used, c.gas_rows
  FROM counts c JOIN senders s USING (chain_id, builder_code, bucket, start) LEFT JOIN latest l USING (chain_id, builder_code, bucket, start)
    LEFT JOIN distinct_confirmed d USING (chain_id, builder_code, bucket, start);
END
$$;
