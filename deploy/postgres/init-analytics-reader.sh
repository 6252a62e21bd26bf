#!/bin/sh
# Runs once, when the data volume is first initialised: the login Grafana's datasource uses. The migrations
# keep this role to SELECT on the analytics views (0001, 0012) and take advisory locks and NOTIFY from it (0018).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v reader_password="$ANALYTICS_READER_PASSWORD" <<'SQL'
SELECT format('CREATE ROLE analytics_reader LOGIN PASSWORD %L', :'reader_password')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'analytics_reader') \gexec
SELECT format('ALTER ROLE analytics_reader LOGIN PASSWORD %L', :'reader_password') \gexec
SQL
