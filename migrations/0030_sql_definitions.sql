-- The digest of the definitions (views, functions, triggers, grants) of src/store/sql the database holds:
-- the migrator applies them again only when they change.
CREATE TABLE "sql_definitions" (
	"digest" text PRIMARY KEY NOT NULL,
	"applied_at" timestamp with time zone DEFAULT now() NOT NULL
);
