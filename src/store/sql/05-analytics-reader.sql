-- analytics_reader, the reporting role: it reads the analytics views and nothing else, and cannot hurt
-- the indexer. A deployment gives it a login (deploy/); codetrail itself never connects as it.

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'analytics_reader') THEN
    CREATE ROLE analytics_reader NOLOGIN;
  END IF;
END
$$;

-- Nothing of public: no table there is ever granted to it.
GRANT USAGE ON SCHEMA analytics TO analytics_reader;
-- The views are created again whenever their definitions change, which drops their grants.
GRANT SELECT ON ALL TABLES IN SCHEMA analytics TO analytics_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA analytics GRANT SELECT ON TABLES TO analytics_reader;

-- Advisory locks (the indexer's tip, fork-mark, filter-merge, publish and migration locks) and pg_notify
-- are executable only by the role that runs the migrations (codetrail's own), not by PUBLIC:
-- analytics_reader, or any other login, can neither hold the indexer's locks nor call pg_notify. (The
-- NOTIFY statement itself has no privilege in PostgreSQL; codetrail's listeners take a notification only
-- as a hint to re-read committed rows, never trust its payload.) Function privileges live in this
-- database's catalog, so other databases of the server are untouched.
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'pg_catalog' AND (p.proname LIKE 'pg\_%advisory\_%' OR p.proname = 'pg_notify')
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f, current_user);
  END LOOP;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'codetrail: % may not revoke advisory locks and pg_notify from PUBLIC (needs a superuser): analytics_reader can still take them', current_user;
END
$$;

-- A reporting session cannot hold what it reads for long: a forgotten open transaction or a runaway
-- query would otherwise keep an ACCESS SHARE lock that queues the indexer's DDL, and the writers behind it.
DO $$
BEGIN
  EXECUTE format('ALTER ROLE analytics_reader IN DATABASE %I SET statement_timeout = %L', current_database(), '60s');
  EXECUTE format('ALTER ROLE analytics_reader IN DATABASE %I SET idle_in_transaction_session_timeout = %L', current_database(), '60s');
  EXECUTE format('ALTER ROLE analytics_reader IN DATABASE %I SET default_transaction_read_only = %L', current_database(), 'on');
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'codetrail: % may not set analytics_reader''s timeouts (needs CREATEROLE)', current_user;
END
$$;
