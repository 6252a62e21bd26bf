-- Attributions whose gas used the follow-up gas fill still owes: few rows (a backfill's tail), so a partial index.
CREATE INDEX IF NOT EXISTS "attributions_gas_missing" ON "attributions" USING btree ("chain_id","block_number","tx_hash") WHERE gas_used IS NULL AND status <> 'pending' AND NOT removed;
