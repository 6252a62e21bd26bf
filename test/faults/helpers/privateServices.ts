/**
 * Private PostgreSQL and Redis servers for the fault cases that restart them: the machine's shared
 * servers (127.0.0.1:5432 and :6379) serve other tests and engineers and are never touched. Each server
 * lives in a temp dir of its own on a free port; `stop` ends it and removes the dir, and a process
 * `exit` hook does the same if a test fails before its cleanup runs.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { Redis } from 'ioredis'
import { freePort } from '../../../harness/devnet/anvil.js'
import { createStore, runMigrations, type Store } from '../../../src/store/index.js'

const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'
/** The OS user the cluster runs as: PostgreSQL refuses to run as root. */
const PG_USER = 'postgres'
const READY_TIMEOUT_MS = 30_000

/** Synchronous cleanups still owed when the process exits (a failed test, an aborted run). */
const owed = new Set<() => void>()
process.once('exit', () => {
  for (const cleanup of owed) cleanup()
})

export type PrivatePostgres = {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth). */
  adminUrl: string
  port: number
  /** Creates and migrates a database; the returned store is the test's own pool. */
  createDatabase: () => Promise<{ url: string; store: Store }>
  /** Stops the server (fast shutdown: open connections are cut) and starts it again on the same port. */
  restart: (downMs?: number) => Promise<void>
  stopServer: () => Promise<void>
  startServer: () => Promise<void>
  /** Stops the server and removes its data dir. */
  stop: () => Promise<void>
}

function pgCtl(args: string[]) {
  const result = spawnSync('runuser', ['-u', PG_USER, '--', join(PG_BIN, 'pg_ctl'), ...args], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`pg_ctl ${args[0]} failed (${result.status}): ${result.stderr || result.stdout}`)
}

/** A PostgreSQL 15 cluster of its own (initdb in a temp dir owned by `postgres`), on a free port. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'codetrail-faults-pg-'))
  const owner = spawnSync('id', ['-u', PG_USER], { encoding: 'utf8' })
  const group = spawnSync('id', ['-g', PG_USER], { encoding: 'utf8' })
  chownSync(dir, Number(owner.stdout), Number(group.stdout))
  const data = join(dir, 'data')
  const port = await freePort()
  const init = spawnSync(
    'runuser',
    ['-u', PG_USER, '--', join(PG_BIN, 'initdb'), '-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'],
    {
      encoding: 'utf8',
    },
  )
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`initdb failed: ${init.stderr || init.stdout}`)
  }
  // Sockets in the temp dir, TCP on 127.0.0.1 only, and no fsync: a test cluster, not a durable one.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100`
  let running = false

  const stopNow = () => {
    if (running)
      spawnSync('runuser', ['-u', PG_USER, '--', join(PG_BIN, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop'], { stdio: 'ignore' })
    running = false
  }
  const forget = () => {
    stopNow()
    rmSync(dir, { recursive: true, force: true })
  }
  owed.add(forget)

  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`
  async function startServer() {
    pgCtl(['-D', data, '-l', join(dir, 'server.log'), '-o', options, '-w', '-t', String(READY_TIMEOUT_MS / 1000), 'start'])
    running = true
    await waitUntilAccepting(adminUrl)
  }
  async function stopServer() {
    pgCtl(['-D', data, '-m', 'fast', '-w', 'stop'])
    running = false
  }

  try {
    await startServer()
  } catch (error) {
    owed.delete(forget)
    forget()
    throw error
  }
  let databases = 0
  return {
    adminUrl,
    port,
    async createDatabase() {
      const name = `codetrail_fault_${++databases}`
      const admin = new pg.Client({ connectionString: adminUrl })
      await admin.connect()
      await admin.query(`CREATE DATABASE ${name}`)
      await admin.end()
      const url = `postgres://postgres@127.0.0.1:${port}/${name}`
      const store = createStore({ databaseUrl: url, max: 4 })
      await runMigrations(store.pool)
      return { url, store }
    },
    async restart(downMs = 0) {
      await stopServer()
      await sleep(downMs)
      await startServer()
    },
    stopServer,
    startServer,
    async stop() {
      owed.delete(forget)
      forget()
    },
  }
}

async function waitUntilAccepting(url: string) {
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (;;) {
    const client = new pg.Client({ connectionString: url })
    try {
      await client.connect()
      await client.query('SELECT 1')
      await client.end()
      return
    } catch (error) {
      await client.end().catch(() => {})
      if (Date.now() > deadline) throw error
      await sleep(100)
    }
  }
}

export type PrivateRedis = {
  url: string
  port: number
  /** Ends the server (SIGKILL: without persistence its data is gone) and starts an empty one on the same port after `downMs`. */
  restart: (downMs?: number) => Promise<void>
  stop: () => Promise<void>
}

/** A `redis-server` of its own on a free port, without persistence (`--save "" --appendonly no`). */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'codetrail-faults-redis-'))
  const port = await freePort()
  const url = `redis://127.0.0.1:${port}`
  let child: ChildProcess | undefined

  const killNow = () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  const forget = () => {
    killNow()
    rmSync(dir, { recursive: true, force: true })
  }
  owed.add(forget)

  async function startServer() {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: 'ignore',
    })
    const deadline = Date.now() + READY_TIMEOUT_MS
    for (;;) {
      const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
      redis.on('error', () => {})
      try {
        await redis.connect()
        await redis.ping()
        redis.disconnect()
        return
      } catch (error) {
        redis.disconnect()
        if (Date.now() > deadline || child.exitCode !== null) throw error
        await sleep(50)
      }
    }
  }
  async function stopServer() {
    const running = child
    if (!running || running.exitCode !== null || running.signalCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGKILL')
    await exited
  }

  try {
    await startServer()
  } catch (error) {
    owed.delete(forget)
    forget()
    throw error
  }
  return {
    url,
    port,
    async restart(downMs = 0) {
      await stopServer()
      await sleep(downMs)
      await startServer()
    },
    async stop() {
      await stopServer()
      owed.delete(forget)
      forget()
    },
  }
}
