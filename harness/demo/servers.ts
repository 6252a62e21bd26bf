/** The demo's servers: PostgreSQL and Redis checked first, each failure one line with its fix, then a fresh database of its own. */
import { Redis } from 'ioredis'
import pg from 'pg'
import { databaseUrlFor } from '../services.js'

const CONNECT_TIMEOUT_MS = 3_000
/** A database name the demo may drop and create without quoting. */
const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/

export const POSTGRES_FIX = 'start it (docker compose up -d postgres, or pg_ctlcluster 15 main start), or set DATABASE_URL'
export const REDIS_FIX = 'start it (docker compose up -d redis, or redis-server --daemonize yes), or set REDIS_URL'

function hostPort(url: string, defaultPort: number): string {
  const { hostname, port } = new URL(url)
  return `${hostname}:${port || defaultPort}`
}

function reason(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string }
  return code && !message?.includes(code) ? `${code} ${message ?? ''}`.trim() : (message ?? String(error))
}

/** One line saying why PostgreSQL cannot be used and what to do, or `null` when it answers. */
export async function checkPostgres(databaseUrl: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return null
  } catch (error) {
    const code = (error as { code?: string }).code
    // SQLSTATE class 28 (authorization) and 3D000 (no such database): the server is up, the settings are not.
    if (code?.startsWith('28') || code === '3D000') {
      return `PostgreSQL at ${hostPort(databaseUrl, 5432)} refused the connection (${reason(error)}): set DATABASE_URL to a role that may create databases`
    }
    return `PostgreSQL is not reachable at ${hostPort(databaseUrl, 5432)} (${reason(error)}): ${POSTGRES_FIX}`
  } finally {
    await client.end().catch(() => {})
  }
}

/** One line saying why Redis cannot be used and what to do, or `null` when it answers. */
export async function checkRedisServer(redisUrl: string): Promise<string | null> {
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  redis.on('error', () => {})
  try {
    await redis.connect()
    await redis.ping()
    return null
  } catch (error) {
    return `Redis is not reachable at ${hostPort(redisUrl, 6379)} (${reason(error)}): ${REDIS_FIX}`
  } finally {
    redis.disconnect()
  }
}

/** Whether `name` can be the demo's database name. */
export function isDatabaseName(name: string): boolean {
  return DATABASE_NAME.test(name)
}

/**
 * Drops the database `name` (disconnecting whoever uses it) and creates it empty, on the server of
 * `adminUrl`; resolves to its URL. Only ever the demo's own database, never the one `adminUrl` names.
 */
export async function recreateDatabase(adminUrl: string, name: string): Promise<string> {
  if (!isDatabaseName(name)) throw new Error(`"${name}" is not a plain database name ([a-z_][a-z0-9_]*)`)
  if (new URL(adminUrl).pathname.slice(1) === name)
    throw new Error(`the demo database "${name}" must differ from the one DATABASE_URL names`)
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
  admin.on('error', () => {})
  await admin.connect()
  try {
    await admin.query('SET client_min_messages = warning')
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end().catch(() => {})
  }
  return databaseUrlFor(adminUrl, name)
}
