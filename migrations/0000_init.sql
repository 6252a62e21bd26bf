CREATE TABLE "attributions" (
	"chain_id" integer NOT NULL,
	"tx_hash" text NOT NULL,
	"user_op_hash" text DEFAULT '' NOT NULL,
	"builder_code" text NOT NULL,
	"code_index" smallint NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"block_timestamp" timestamp with time zone NOT NULL,
	"from_address" text NOT NULL,
	"sender" text NOT NULL,
	"to_address" text,
	"schema_id" smallint NOT NULL,
	"codes" text[] NOT NULL,
	"gas_used" bigint,
	"status" text NOT NULL,
	"removed" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "attributions_chain_id_tx_hash_user_op_hash_builder_code_pk" PRIMARY KEY("chain_id","tx_hash","user_op_hash","builder_code"),
	CONSTRAINT "attributions_status_check" CHECK ("status" in ('pending', 'confirmed', 'finalized'))
);
--> statement-breakpoint
CREATE TABLE "blocks" (
	"chain_id" integer NOT NULL,
	"number" bigint NOT NULL,
	"hash" text NOT NULL,
	"parent_hash" text,
	"timestamp" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"removed" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "blocks_chain_id_hash_pk" PRIMARY KEY("chain_id","hash"),
	CONSTRAINT "blocks_status_check" CHECK ("status" in ('pending', 'confirmed', 'finalized'))
);
--> statement-breakpoint
CREATE TABLE "builder_codes" (
	"chain_id" integer NOT NULL,
	"builder_code" text NOT NULL,
	"wallet_address" text NOT NULL,
	"source" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "builder_codes_chain_id_builder_code_pk" PRIMARY KEY("chain_id","builder_code"),
	CONSTRAINT "builder_codes_source_check" CHECK (source in ('local', 'upstream'))
);
--> statement-breakpoint
CREATE TABLE "chain_state" (
	"chain_id" integer PRIMARY KEY NOT NULL,
	"head_block" bigint,
	"safe_block" bigint,
	"finalized_block" bigint,
	"live_block" bigint,
	"live_hash" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "logs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "logs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"chain_id" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"block_timestamp" timestamp with time zone NOT NULL,
	"transaction_hash" text NOT NULL,
	"transaction_index" integer NOT NULL,
	"log_index" integer NOT NULL,
	"tx_log_ordinal" integer NOT NULL,
	"address" text NOT NULL,
	"topic0" text,
	"topic1" text,
	"topic2" text,
	"topic3" text,
	"data" text NOT NULL,
	"status" text NOT NULL,
	"removed" boolean DEFAULT false NOT NULL,
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "logs_status_check" CHECK ("status" in ('pending', 'confirmed', 'finalized'))
);
--> statement-breakpoint
CREATE TABLE "reorgs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "reorgs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"chain_id" integer NOT NULL,
	"fork_block" bigint NOT NULL,
	"depth" integer NOT NULL,
	"old_hash" text NOT NULL,
	"new_hash" text NOT NULL,
	"logs_removed" integer NOT NULL,
	"detected_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sync_filters" (
	"chain_id" integer NOT NULL,
	"filter_id" text NOT NULL,
	"addresses" text[] NOT NULL,
	"topics" text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sync_filters_chain_id_filter_id_pk" PRIMARY KEY("chain_id","filter_id")
);
--> statement-breakpoint
CREATE TABLE "sync_intervals" (
	"chain_id" integer NOT NULL,
	"filter_id" text NOT NULL,
	"from_block" bigint NOT NULL,
	"to_block" bigint NOT NULL,
	CONSTRAINT "sync_intervals_chain_id_filter_id_from_block_pk" PRIMARY KEY("chain_id","filter_id","from_block"),
	CONSTRAINT "sync_intervals_order" CHECK (from_block <= to_block)
);
--> statement-breakpoint
CREATE TABLE "transactions" (
	"chain_id" integer NOT NULL,
	"hash" text NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"block_timestamp" timestamp with time zone NOT NULL,
	"transaction_index" integer NOT NULL,
	"from_address" text NOT NULL,
	"to_address" text,
	"input_size" integer NOT NULL,
	"has_suffix" boolean NOT NULL,
	"schema_id" smallint,
	"codes" text[],
	"registry_address" text,
	"registry_chain_id" numeric,
	"registry_verified" boolean,
	"cbor" jsonb,
	"malformed_reason" text,
	"user_operations" integer DEFAULT 0 NOT NULL,
	"gas_used" bigint,
	"status" text NOT NULL,
	"removed" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "transactions_chain_id_hash_pk" PRIMARY KEY("chain_id","hash"),
	CONSTRAINT "transactions_status_check" CHECK ("status" in ('pending', 'confirmed', 'finalized'))
);
--> statement-breakpoint
CREATE INDEX "attributions_code_block" ON "attributions" USING btree ("chain_id","builder_code","block_number","tx_hash");--> statement-breakpoint
CREATE INDEX "attributions_block" ON "attributions" USING btree ("chain_id","block_number","tx_hash");--> statement-breakpoint
CREATE INDEX "attributions_timestamp" ON "attributions" USING btree ("chain_id","block_timestamp");--> statement-breakpoint
CREATE INDEX "blocks_number" ON "blocks" USING btree ("chain_id","number");--> statement-breakpoint
CREATE UNIQUE INDEX "builder_codes_wallet" ON "builder_codes" USING btree ("chain_id","wallet_address");--> statement-breakpoint
CREATE UNIQUE INDEX "logs_canonical_key" ON "logs" USING btree ("chain_id","block_hash","log_index") WHERE status <> 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "logs_pending_key" ON "logs" USING btree ("chain_id","transaction_hash","tx_log_ordinal") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "logs_block_number" ON "logs" USING btree ("chain_id","block_number");--> statement-breakpoint
CREATE INDEX "logs_transaction_hash" ON "logs" USING btree ("chain_id","transaction_hash");--> statement-breakpoint
CREATE INDEX "logs_address_block" ON "logs" USING btree ("chain_id","address","block_number");--> statement-breakpoint
CREATE INDEX "reorgs_chain" ON "reorgs" USING btree ("chain_id","detected_at");--> statement-breakpoint
CREATE INDEX "transactions_block_number" ON "transactions" USING btree ("chain_id","block_number");