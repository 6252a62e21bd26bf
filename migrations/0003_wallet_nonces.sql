CREATE TABLE "wallet_nonces" (
	"chain_id" integer NOT NULL,
	"wallet_address" text NOT NULL,
	"latest_nonce" bigint NOT NULL,
	"pending_nonce" bigint NOT NULL,
	"checked_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "wallet_nonces_chain_id_wallet_address_pk" PRIMARY KEY("chain_id","wallet_address")
);
