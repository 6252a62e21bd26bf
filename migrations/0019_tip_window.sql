ALTER TABLE "chain_state" ADD COLUMN "block_time_ms" integer;--> statement-breakpoint
ALTER TABLE "chain_state" ADD COLUMN "preconfirmations" boolean;--> statement-breakpoint
ALTER TABLE "chain_state" ADD COLUMN "preconfirmations_source" text;
