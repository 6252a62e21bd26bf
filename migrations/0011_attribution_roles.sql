CREATE TABLE "builder_code_registries" (
	"chain_id" integer NOT NULL,
	"address" text NOT NULL,
	"start_block" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "builder_code_registries_chain_id_address_pk" PRIMARY KEY("chain_id","address")
);
--> statement-breakpoint
CREATE TABLE "builder_code_role_buckets" (
	"chain_id" integer NOT NULL,
	"builder_code" text NOT NULL,
	"role" text NOT NULL,
	"bucket" text NOT NULL,
	"start" timestamp with time zone NOT NULL,
	"attributions" bigint NOT NULL,
	"pending" bigint NOT NULL,
	CONSTRAINT "builder_code_role_buckets_pk" PRIMARY KEY("chain_id","builder_code","bucket","start","role"),
	CONSTRAINT "builder_code_role_buckets_bucket_check" CHECK (bucket in ('hour', 'day')),
	CONSTRAINT "builder_code_role_buckets_role_check" CHECK (role in ('', 'app', 'wallet', 'service'))
);
--> statement-breakpoint
ALTER TABLE "attributions" ADD COLUMN "role" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "attributions" ADD COLUMN "registry_address" text;--> statement-breakpoint
ALTER TABLE "attributions" ADD COLUMN "registry_chain_id" numeric;--> statement-breakpoint
ALTER TABLE "attributions" DROP CONSTRAINT "attributions_chain_id_tx_hash_user_op_hash_builder_code_pk";--> statement-breakpoint
ALTER TABLE "attributions" ADD CONSTRAINT "attributions_pk" PRIMARY KEY("chain_id","tx_hash","user_op_hash","builder_code","role");--> statement-breakpoint
ALTER TABLE "attributions" ADD CONSTRAINT "attributions_role_check" CHECK (role in ('', 'app', 'wallet', 'service'));