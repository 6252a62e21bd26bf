import { createHash } from 'node:crypto'
import { fillPlaceholders, type Query, type SQL } from 'drizzle-orm'
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres'
import { PgDialect } from 'drizzle-orm/pg-core'
import pg from 'pg'
import * as schema from './schema.js'

// Block numbers, counts and gas fit in a double (< 2^53); refuse silently rounding anything larger.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => {
  const n = Number(value)
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 ${value} exceeds Number.MAX_SAFE_INTEGER`)
  return n
})

const parseTimestamptz = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ)

/**
 * A `timestamptz` as the API writes it (ISO 8601 in UTC, to the millisecond) straight from PostgreSQL's
 * text in a UTC session (`2026-11-05 12:34:56.789+00`), without a `Date` between: a page of 100 rows
 * spends about 0.1 ms on pg's date parser and `toISOString` otherwise (1.09 against 0.07 µs a row on
 * Node 22). Fractions are cut to milliseconds, as a `Date` cuts them; any other form (another session
 * time zone, a year past 9999) goes through the `Date`.
 */
export function isoFromTimestamptz(text: string): string {
  if (text.length < 22 || text[10] !== ' ' || !text.endsWith('+00')) return (parseTimestamptz(text) as Date).toISOString()
  const milliseconds = text.slice(20, Math.min(23, text.length - 3)).padEnd(3, '0')
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${milliseconds}Z`
}

/** Types for a query whose `timestamptz` columns are wanted as ISO strings ({@link isoFromTimestamptz}). */
export const ISO_TIMESTAMPS: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.TIMESTAMPTZ && format !== 'binary'
      ? isoFromTimestamptz
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
}

/**
 * Longest a statement waits for a lock before failing (and its job or loop retrying): a session holding
 * a table lock, say a report's open transaction, then stalls one write for this long, not the index.
 */
export const LOCK_TIMEOUT_MS = 10_000

export type Database = NodePgDatabase<typeof schema> & { $client: pg.Pool }

/** A pool or one of its clients (inside a transaction): what a raw-SQL store function runs on. */
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>

export type Store = {
  pool: pg.Pool
  db: Database
  close: () => Promise<void>
}

export type CreateStoreParameters = {
  databaseUrl: string
  /** Connections in the pool; each running chunk job holds one while it writes. */
  max?: number
  applicationName?: string
  /** Per-statement timeout in ms (the API sets one so no query can starve the others). */
  statementTimeoutMs?: number
  /** Longest wait for a lock, in ms. @default LOCK_TIMEOUT_MS */
  lockTimeoutMs?: number
  /** Longest wait for a free connection of the pool, in ms; unset: as long as it takes. */
  acquireTimeoutMs?: number
  /**
   * Plan each prepared statement once, for every execution (`plan_cache_mode = force_generic_plan`).
   * For the API, whose statements are built to be index-driven whatever their values (each one's
   * generic plan is checked by `test/api-plans.test.ts`): left to itself PostgreSQL planned its page
   * of attributions afresh on every request (a parameter `LIMIT` makes a generic plan look dear),
   * 0.47 ms of planning for 0.42 ms of execution.
   */
  genericPlans?: boolean
  /**
   * Sessions in UTC (`TimeZone = UTC`), so `timestamptz` text comes as `…+00` and
   * {@link isoFromTimestamptz} takes it as it is. Every bucket and day in the SQL names UTC itself;
   * this changes only how times are written.
   */
  utcSessions?: boolean
}

/** Opens a connection pool to PostgreSQL. */
export function createStore({
  databaseUrl,
  max = 10,
  applicationName = 'codetrail',
  statementTimeoutMs,
  lockTimeoutMs = LOCK_TIMEOUT_MS,
  acquireTimeoutMs,
  genericPlans = false,
  utcSessions = false,
}: CreateStoreParameters): Store {
  const settings = [...(genericPlans ? ['plan_cache_mode=force_generic_plan'] : []), ...(utcSessions ? ['TimeZone=UTC'] : [])]
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    application_name: applicationName,
    ...(statementTimeoutMs ? { statement_timeout: statementTimeoutMs } : {}),
    lock_timeout: lockTimeoutMs,
    ...(acquireTimeoutMs ? { connectionTimeoutMillis: acquireTimeoutMs } : {}),
    ...(settings.length > 0 ? { options: settings.map((setting) => `-c ${setting}`).join(' ') } : {}),
  })
  // An idle client's error (e.g. the server restarting) must not crash the process; the pool replaces it.
  pool.on('error', () => {})
  const db = drizzle(pool, { schema })
  return { pool, db, close: () => pool.end() }
}

/** Runs `fn` inside one database transaction on a dedicated client. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  } finally {
    client.release()
  }
}

const dialect = new PgDialect()

/** A statement's text and parameters, with drizzle placeholders where each execution's values go. */
type ShapedStatement = { name: string; text: string; params: unknown[] }
const statements = new Map<string, ShapedStatement>()

/**
 * Runs a query as a named prepared statement, named after its text: each pooled connection parses a
 * text once, and PostgreSQL plans it once too when its generic plan costs no more than planning for
 * the values each time. For the API's frequent reads, whose parse and plan cost more than running them.
 * `build` writes the query with `sql.placeholder(name)` for every value and runs once per `shape` (a
 * key naming everything that changes its text, e.g. which filters it has); each execution only fills
 * `values` in (drizzle's `fillPlaceholders`): building a query and rendering its text cost the API
 * about a tenth of its CPU per list request. Shapes should be a bounded set, as every connection
 * keeps each statement.
 */
export async function queryPrepared<Row extends pg.QueryResultRow>(
  db: Database,
  shape: string,
  build: () => SQL | { toSQL: () => Query },
  values: Record<string, unknown>,
  types?: pg.CustomTypesConfig,
): Promise<Row[]> {
  let statement = statements.get(shape)
  if (!statement) {
    const query = build()
    const { sql: text, params } = 'toSQL' in query ? query.toSQL() : dialect.sqlToQuery(query)
    statement = { name: statementName(text), text, params }
    statements.set(shape, statement)
  }
  const result = await db.$client.query<Row>({
    name: statement.name,
    text: statement.text,
    values: fillPlaceholders(statement.params, values),
    types,
  })
  return result.rows
}

const statementName = (text: string) => `codetrail_${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`
