/**
 * codetrail's backfill of the whole fixture, attribution included: the compiled backfill CLI
 * (`dist/scripts/backfill.js`, `npm run build` first) as a child process on a fresh database, timed from its "enqueued" line to its last stored chunk, with its
 * memory and the CPU time of it, the node and the database's backends sampled throughout.
 */
import { mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type pg from 'pg'
import { spawnNode } from '../processes.js'
import { COMPILED_ENTRIES, cpuSecondsOf, monotonicUs, pinToCpus, postgresBackendsOf, watchProcess } from './processStats.js'
import { summarizeCpuProfile, type ProfileSummary } from './profile.js'
import { createBenchDatabase, createRedisPrefix } from '../services.js'

/** Progress fractions at which the worker's RSS is reported, to show whether it stays flat. */
export const RSS_CHECKPOINTS = [0.25, 0.5, 0.75, 1] as const

export type BackfillRunParameters = {
  rpcUrl: string
  /** The node's pid, to count its CPU time. */
  nodePid: number
  adminDatabaseUrl: string
  redisUrl: string
  range: [number, number]
  chunkBlocks: number
  concurrency: number
  /** What the database must hold afterwards. */
  expected: { logs: number; transactions: number; attributions: number }
  /** Write a V8 CPU profile of the backfill process into this directory. */
  cpuProfileDir?: string | undefined
  /** More environment for the backfill process (e.g. `ATTRIBUTION_SCOPE`). */
  env?: Record<string, string> | undefined
  /** CPUs the backfill process is pinned to (`taskset` syntax); unpinned when omitted. */
  cpus?: string | undefined
}

export type BackfillRun = {
  logs: number
  /** From the "enqueued" line to the last chunk stored. */
  workMs: number
  /** From spawn to exit: node start, migrations, planning included. */
  processMs: number
  logsPerSec: number
  peakRssMiB: number
  /** RSS when the given share of blocks was stored. */
  rssAt: { share: number; rssMiB: number }[]
  /** CPU seconds during the run: codetrail's process (after its start-up), the node, the database's backends. */
  cpu: Record<string, number>
  /** CPU seconds of codetrail's start-up: loading modules, migrations, planning. */
  startupCpuSec: number
  /** Milliseconds per chunk job, fetch to commit. */
  chunkMs: number[]
  /** JSON-RPC calls the backfill sent, by method, and its HTTP requests (from its summary line). */
  nodeCalls: Record<string, number>
  nodeRequests: number
  /** The gas fill after the ranges (receipts of attributed transactions): its time, node calls and requests, and what it left owed. */
  gas: { ms: number; nodeCalls: Record<string, number>; nodeRequests: number; left: number }
  cpuProfile: string | undefined
  /** The work's time span on the monotonic clock (µs), to cut the profile to it. */
  workWindowUs: [number, number]
}

type StderrLine = { msg?: string; duration_ms?: number; level?: number }
type StdoutEvent = {
  event: string
  jobs?: number
  done?: boolean
  blocksDone?: number
  blocksTotal?: number
  logs?: number
  nodeCalls?: Record<string, number>
  nodeRequests?: number
  gas?: { seconds: number; left: number; nodeCalls: Record<string, number>; nodeRequests: number }
}

/** Runs the backfill CLI over `range` on a database of its own, checks what it stored, and drops the database. */
export async function runBackfill(parameters: BackfillRunParameters): Promise<BackfillRun> {
  const { range, expected } = parameters
  const db = await createBenchDatabase(parameters.adminDatabaseUrl, 'backfill')
  const redis = createRedisPrefix(parameters.redisUrl, 'ct_bench_backfill')
  try {
    let enqueuedAt: number | undefined
    let startupCpuSec = 0
    let lastStoredAt: number | undefined
    let loggedLogs = 0
    let nodeCalls: Record<string, number> | undefined
    let nodeRequests = 0
    let gas: BackfillRun['gas'] | undefined
    const chunkMs: number[] = []
    const progress: { at: number; share: number }[] = []
    const started = performance.now()
    const child = spawnNode({
      entry: COMPILED_ENTRIES.backfill,
      args: ['--from', String(range[0]), '--to', String(range[1]), '--json'],
      env: {
        RPC_URL: parameters.rpcUrl,
        DATABASE_URL: db.url,
        REDIS_URL: parameters.redisUrl,
        REDIS_PREFIX: redis.prefix,
        CHUNK_BLOCKS: String(parameters.chunkBlocks),
        WORKER_CONCURRENCY: String(parameters.concurrency),
        // Each stored chunk logs one info line: its arrival marks the end of the work.
        LOG_LEVEL: 'info',
        ...parameters.env,
      },
      nodeFlags: parameters.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${parameters.cpuProfileDir}`] : [],
      onStdoutLine: (line, at) => {
        const event = parseJson<StdoutEvent>(line)
        if (event?.event === 'message' && event.jobs !== undefined) {
          enqueuedAt = at
          startupCpuSec = cpuSecondsOf(child.pid) ?? 0
        }
        if (event?.event === 'message' && event.done && event.nodeCalls) {
          nodeCalls = event.nodeCalls
          nodeRequests = event.nodeRequests ?? 0
          if (event.gas)
            gas = {
              ms: event.gas.seconds * 1000,
              nodeCalls: event.gas.nodeCalls,
              nodeRequests: event.gas.nodeRequests,
              left: event.gas.left,
            }
        }
        if (event?.event === 'progress' && event.blocksDone !== undefined && event.blocksTotal)
          progress.push({ at, share: event.blocksDone / event.blocksTotal })
      },
      onStderrLine: (line, at) => {
        const entry = parseJson<StderrLine & { logs?: number }>(line)
        if (entry?.msg === 'range stored') {
          lastStoredAt = at
          loggedLogs += entry.logs ?? 0
          if (entry.duration_ms !== undefined) chunkMs.push(entry.duration_ms)
        }
      },
    })
    if (parameters.cpus !== undefined && !pinToCpus(child.pid, parameters.cpus))
      throw new Error(`could not pin the backfill to CPUs ${parameters.cpus} with taskset`)
    const watch = watchProcess(child.pid, { node: () => [parameters.nodePid], postgres: () => postgresBackendsOf(db.name) })
    const code = await child.exited
    const processMs = performance.now() - started
    watch.stop()
    if (code !== 0) throw new Error(`backfill exited with ${code}:\n${child.stderrTail()}`)
    if (enqueuedAt === undefined || lastStoredAt === undefined || nodeCalls === undefined || gas === undefined) {
      throw new Error(`backfill printed no "enqueued", "range stored", or "done" line with the gas fill:\n${child.stderrTail()}`)
    }

    await checkStored(db.pool, expected)
    const cpu = watch.cpu()
    const workMs = lastStoredAt - enqueuedAt
    const rssAt = RSS_CHECKPOINTS.map((share) => {
      const at = progress.find((p) => p.share >= share)?.at ?? lastStoredAt!
      const sample = watch.samples.reduce((best, s) => (Math.abs(s.at - at) < Math.abs(best.at - at) ? s : best))
      return { share, rssMiB: sample.rssMiB }
    })
    return {
      logs: loggedLogs,
      workMs,
      processMs,
      logsPerSec: (expected.logs / workMs) * 1000,
      peakRssMiB: watch.peakMiB(),
      rssAt,
      cpu: { ...cpu, codetrail: (cpu.codetrail ?? 0) - startupCpuSec },
      startupCpuSec,
      chunkMs,
      nodeCalls,
      nodeRequests,
      gas,
      workWindowUs: [monotonicUs(enqueuedAt), monotonicUs(lastStoredAt)],
      cpuProfile: parameters.cpuProfileDir ? mainThreadProfile(parameters.cpuProfileDir, child.pid) : undefined,
    }
  } finally {
    await db.drop().catch(() => {})
    await redis.cleanup().catch(() => {})
  }
}

/** One more backfill with a V8 CPU profile of its main thread, summarised over `functions` during its work. */
export async function runProfiledBackfill(
  parameters: BackfillRunParameters,
  functions: readonly string[],
): Promise<ProfileSummary & { path: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'codetrail-bench-profile-'))
  const profiled = await runBackfill({ ...parameters, cpuProfileDir: dir })
  if (!profiled.cpuProfile) throw new Error(`node wrote no CPU profile into ${dir}`)
  return { ...summarizeCpuProfile(profiled.cpuProfile, functions, profiled.workWindowUs), path: profiled.cpuProfile }
}

async function checkStored(pool: pg.Pool, expected: BackfillRunParameters['expected']): Promise<void> {
  const { rows } = await pool.query<{ logs: string; transactions: string; attributions: string; gas_missing: string }>(
    `SELECT (SELECT count(*) FROM logs) AS logs, (SELECT count(*) FROM transactions) AS transactions,
       (SELECT count(*) FROM attributions) AS attributions, (SELECT count(*) FROM attributions WHERE gas_used IS NULL) AS gas_missing`,
  )
  const stored = { logs: Number(rows[0]!.logs), transactions: Number(rows[0]!.transactions), attributions: Number(rows[0]!.attributions) }
  for (const key of ['logs', 'transactions', 'attributions'] as const) {
    if (stored[key] !== expected[key]) throw new Error(`backfill stored ${stored[key]} ${key}, expected ${expected[key]}`)
  }
  if (Number(rows[0]!.gas_missing) > 0) throw new Error(`backfill left ${rows[0]!.gas_missing} attributions without gas used`)
}

// Node names profiles CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; thread 0 is the main one (tsx's loader has its own).
function mainThreadProfile(dir: string, pid: number): string | undefined {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && f.includes(`.${pid}.0.`))
  return file ? join(dir, file) : undefined
}

function parseJson<T>(line: string): T | undefined {
  if (!line.startsWith('{')) return undefined
  try {
    return JSON.parse(line) as T
  } catch {
    return undefined
  }
}
