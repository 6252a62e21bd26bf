ALTER TABLE "sync_repairs" ADD COLUMN "marked_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "sync_repairs" ADD COLUMN "failures" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "sync_repairs" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "sync_repairs" ADD COLUMN "retry_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sync_repairs" ADD COLUMN "quarantined_at" timestamp with time zone;
