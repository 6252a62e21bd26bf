DROP INDEX "logs_block_number";--> statement-breakpoint
DROP INDEX "logs_canonical_key";--> statement-breakpoint
CREATE UNIQUE INDEX "logs_canonical_key" ON "logs" USING btree ("chain_id","block_number","block_hash","log_index") WHERE status <> 'pending';