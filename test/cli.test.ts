import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { createBuilderCodeClient } from '../src/api/index.js'
import { startFaultProxy } from '../harness/fixtures/faultProxy.js'
import { waitFor } from './helpers/compare.js'
import { ROOT, runTs, spawnTs } from '../harness/processes.js'
import {
  ADMIN_DATABASE_URL,
  createDatabase,
  createTestDatabase,
  createTestRedisPrefix,
  dropDatabase,
  REDIS_URL,
  type TestDatabase,
} from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
const JOURNAL = JSON.parse(readFileSync(join(ROOT, 'migrations/meta/_journal.json'), 'utf8')) as { entries: { tag: string }[] }
let anvil: Anvil
let db: TestDatabase

/** Runs `codetrail …` from source to completion, keeping stdout and stderr apart. */
function codetrail(args: string[], env: Record<string, string> = {}): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/codetrail.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code: code ?? signal ?? 'unknown', stdout, stderr })))
}

/** An empty database of its own (no migration applied), dropped after the file. */
async function emptyDatabase(): Promise<{ name: string; url: string }> {
  const database = await createDatabase(ADMIN_DATABASE_URL, 'codetrail_test')
  cleanups.push(() => dropDatabase(database.name))
  return database
}

beforeAll(async () => {
  anvil = await startAnvil()
  db = await createTestDatabase()
  cleanups.push(
    () => anvil.stop(),
    () => db.drop(),
  )
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('codetrail command line', () => {
  it('--help and --version on every command print to stdout and exit 0', async () => {
    const commands = [[], ['start'], ['migrate'], ['migrate', 'status'], ['backfill']]
    const results = await Promise.all(
      commands.flatMap((command) => [codetrail([...command, '--help']), codetrail([...command, '--version'])]),
    )
    commands.forEach((command, i) => {
      const [help, version] = [results[2 * i]!, results[2 * i + 1]!]
      const name = ['codetrail', ...command].join(' ')
      expect([name, help.code, help.stderr]).toEqual([name, 0, ''])
      expect(help.stdout, name).toContain(`Usage: ${name} [options]`)
      expect([name, version.code, version.stdout, version.stderr]).toEqual([name, 0, `${VERSION}\n`, ''])
    })
    expect(results[0]!.stdout).toMatch(/start \[options\][\s\S]*migrate \[options\][\s\S]*backfill \[options\]/)
    expect(results[2]!.stdout).toContain('--role <role>')
    expect(results[8]!.stdout).toMatch(/--from <block>[\s\S]*--to <block>[\s\S]*--address[\s\S]*--topic0[\s\S]*--no-wait[\s\S]*--json/)
  })

  it('migrate --help applies nothing', async () => {
    const empty = await emptyDatabase()
    expect((await codetrail(['migrate', '--help'], { DATABASE_URL: empty.url })).code).toBe(0)
    const status = await codetrail(['migrate', 'status'], { DATABASE_URL: empty.url })
    expect(status.stdout).toContain(`0 applied, ${JOURNAL.entries.length} pending`)
  })

  it('an unknown flag or command names it and exits 2', async () => {
    const [start, backfill, status, command] = await Promise.all([
      codetrail(['start', '--bogus']),
      codetrail(['backfill', '--from', '1', '--to', '2', '--chunk', '5']),
      codetrail(['migrate', 'status', '--apply']),
      codetrail(['serve']),
    ])
    expect([start.code, start.stdout]).toEqual([2, ''])
    expect(start.stderr).toContain("error: unknown option '--bogus'")
    expect([backfill.code, backfill.stdout]).toEqual([2, ''])
    expect(backfill.stderr).toContain("error: unknown option '--chunk'")
    expect(status.code).toBe(2)
    expect(status.stderr).toContain("error: unknown option '--apply'")
    expect(command.code).toBe(2)
    expect(command.stderr).toContain("error: unknown command 'serve'")
  })

  it('a configuration error exits 1 with one line naming the variable, the masked value and what is allowed', async () => {
    const key = 'k3yThatMustNotShow9'
    const [rpc, token, timeout] = await Promise.all([
      codetrail(['start', '--role', 'api'], { RPC_URL: `ftp://user:${key}@node.example.com/v2/${key}` }),
      codetrail(['migrate'], { ADMIN_TOKEN: `${key} x` }),
      codetrail(['backfill', '--from', '1', '--to', '2'], { SHUTDOWN_TIMEOUT_MS: 'soon' }),
    ])
    expect([rpc.code, rpc.stdout, rpc.stderr]).toEqual([
      1,
      '',
      'codetrail: invalid RPC_URL="ftp://node.example.com/***": expected a http or https URL\n',
    ])
    expect([token.code, token.stdout, token.stderr]).toEqual([
      1,
      '',
      'codetrail: invalid ADMIN_TOKEN="***": expected at least 16 printable characters, no spaces\n',
    ])
    expect([timeout.code, timeout.stderr]).toEqual([
      1,
      'codetrail: invalid SHUTDOWN_TIMEOUT_MS="soon": expected an integer from 1 to 3600000\n',
    ])
  })

  it('a bad config file, named by --config or CODETRAIL_CONFIG, exits 1 with one line naming the key path and what is allowed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codetrail-cli-'))
    const path = join(dir, 'codetrail.config.yaml')
    writeFileSync(
      path,
      'chains:\n  - id: 8453\n    name: base\n    rpc: https://base.example/v2/${BASE_KEY}\n    preconfirmations: sometimes\n',
    )
    const [start, backfill] = await Promise.all([
      codetrail(['start', '--config', path], { BASE_KEY: 'k3yThatMustNotShow9' }),
      codetrail(['backfill', '--from', '1', '--to', '2'], { CODETRAIL_CONFIG: path }),
    ])
    expect([start.code, start.stdout, start.stderr]).toEqual([
      1,
      '',
      `codetrail: invalid ${path}: chains[0].preconfirmations="sometimes": expected auto, on, off\n`,
    ])
    expect([backfill.code, backfill.stderr]).toEqual([
      1,
      `codetrail: invalid ${path}: chains[0].rpc: \${BASE_KEY} is not set in the environment; expected it set, or the value written out\n`,
    ])
  })

  it('migrate status lists applied and pending migrations without applying any', async () => {
    const empty = await emptyDatabase()
    const before = await codetrail(['migrate', 'status'], { DATABASE_URL: empty.url })
    expect([before.code, before.stderr]).toEqual([0, ''])
    expect(before.stdout).toBe(
      `${JOURNAL.entries.map((entry) => `pending  ${entry.tag}\n`).join('')}pending  views, functions and triggers of src/store/sql\n${empty.name}: 0 applied, ${JOURNAL.entries.length} pending\n`,
    )
    // Still nothing applied: a second look sees the same.
    expect((await codetrail(['migrate', 'status'], { DATABASE_URL: empty.url })).stdout).toBe(before.stdout)

    expect((await codetrail(['migrate'], { DATABASE_URL: empty.url })).code).toBe(0)
    const after = await codetrail(['migrate', 'status'], { DATABASE_URL: empty.url })
    expect(after.code).toBe(0)
    expect(after.stdout).toBe(
      `${JOURNAL.entries.map((entry) => `applied  ${entry.tag}\n`).join('')}applied  views, functions and triggers of src/store/sql\n${empty.name}: ${JOURNAL.entries.length} applied, 0 pending\n`,
    )
  })
})

describe('codetrail start --role api', () => {
  it('starts on its database alone: no node reachable, the chain read from the database', async () => {
    await db.store.pool.query(`INSERT INTO sync_filters (chain_id, filter_id, addresses, topics) VALUES (8453, 'all', '{}', '{}')`)
    const [port, deadNode] = [await freePort(), await freePort()]
    const redis = createTestRedisPrefix()
    cleanups.push(() => redis.cleanup())
    const env = { DATABASE_URL: db.url, RPC_URL: `http://127.0.0.1:${deadNode}`, REDIS_URL, REDIS_PREFIX: redis.prefix, PORT: String(port) }
    const api = spawnTs('src/main.ts', ['--role', 'api'], env)
    cleanups.push(() => api.kill('SIGKILL'))
    const base = `http://127.0.0.1:${port}`
    await waitFor(async () => (await fetch(`${base}/healthz`).catch(() => null))?.ok === true, 'the api role')

    const wallet = '0x00000000000000000000000000000000000c0de5'
    const registered = await createBuilderCodeClient(base).register(wallet)
    const { rows } = await db.store.pool.query(`SELECT chain_id FROM builder_codes WHERE wallet_address = $1`, [wallet])
    expect(rows).toEqual([{ chain_id: 8453 }])
    const attributions = await fetch(`${base}/v1/attributions?builderCode=${registered.builderCode}`)
    expect([attributions.status, await attributions.json()]).toEqual([200, expect.objectContaining({ items: [] })])
    const ready = await fetch(`${base}/readyz`)
    expect(ready.status).toBe(200)
    expect(((await ready.json()) as { checks: { database: { status: string }; node: { status: string } } }).checks).toMatchObject({
      database: { status: 'ok' },
      node: { status: 'down' },
    })
    expect(await api.kill('SIGTERM')).toBe(0)
  })

  it('does not migrate unless MIGRATE_ON_START=1: on an empty database it says so and exits 1', async () => {
    const empty = await emptyDatabase()
    const result = await runTs('src/main.ts', ['--role', 'api'], {
      DATABASE_URL: empty.url,
      RPC_URL: `http://127.0.0.1:${await freePort()}`,
      PORT: '0',
    })
    expect(result.code).toBe(1)
    expect(result.output).toContain('has no codetrail tables: run codetrail migrate, or set MIGRATE_ON_START=1')
    expect((await codetrail(['migrate', 'status'], { DATABASE_URL: empty.url })).stdout).toContain(
      `0 applied, ${JOURNAL.entries.length} pending`,
    )
  })
})

describe('codetrail start: stopping', () => {
  /** A worker holding a range job (the genesis block) whose eth_getLogs the node never answers: its stop waits on that job. */
  async function workerWithStuckJob(env: Record<string, string>) {
    const proxy = await startFaultProxy({ upstream: anvil.url, faults: { eth_getLogs: { slow: { delayMs: 600_000 } } } })
    cleanups.push(() => proxy.stop())
    const redis = createTestRedisPrefix()
    cleanups.push(() => redis.cleanup())
    const base = { RPC_URL: proxy.url, DATABASE_URL: db.url, REDIS_URL, REDIS_PREFIX: redis.prefix, RPC_TIMEOUT_MS: '600000' }
    const enqueued = await runTs('scripts/backfill.ts', ['--from', '0', '--to', '0', '--no-wait'], base)
    expect(enqueued.code, enqueued.output).toBe(0)
    const worker = spawnTs('src/main.ts', ['--role', 'worker'], { ...base, ...env, LOG_LEVEL: 'info' })
    cleanups.push(() => worker.kill('SIGKILL'))
    await waitFor(async () => (proxy.stats.calls.eth_getLogs ?? 0) > 0, 'the job to ask for its logs')
    return worker
  }

  it('a stop that outlasts SHUTDOWN_TIMEOUT_MS exits 1 naming the part that hung', async () => {
    const worker = await workerWithStuckJob({ SHUTDOWN_TIMEOUT_MS: '1000' })
    worker.child.kill('SIGTERM')
    expect(await worker.exited, worker.output()).toBe(1)
    expect(worker.output()).toContain('codetrail: shutdown did not finish within SHUTDOWN_TIMEOUT_MS=1000 ms: worker did not stop')
    expect(worker.output()).not.toContain('"msg":"stopped"')
  })

  it('a second signal exits at once, without waiting for the part still stopping', async () => {
    const worker = await workerWithStuckJob({ SHUTDOWN_TIMEOUT_MS: '3600000' })
    worker.child.kill('SIGTERM')
    await waitFor(async () => worker.output().includes('"msg":"shutting down"'), 'the first signal to be taken')
    worker.child.kill('SIGINT')
    expect(await worker.exited, worker.output()).toBe(1)
    expect(worker.output()).toMatch(/codetrail: SIGINT while stopping: exiting at once without waiting for [a-z-]+\n/)
    expect(worker.output()).not.toContain('shutdown did not finish')
  })
})
