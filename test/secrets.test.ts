import { createServer as createHttpServer, type Server } from 'node:http'
import { createServer as createTcpServer, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../harness/devnet/anvil.js'
import { createRangeQueue } from '../src/queue/index.js'
import { waitFor } from './helpers/compare.js'
import { listeningUrl, runTs, spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

/** One distinctive string per place a key or password can sit; none may reach any output. */
const SECRET = {
  rpcPath: 'pathkey7c1f0e9a5b',
  rpcQuery: 'querykey2d8e4b6a1c',
  rpcUser: 'userkey9a3c5e7b2d',
  rpcPassword: 'passkey4f6a8c0e2b',
  ws: 'wskey1b3d5f7a9c',
  builder: 'builderkey8e0a2c4f6b',
  database: 'dbpass5c7e9a1b3d',
  redis: 'redispass0f2b4d6a8c',
  admin: 'admintoken3a5c7e9b1d0f',
}
/** Also every fragment long enough to give a key away (a message cut short, a key split by a mask). */
const FRAGMENT_LENGTH = 8
const FRAGMENTS = Object.values(SECRET).flatMap((secret) =>
  Array.from({ length: secret.length - FRAGMENT_LENGTH + 1 }, (_, i) => secret.slice(i, i + FRAGMENT_LENGTH)),
)

function expectNoSecret(what: string, text: string) {
  const found = FRAGMENTS.filter((fragment) => text.includes(fragment))
  expect(found, `${what} leaks: ${text.slice(0, 2000)}`).toEqual([])
}

const NODE_FAULTS = ['refused', 'unauthorized', 'server_error', 'rpc_error', 'hang'] as const
type NodeMode = (typeof NODE_FAULTS)[number] | 'chain_id_only'

const cleanups: (() => Promise<unknown>)[] = []
let db: TestDatabase
let redisPrefix: string
let nodePort: number
let refusedPort: number
let fakeDatabasePort: number

/**
 * A node that fails the way providers do, each answer quoting the request's URL (path, query and
 * all); `chain_id_only` answers `eth_chainId` so a daemon starts, and refuses the rest.
 */
function startFaultyNode(): Promise<Server> {
  const sockets = new Set<Socket>()
  const server = createHttpServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      const mode = request.url!.split('/')[1] as NodeMode
      const calls = [JSON.parse(body)].flat() as { id: number; method: string }[]
      const echo = `key in ${request.url} refused`
      if (mode === 'hang') return
      if (mode === 'chain_id_only' && calls.every((call) => call.method === 'eth_chainId')) {
        const answers = calls.map((call) => ({ jsonrpc: '2.0', id: call.id, result: '0x2105' }))
        return response.end(JSON.stringify(Array.isArray(JSON.parse(body)) ? answers : answers[0]))
      }
      if (mode === 'server_error')
        return response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: echo }))
      if (mode === 'rpc_error') {
        const answers = calls.map((call) => ({ jsonrpc: '2.0', id: call.id, error: { code: -32000, message: echo } }))
        return response.end(JSON.stringify(Array.isArray(JSON.parse(body)) ? answers : answers[0]))
      }
      response.writeHead(401, { 'content-type': 'text/plain' }).end(`401 Unauthorized: ${echo}`)
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

/** A PostgreSQL server that asks for the password in clear and refuses it, quoting it back. */
function startPasswordRefusingDatabase(): Promise<number> {
  const message = (type: string, payload: Buffer) => {
    const head = Buffer.alloc(5)
    head.write(type, 0)
    head.writeInt32BE(payload.length + 4, 1)
    return Buffer.concat([head, payload])
  }
  const server = createTcpServer((socket) => {
    let startup = true
    socket.on('data', (data: Buffer) => {
      if (startup) {
        startup = false
        const cleartextPassword = Buffer.alloc(4)
        cleartextPassword.writeInt32BE(3)
        return socket.write(message('R', cleartextPassword))
      }
      const password = data.subarray(5, data.length - 1).toString()
      const fields = ['SFATAL', 'VFATAL', 'C28P01', `Mpassword authentication failed for user "postgres" with password "${password}"`]
      socket.end(message('E', Buffer.from(`${fields.join('\0')}\0\0`)))
    })
    socket.on('error', () => {})
  })
  cleanups.push(() => new Promise((resolve) => server.close(resolve)))
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)))
}

const rpcUrl = (mode: NodeMode, port = nodePort) =>
  `http://${SECRET.rpcUser}:${SECRET.rpcPassword}@127.0.0.1:${port}/${mode}/v2/${SECRET.rpcPath}?apikey=${SECRET.rpcQuery}`
const databaseUrl = (url: string) => {
  const parsed = new URL(url)
  parsed.password = SECRET.database
  return parsed.toString()
}
const redisUrl = (port = Number(new URL(REDIS_URL).port || 6379)) => `redis://:${SECRET.redis}@127.0.0.1:${port}`

function environment(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    RPC_URL: rpcUrl('chain_id_only'),
    RPC_WS_URL: `ws://127.0.0.1:${refusedPort}/ws/${SECRET.ws}`,
    BUILDER_API_URL: `http://127.0.0.1:${refusedPort}/api/${SECRET.builder}`,
    // PostgreSQL here trusts local connections: the password is sent and ignored.
    DATABASE_URL: databaseUrl(db.url),
    REDIS_URL: redisUrl(),
    REDIS_PREFIX: redisPrefix,
    ADMIN_TOKEN: SECRET.admin,
    ADMIN_UI: '1',
    RPC_TIMEOUT_MS: '300',
    START_BLOCK: '0',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '100',
    LOG_LEVEL: 'debug',
    ...overrides,
  }
}

const ROLES = ['api', 'worker', 'scheduler', 'all'] as const
const DAEMON = { name: 'daemon', entry: 'src/main.ts', args: [] }
const BACKFILL = { name: 'backfill', entry: 'scripts/backfill.ts', args: ['--from', '0', '--to', '5'] }
const MIGRATE = { name: 'migrate', entry: 'scripts/migrate.ts', args: [] }

/** Runs the commands at once, each with its own environment, and returns what each printed. */
async function runAll(runs: { name: string; entry: string; args: string[]; env: Record<string, string> }[]) {
  return Promise.all(runs.map(async (run) => ({ ...run, ...(await runTs(run.entry, run.args, run.env)) })))
}

beforeAll(async () => {
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  redisPrefix = redis.prefix
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  nodePort = ((await startFaultyNode()).address() as { port: number }).port
  refusedPort = await freePort()
  fakeDatabasePort = await startPasswordRefusingDatabase()
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('no secret in any output', () => {
  it('the daemon in each role and the backfill against a node that fails in every way name it by host and port only', async () => {
    // Start-up asks the node the same way in every role: each fault meets one role, and every role one fault.
    const runs = NODE_FAULTS.flatMap((fault, i) => {
      const env = environment({ RPC_URL: fault === 'refused' ? rpcUrl('refused', refusedPort) : rpcUrl(fault) })
      const daemon = {
        name: `daemon --role ${ROLES[i % ROLES.length]} (${fault})`,
        entry: 'src/main.ts',
        args: ['--role', ROLES[i % ROLES.length]!],
        env,
      }
      return [daemon, { name: `backfill (${fault})`, entry: 'scripts/backfill.ts', args: ['--from', '0', '--to', '5'], env }]
    })
    for (const result of await runAll(runs)) {
      const port = result.name.includes('refused') ? refusedPort : nodePort
      expect([result.name, result.code]).toEqual([result.name, 1])
      expect(result.output, result.name).toContain(`the node is not reachable at http://127.0.0.1:${port}/***`)
      expectNoSecret(result.name, result.output)
    }
  })

  it('every command against a database that refuses the password, quoting it, or is not there', async () => {
    const runs = [fakeDatabasePort, refusedPort].flatMap((port) => {
      const env = environment({ DATABASE_URL: `postgres://postgres:${SECRET.database}@127.0.0.1:${port}/codetrail` })
      return [DAEMON, BACKFILL, MIGRATE].map((command) => ({ ...command, name: `${command.name} (db ${port})`, env }))
    })
    const results = await runAll(runs)
    for (const result of results) {
      expect([result.name, result.code]).toEqual([result.name, 1])
      expect(result.output, result.name).toMatch(/password authentication failed|ECONNREFUSED/)
      expectNoSecret(result.name, result.output)
    }
  })

  it('commands against Redis that is not there, and a migration that works', async () => {
    const results = await runAll([
      ...[DAEMON, BACKFILL].map((command) => ({ ...command, env: environment({ REDIS_URL: redisUrl(refusedPort) }) })),
      { ...MIGRATE, env: environment() },
    ])
    for (const result of results) {
      if (result.name === 'migrate') expect([result.code, result.output]).toEqual([0, `migrations applied to ${db.name}\n`])
      else
        expect([result.name, result.code, result.output]).toEqual([
          result.name,
          1,
          expect.stringContaining(`Redis is not reachable at 127.0.0.1:${refusedPort}`),
        ])
      expectNoSecret(result.name, result.output)
    }
  })

  it('invalid configuration lines show no key', async () => {
    const results = await runAll([
      { name: 'RPC_URL', entry: 'src/main.ts', args: [], env: environment({ RPC_URL: rpcUrl('refused').replace('http:', 'ftp:') }) },
      { name: 'RPC_WS_URL', entry: 'src/main.ts', args: [], env: environment({ RPC_WS_URL: rpcUrl('refused') }) },
      {
        name: 'DATABASE_URL',
        entry: 'scripts/migrate.ts',
        args: [],
        env: environment({ DATABASE_URL: `mysql://root:${SECRET.database}@127.0.0.1/x` }),
      },
      {
        name: 'ADMIN_TOKEN',
        entry: 'scripts/backfill.ts',
        args: ['--from', '0', '--to', '1'],
        env: environment({ ADMIN_TOKEN: `${SECRET.admin} x` }),
      },
    ])
    for (const result of results) {
      expect([result.name, result.code, result.output]).toEqual([
        result.name,
        expect.anything(),
        expect.stringContaining(`invalid ${result.name}=`),
      ])
      expect(result.code).not.toBe(0)
      expectNoSecret(result.name, result.output)
    }
  })

  it('running daemons whose node fails after start-up: logs, /readyz, /metrics, the API, the dashboard and failed jobs', async () => {
    const apiPort = await freePort()
    const env = environment({ PORT: String(apiPort) })
    const daemons: Record<string, Spawned> = {
      api: spawnTs('src/main.ts', ['--role', 'api'], env),
      worker: spawnTs('src/main.ts', ['--role', 'worker'], { ...env, METRICS_PORT: '0' }),
      scheduler: spawnTs('src/main.ts', ['--role', 'scheduler'], { ...env, METRICS_PORT: '0' }),
    }
    for (const daemon of Object.values(daemons)) cleanups.push(() => daemon.kill('SIGKILL'))
    const get = async (url: string, init?: RequestInit) => {
      const response = await fetch(url, init).catch(() => null)
      return response ? { status: response.status, body: await response.text() } : { status: 0, body: '' }
    }
    const api = `http://127.0.0.1:${apiPort}`
    await waitFor(async () => (await get(`${api}/healthz`)).status === 200, 'the API')
    const [workerMetrics, schedulerMetrics] = await Promise.all([
      listeningUrl(daemons.worker!, 'metrics listening'),
      listeningUrl(daemons.scheduler!, 'metrics listening'),
    ])

    const enqueued = await runTs('scripts/backfill.ts', ['--from', '0', '--to', '5', '--no-wait'], env)
    expect(enqueued.code).toBe(0)
    const ranges = createRangeQueue({ redisUrl: REDIS_URL, prefix: redisPrefix })
    cleanups.push(() => ranges.close())
    await waitFor(
      async () => (await ranges.queue.getJobs(['delayed', 'failed'])).some((job) => job.failedReason),
      'a failed range job attempt',
    )
    await waitFor(
      async () => /rpc_errors_total\{[^}]*\} [1-9]/.test((await get(`${schedulerMetrics}/metrics`)).body),
      'the follower to fail',
    )
    await waitFor(async () => /pendingLogs subscription/.test(daemons.scheduler!.output()), 'the subscription to fail')

    const readiness = await get(`${api}/readyz`)
    // The api role stays ready on its database; the node is reported down.
    expect([readiness.status, JSON.parse(readiness.body).checks.node.status]).toEqual([200, 'down'])
    const registration = await get(`${api}/v1/agents/builder-codes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ walletAddress: `0x${'ab'.repeat(20)}` }),
    })
    expect([registration.status, JSON.parse(registration.body).error.code]).toEqual([502, 'upstream_error'])
    const admin = { headers: { authorization: `Bearer ${SECRET.admin}` } }
    // The attempt failed for good (an error asking again cannot fix) or waits for its retry.
    const [failed, delayed] = await Promise.all(
      ['failed', 'delayed'].map((status) => get(`${api}/admin/queues/api/queues?activeQueue=ranges&status=${status}`, admin)),
    )
    const dashboard = failed!.body.includes('failedReason') ? failed! : delayed!
    expect([dashboard.status, dashboard.body]).toEqual([200, expect.stringContaining('failedReason')])
    const jobs = await ranges.queue.getJobs(['delayed', 'failed', 'wait', 'active'])
    const answers = {
      readiness: readiness.body,
      registration: registration.body,
      dashboard: dashboard.body,
      jobs: JSON.stringify(jobs.map((job) => [job.failedReason, job.stacktrace])),
      'api metrics': (await get(`${api}/metrics`)).body,
      'worker metrics': (await get(`${workerMetrics}/metrics`)).body,
      'scheduler metrics': (await get(`${schedulerMetrics}/metrics`)).body,
      'unauthorized dashboard': (await get(`${api}/admin/queues`)).body,
    }
    for (const [what, text] of Object.entries(answers)) expectNoSecret(what, text)
    for (const [role, daemon] of Object.entries(daemons)) {
      expect(await daemon.kill('SIGTERM')).toBe(0)
      expect(daemon.output(), role).toMatch(/"level":(40|50)/)
      expectNoSecret(`${role} daemon`, daemon.output())
    }
    expect(enqueued.output).not.toBe('')
    expectNoSecret('backfill --no-wait', enqueued.output)
  })
})
