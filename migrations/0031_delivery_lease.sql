-- The delivery lease's fencing generation (the webhook dispatcher runs under a lease of its own, no chain's).
ALTER TABLE "webhook_cursor" ADD COLUMN "lease_generation" bigint DEFAULT 0 NOT NULL;
