-- Why a schema-1 registry answer is unknown, stored beside it and served by the API.
ALTER TABLE "transactions" ADD COLUMN "registry_unverified_reason" text;
--> statement-breakpoint
-- Validated apart, under a lock that lets writes go on while the table is read.
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_registry_unverified_reason_check" CHECK (registry_unverified_reason in ('chain_not_configured', 'node_error', 'invalid_answer', 'registry_reorg')) NOT VALID;
--> statement-breakpoint
ALTER TABLE "transactions" VALIDATE CONSTRAINT "transactions_registry_unverified_reason_check";
--> statement-breakpoint
-- Unknown answers stored before: a registry on the row's own chain was asked and its node failed; one on
-- another chain was never asked (the next pass asks it where that chain is now indexed). The rows the
-- partial index transactions_registry_unknown holds: a few, however large the table.
UPDATE "transactions" SET "registry_unverified_reason" = CASE WHEN "registry_chain_id" = "chain_id" THEN 'node_error' ELSE 'chain_not_configured' END
WHERE "registry_verified" IS NULL AND "registry_address" IS NOT NULL AND "codes" IS NOT NULL AND NOT "removed";
--> statement-breakpoint
-- Rows verified against a registry, found again when a reorg of its chain removes a registration.
CREATE INDEX "transactions_registry_verified" ON "transactions" USING btree ("registry_chain_id","registry_address") WHERE "transactions"."registry_verified" AND NOT "transactions"."removed";
