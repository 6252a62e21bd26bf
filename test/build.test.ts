import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { waitFor } from './helpers/compare.js'
import { ROOT, spawnNode } from '../harness/processes.js'
import { ADMIN_DATABASE_URL, createDatabase, createTestRedisPrefix, dropDatabase, REDIS_URL } from '../harness/services.js'

const CLI = 'dist/scripts/codetrail.js'
const runCli = (args: string[], env: Record<string, string>) => spawnNode({ entry: CLI, args, env: { LOG_LEVEL: 'warn', ...env } })
const cleanups: (() => Promise<unknown>)[] = []
let anvil: Anvil
let database: { name: string; url: string }

beforeAll(async () => {
  await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT })
  anvil = await startAnvil()
  cleanups.push(() => anvil.stop())
  // An empty database: the compiled `migrate` must find and apply every migration itself.
  database = await createDatabase(ADMIN_DATABASE_URL, 'codetrail_test')
  cleanups.push(() => dropDatabase(database.name))
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(join(ROOT, dir).length + 1))
}

describe('npm run build', () => {
  it('compiles the daemon, the codetrail command, the migrations and the SQL definitions into dist, without tests, demo, bench or the devnet', () => {
    const files = filesUnder('dist')
    expect(files).toEqual(
      expect.arrayContaining([
        'src/main.js',
        'scripts/codetrail.js',
        'scripts/migrate.js',
        'scripts/backfill.js',
        'migrations/meta/_journal.json',
      ]),
    )
    expect(files.filter((file) => file.startsWith('src/store/sql/')).sort()).toEqual(
      filesUnder('src/store/sql')
        .map((file) => `src/store/sql/${file}`)
        .sort(),
    )
    expect(files.filter((file) => /devnet|\.test\.js$|^test\/|bench|demo|\.ts$/.test(file))).toEqual([])
  })

  it('codetrail migrate applies every migration from dist', async () => {
    const migrate = runCli(['migrate'], { DATABASE_URL: database.url })
    expect(await migrate.exited).toBe(0)
    expect(migrate.output()).toContain(`migrations applied to ${database.name}`)
    const journal = JSON.parse(readFileSync(join(ROOT, 'migrations/meta/_journal.json'), 'utf8')) as { entries: unknown[] }
    const client = new pg.Client({ connectionString: database.url })
    await client.connect()
    const { rows } = await client
      .query<{ n: number; views: number }>(
        `SELECT (SELECT count(*)::int FROM drizzle.__drizzle_migrations) AS n, (SELECT count(*)::int FROM pg_views WHERE schemaname = 'analytics') AS views`,
      )
      .finally(() => client.end())
    // Every analytics view src/store/sql defines, applied from the copy in dist.
    const definedViews = readdirSync(join(ROOT, 'src/store/sql'))
      .map((file) => readFileSync(join(ROOT, 'src/store/sql', file), 'utf8'))
      .join('\n')
      .match(/CREATE (?:OR REPLACE )?VIEW analytics\./g)!.length
    expect(rows[0]).toEqual({ n: journal.entries.length, views: definedViews })
  })

  it('codetrail start runs the compiled daemon: /healthz answers, SIGTERM stops it cleanly', async () => {
    const redis = createTestRedisPrefix()
    cleanups.push(() => redis.cleanup())
    const port = await freePort()
    const daemon = runCli(['start', '--role', 'all'], {
      RPC_URL: anvil.url,
      DATABASE_URL: database.url,
      REDIS_URL,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: '0',
      PENDING_POLL_MS: '0',
      PORT: String(port),
    })
    cleanups.push(() => daemon.kill('SIGKILL'))
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok === true, 'the compiled daemon')
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })

  it('codetrail with no or an unknown command prints its usage and exits 2', async () => {
    const none = runCli([], {})
    const unknown = runCli(['serve'], {})
    expect(await none.exited).toBe(2)
    expect(await unknown.exited).toBe(2)
    expect(none.output()).toContain('Usage: codetrail [options] [command]')
    expect(unknown.output()).toContain("error: unknown command 'serve'")
  })

  it('codetrail --version prints the package version from dist', async () => {
    const version = runCli(['--version'], {})
    expect(await version.exited).toBe(0)
    expect(version.output().trim()).toBe(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version)
  })
})
