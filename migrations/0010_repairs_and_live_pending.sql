CREATE TABLE "sync_repairs" (
	"chain_id" integer NOT NULL,
	"filter_id" text NOT NULL,
	"from_block" bigint NOT NULL,
	"to_block" bigint NOT NULL,
	"reason" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sync_repairs_chain_id_filter_id_from_block_to_block_pk" PRIMARY KEY("chain_id","filter_id","from_block","to_block"),
	CONSTRAINT "sync_repairs_order" CHECK (from_block <= to_block)
);
--> statement-breakpoint
CREATE INDEX "attributions_live_pending" ON "attributions" USING btree ("chain_id","block_number") WHERE status = 'pending' AND NOT removed;--> statement-breakpoint
CREATE INDEX "logs_live_pending" ON "logs" USING btree ("chain_id","block_number") WHERE status = 'pending' AND NOT removed;--> statement-breakpoint
CREATE INDEX "transactions_live_pending" ON "transactions" USING btree ("chain_id","block_number") WHERE status = 'pending' AND NOT removed;