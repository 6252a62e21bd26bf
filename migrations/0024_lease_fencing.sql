ALTER TABLE "chain_state" ADD COLUMN "lease_generation" bigint DEFAULT 0 NOT NULL;
