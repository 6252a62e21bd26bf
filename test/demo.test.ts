import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { decodeAttribution } from '../src/attribution/index.js'
import { freePort } from '../harness/devnet/index.js'
import { sleep } from '../src/utils/loop.js'
import { parseDuration, parseOptions } from '../harness/demo/options.js'
import { databaseUrlFor } from '../harness/services.js'
import { pickSuffixKind, suffixFor, SUFFIX_WEIGHTS, UNREGISTERED_CODE, WALLET_CODE, type SuffixKind } from '../harness/demo/suffixes.js'
import { aboutLines, renderFrame, renderLine, type Figures, type ViewContext } from '../harness/demo/view.js'
import { runTs, spawnTs } from '../harness/processes.js'
import { ADMIN_DATABASE_URL, createTestRedisPrefix, REDIS_URL } from '../harness/services.js'

const DEMO_DURATION_MS = 40_000
const POLL_MS = 250
const CALLDATA = '0xa9059cbb' as const

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('demo suffixes', () => {
  const decode = (kind: SuffixKind, n = 0) => {
    const suffix = suffixFor(kind, 'bc_agent001', n)
    return suffix === undefined ? null : decodeAttribution(`${CALLDATA}${suffix.slice(2)}`)
  }

  it('carries the agent code in schema 0, beside an unregistered code, or in schema 2; none carries nothing', () => {
    expect(decode('schema0')).toEqual({ ok: true, schemaId: 0, codes: ['bc_agent001'] })
    expect(decode('schema0-two-codes')).toEqual({ ok: true, schemaId: 0, codes: ['bc_agent001', UNREGISTERED_CODE] })
    const registry = { address: '0x00000000000000000000000000000000000000aa', chainId: 31338 } as const
    expect(decodeAttribution(`${CALLDATA}${suffixFor('schema1', 'bc_agent001', 0, registry)!.slice(2)}`)).toMatchObject({
      ok: true,
      schemaId: 1,
      codes: ['bc_agent001'],
    })
    expect(decode('schema2')).toMatchObject({ ok: true, schemaId: 2, codes: ['bc_agent001', WALLET_CODE] })
    expect(suffixFor('none', 'bc_agent001', 0)).toBeUndefined()
  })

  it('makes every malformed variant one the indexer records as malformed', () => {
    for (const n of [0, 1, 2]) expect(decode('malformed', n)).toMatchObject({ ok: false })
  })

  it('picks kinds by their weights, which cover [0, 1)', () => {
    expect(Object.values(SUFFIX_WEIGHTS).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 10)
    expect(pickSuffixKind(0)).toBe('schema0')
    expect(pickSuffixKind(0.999999)).toBe('malformed')
    const kinds = new Set(Array.from({ length: 1000 }, (_, i) => pickSuffixKind(i / 1000)))
    expect([...kinds].sort()).toEqual(Object.keys(SUFFIX_WEIGHTS).sort())
  })
})

describe('demo options and view', () => {
  it('reads durations and refuses names that are not plain', () => {
    expect([parseDuration('90'), parseDuration('90s'), parseDuration('2m'), parseDuration('1500ms')]).toEqual([
      90_000, 90_000, 120_000, 1_500,
    ])
    expect(() => parseDuration('soon')).toThrow(/--duration/)
    expect(parseOptions([], { DEMO_DURATION_MS: '40000' }).durationMs).toBe(40_000)
    expect(parseOptions(['--duration', '1m'], {}).durationMs).toBe(60_000)
    expect(parseOptions([], {})).toMatchObject({ database: 'codetrail_demo', redisPrefix: 'codetrail-demo', durationMs: undefined })
    expect(() => parseOptions([], { DEMO_DATABASE: 'demo; DROP DATABASE postgres' })).toThrow(/DEMO_DATABASE/)
    expect(() => parseOptions([], { DEMO_REDIS_PREFIX: 'a b' })).toThrow(/DEMO_REDIS_PREFIX/)
    expect(() => parseOptions([], { PORT: '70000' })).toThrow(/PORT/)
    expect(parseOptions([], {})).toMatchObject({ chain: 'base', canonicalLag: 0, divergence: 0 })
    expect(parseOptions(['--chain', 'op'], {})).toMatchObject({ chain: 'op', chains: ['op'] })
    expect(parseOptions(['--chains', 'base,op', '--lag', '2'], {})).toMatchObject({
      chain: 'base',
      chains: ['base', 'op'],
      canonicalLag: 2,
    })
    expect(() => parseOptions(['--chains', 'base,base'], {})).toThrow(
      '--chains must name two different profiles (base,op), got "base,base"',
    )
    expect(() => parseOptions(['--chains', 'base,op', '--chain', 'op'], {})).toThrow('--chain and --chains exclude each other')
    expect(() => parseOptions(['--chain', 'unichain'], {})).toThrow('--chain must be one of base, op, got "unichain"')
    expect(() => parseOptions(['--lag', '3'], {})).toThrow('--lag and --divergence shape pre-confirmations: they need --chain op')
    expect(parseOptions(['--chain', 'op', '--lag', '3', '--divergence', '20%'], {})).toMatchObject({ canonicalLag: 3, divergence: 0.2 })
    expect(parseOptions(['--chain', 'op', '--divergence', '0.25'], {}).divergence).toBe(0.25)
    expect(() => parseOptions(['--chain', 'op', '--lag', '6'], {})).toThrow(/--lag/)
    expect(() => parseOptions(['--chain', 'op', '--divergence', '120%'], {})).toThrow(/--divergence/)
    expect(databaseUrlFor('postgres://u:p@db:5433/postgres?sslmode=disable', 'codetrail_demo')).toBe(
      'postgres://u:p@db:5433/codetrail_demo?sslmode=disable',
    )
  })

  it('shows the figures, who owns each code, the API address and lines to try', () => {
    const figures: Figures = {
      chainHead: 120,
      indexedHead: 119,
      finalizedBlock: 111,
      logs: 1234,
      pendingLogs: 7,
      removedLogs: 3,
      logsPerSecond: 12.5,
      reorgs: 2,
      transactions: { attributed: 300, withoutSuffix: 40, malformed: 12 },
      registry: { registered: 9, notRegistered: 0, unknown: 1 },
      codes: [
        {
          builderCode: 'bc_agent001',
          walletAddress: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
          pending: 1,
          confirmed: 20,
          finalized: 30,
          removed: 0,
        },
        { builderCode: UNREGISTERED_CODE, walletAddress: null, pending: 0, confirmed: 2, finalized: 3, removed: 1 },
      ],
    }
    const context: ViewContext = {
      startedAt: 0,
      chain: { profile: 'op', blockTimeMs: 2_000, preconfirmations: true },
      apiUrl: 'http://127.0.0.1:8080',
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/codetrail_demo',
      databaseName: 'codetrail_demo',
      redisPrefix: 'codetrail-demo',
      devnetUrl: 'http://127.0.0.1:8545',
      logFile: '/tmp/codetrail-demo.log',
      agents: new Map([['bc_agent001', { name: 'agent-1', address: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' }]]),
      stats: {
        transactions: 400,
        userOperations: 30,
        bySuffix: { schema0: 240, 'schema0-two-codes': 40, schema1: 10, schema2: 60, none: 35, malformed: 15 },
        reorgs: 2,
        dropped: 1,
        errors: 0,
      },
    }
    const frame = renderFrame(figures, context, 65_000).join('\n')
    expect(frame).toContain('running 1:05')
    expect(frame).toMatch(/op: 2 s blocks, pre-confirmed through pending · head 120 · indexed 119 · finalized 111/)
    expect(frame).toMatch(/1,234 stored · 7 pending · 3 removed · 12\.5 logs\/s/)
    expect(frame).toMatch(/2 handled by codetrail \(2 caused\)/)
    expect(frame).toContain('240 schema 0 · 40 schema 0 with two codes · 10 schema 1 · 60 schema 2 · 35 none · 15 malformed')
    expect(frame).toContain('schema 1, as the registry each names answers: 9 registered · 0 not registered · 1 unknown')
    expect(frame).toMatch(/bc_agent001\s+agent-1 0x7099…79c8\s+1\s+20\s+30\s+0/)
    expect(frame).toMatch(/demoapp\s+\(not registered here\)\s+0\s+2\s+3\s+1/)
    const about = aboutLines(context).join('\n')
    expect(about).toContain('API       http://127.0.0.1:8080')
    expect(about).toContain("curl -s 'http://127.0.0.1:8080/v1/attributions?builderCode=bc_agent001&limit=3'")
    expect(about).toContain('curl -s http://127.0.0.1:8080/v1/agents/builder-codes/0x70997970c51812dc3a010c7d01b50e0d17dc79c8')
    expect(about).toMatch(
      /psql 'postgres:\/\/postgres@127\.0\.0\.1:5432\/codetrail_demo' -c "SELECT .* FROM analytics\.attributed_transactions/,
    )
    const withPassword = aboutLines({ ...context, databaseUrl: 'postgres://postgres:hunter22@127.0.0.1:5432/codetrail_demo' }).join('\n')
    expect(withPassword).toContain("psql 'postgres://postgres@127.0.0.1:5432/codetrail_demo'")
    expect(withPassword).not.toContain('hunter22')
    expect(about).toContain('Redis prefix codetrail-demo')
    expect(renderLine(figures, context, 65_000)).toBe(
      '[1:05] op head 120 indexed 119 | logs 1234 (7 pending, 3 removed) 12.5/s | attributions pending 1 confirmed 22 finalized 33 removed 1 | ' +
        'reorgs 2 (caused 2) dropped 1 | sent 400 (30 user ops) | codes bc_agent001=51 demoapp=5',
    )

    // On a chain without pre-confirmations the view names it and shows no pending figure at all.
    const base = { ...context, chain: { profile: 'base', blockTimeMs: 200, preconfirmations: false } }
    const baseFrame = renderFrame(figures, base, 65_000).join('\n')
    expect(baseFrame).toContain('base: 200 ms blocks, no pre-confirmations · head 120')
    expect(baseFrame).toMatch(/1,234 stored · 3 removed · 12\.5 logs\/s/)
    expect(baseFrame).not.toMatch(/pending/)
    expect(baseFrame).toMatch(/bc_agent001\s+agent-1 0x7099…79c8\s+20\s+30\s+0\n/)
    expect(renderLine(figures, base, 65_000)).toMatch(
      /^\[1:05\] base head 120 indexed 119 \| logs 1234 \(3 removed\) 12\.5\/s \| attributions confirmed 22 finalized 33 removed 1 \|/,
    )
  })
})

describe('npm run demo', () => {
  const database = `codetrail_test_demo_${randomBytes(4).toString('hex')}`
  const redis = createTestRedisPrefix()

  const logFile = join(tmpdir(), `${database}.log`)
  const logTail = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n') : '')

  afterAll(async () => {
    rmSync(logFile, { force: true })
    const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await admin.end()
    await redis.cleanup()
  })

  it('refuses an unknown --chain with a line naming the flag, and exits 2', async () => {
    const { code, output } = await runTs('harness/demo/main.ts', ['--chain', 'unichain'], {})
    expect(code).toBe(2)
    expect(output).toContain('demo: --chain must be one of base, op, got "unichain"')
    expect(output).toContain('usage: npm run demo [-- --chain <base|op> | --chains base,op]')
  })

  it('says in one line per service how to fix an unreachable PostgreSQL or Redis, and exits 1', async () => {
    const [pgPort, redisPort] = await Promise.all([freePort(), freePort()])
    const { code, output } = await runTs('harness/demo/main.ts', [], {
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/postgres`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    })
    expect(code).toBe(1)
    const lines = output.trim().split('\n').sort()
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(
      new RegExp(`^demo: PostgreSQL is not reachable at 127\\.0\\.0\\.1:${pgPort} .*: start it \\(docker compose up -d postgres`),
    )
    expect(lines[1]).toMatch(
      new RegExp(`^demo: Redis is not reachable at 127\\.0\\.0\\.1:${redisPort} .*: start it \\(docker compose up -d redis`),
    )
  })

  it('runs for a bounded time: attributions pending then confirmed, a reorg handled, nothing left running', async () => {
    const [apiPort, rpcPort] = await Promise.all([freePort(), freePort()])
    const demo = spawnTs('harness/demo/main.ts', ['--chain', 'op'], {
      DATABASE_URL: ADMIN_DATABASE_URL,
      REDIS_URL,
      DEMO_DATABASE: database,
      DEMO_REDIS_PREFIX: redis.prefix,
      DEMO_DURATION_MS: String(DEMO_DURATION_MS),
      DEMO_LOG_FILE: logFile,
      PORT: String(apiPort),
      DEMO_RPC_PORT: String(rpcPort),
    })

    // Pending rows last a block (2 s) before they are confirmed: watch the demo's database while it runs.
    const seen = new Set<string>()
    const watcher = new pg.Pool({ connectionString: databaseUrlFor(ADMIN_DATABASE_URL, database), max: 1 })
    watcher.on('error', () => {})
    let exited = false
    void demo.exited.then(() => (exited = true))
    while (!exited) {
      try {
        const { rows } = await watcher.query<{ status: string }>(
          'SELECT DISTINCT status FROM analytics.attributed_transactions WHERE NOT removed',
        )
        for (const row of rows) seen.add(row.status)
      } catch {
        // The database or its views do not exist yet.
      }
      await sleep(POLL_MS)
    }
    await watcher.end()

    const output = demo.output()
    expect(await demo.exited, `${output}\n${logTail()}`).toBe(0)
    expect(output).toMatch(/stopped: nothing the demo started is running/)
    expect(output).toMatch(/pending divergence: \d+ of [1-9]\d* confirmed pre-confirmed logs/)
    expect([...seen].sort(), output).toEqual(expect.arrayContaining(['pending', 'confirmed']))

    const store = new pg.Client({ connectionString: databaseUrlFor(ADMIN_DATABASE_URL, database) })
    await store.connect()
    try {
      const one = async (sql: string) => Number(Object.values((await store.query(sql)).rows[0] as object)[0])
      expect(await one('SELECT count(*) FROM reorgs')).toBeGreaterThanOrEqual(1)
      expect(await one('SELECT count(*) FROM analytics.logs WHERE removed')).toBeGreaterThan(0)
      expect(
        await one("SELECT count(*) FROM analytics.attributed_transactions WHERE status IN ('confirmed', 'finalized') AND NOT removed"),
      ).toBeGreaterThan(0)
      // Agents registered through the API: their attributions carry their wallets; user operations are attributed to their senders.
      expect(await one('SELECT count(*) FROM builder_codes')).toBe(9)
      expect(await one('SELECT count(*) FROM analytics.attributed_transactions WHERE wallet_address IS NOT NULL')).toBeGreaterThan(0)
      expect(
        await one('SELECT count(*) FROM analytics.attributed_transactions WHERE user_op_hash IS NOT NULL AND wallet_address = sender'),
      ).toBeGreaterThan(0)
      expect(await one('SELECT count(*) FROM analytics.attributed_transactions WHERE schema_id = 2')).toBeGreaterThan(0)
      expect(await one('SELECT count(*) FROM transactions WHERE malformed_reason IS NOT NULL')).toBeGreaterThan(0)
      expect(await one('SELECT count(*) FROM transactions WHERE NOT has_suffix')).toBeGreaterThan(0)
    } finally {
      await store.end()
    }

    const anvil = /anvil pid (\d+) at http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
    expect(anvil, output).not.toBeNull()
    expect(isRunning(Number(anvil![1]))).toBe(false)
    for (const port of [rpcPort, apiPort, Number(anvil![2])]) expect(await refused(port), `port ${port}`).toBe(true)
  })
})
