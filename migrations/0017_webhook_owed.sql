-- The writing transaction of each outbox change: the publisher nets one transaction's changes of an
-- attribution into its final state (pending -> confirmed replaces the pending row, never a removal).
ALTER TABLE "attribution_changes" ADD COLUMN "xact_id" bigint DEFAULT (pg_current_xact_id()::text)::bigint NOT NULL;
--> statement-breakpoint
CREATE INDEX "attribution_changes_xact" ON "attribution_changes" USING btree ("xact_id");
--> statement-breakpoint
-- One drainer per subscription at a time: a lease, so a killed worker's drain is taken over when it lapses.
ALTER TABLE "webhook_subscriptions" ADD COLUMN "drain_until" timestamp with time zone;
--> statement-breakpoint
-- Secret rotation: the replaced secret still signs (beside the new one) until its overlap ends.
ALTER TABLE "webhook_subscriptions" ADD COLUMN "previous_secret" text;
--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "previous_secret_until" timestamp with time zone;
