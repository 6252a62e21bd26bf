-- Dropped pre-confirmed logs in block order, for a log list that includes removed rows without an address or topic0 filter.
CREATE INDEX IF NOT EXISTS "logs_dropped_pending" ON "logs" USING btree ("chain_id","block_number") WHERE status = 'pending' AND removed;
