/**
 * The tip at Base's shape: the compiled daemon (`--role scheduler`) follows the devnet's
 * `base` profile while this process mines it at a steady rate with Base's density (25 user transactions and
 * 100 logs a block, 2 % with an ERC-8021 suffix, a reorg of depth 1–3 about every minute). Each block's
 * first visibility is the moment its mine returned; it is readable once every log of it is in
 * `analytics.logs` under its hash. Node calls are what the devnet's endpoint answered (this process talks
 * to anvil directly); pending rows written are counted by a trigger on `logs`. A step-up run then raises
 * the block rate until the daemon's lag grows or the node itself falls short of the rate.
 */
import pg from 'pg'
import { concat, type Address, type Hex } from 'viem'
import { createDevnet, type Devnet, type DevnetCalls } from '../devnet/index.js'
import { sleep } from '../../src/utils/loop.js'
import { anvilAccount, artifacts, deployContract, encodeEmitMany } from '../fixtures/chain.js'
import { fixtureSuffix, FIXTURE_PARAMETERS } from './fixture.js'
import { spawnNode } from '../processes.js'
import { COMPILED_ENTRIES, postgresBackendsOf, watchProcess, type ProcessWatch } from './processStats.js'
import { createRawRpc, type RawRpc } from './rawRpc.js'
import { percentile } from './report.js'
import { createBenchDatabase, createRedisPrefix } from '../services.js'

export const TIP_TX_PER_BLOCK = 25
const LOGS_PER_TX = 4
const SUFFIX_EVERY = 50
/** anvil's ten funded, unlocked accounts send the load; nonces are kept here. */
const SENDERS = 10
const TX_GAS = 200_000n
const MAX_FEE = 100_000_000_000n
const PRIORITY_FEE = 1_000_000_000n
const WATCH_MS = 20
/** "Behind" in the longest-stretch figure: more than this many blocks between the node's head and the daemon's. */
const BEHIND_BLOCKS = 10
const WARMUP_TIMEOUT_MS = 120_000
const DRAIN_MS = 10_000
/** A step sustains its rate when the daemon's lag grew by at most this many blocks over it. */
const LAG_GROWTH_BLOCKS = 10
/** The node reached its ceiling when it mined less than this share of the step's rate. */
const NODE_SHORTFALL = 0.9
const RSS_POINTS = 5

/** How the daemon learns of new heads: polling `latest` over HTTP, or the devnet's `newHeads` over WebSocket (`RPC_WS_URL`). */
export type TipHeads = 'poll' | 'ws'

export type TipRunParameters = {
  adminDatabaseUrl: string
  redisUrl: string
  scope: 'logs' | 'blocks'
  heads: TipHeads
  /** Measured at `blocksPerSec`. */
  durationMs: number
  blocksPerSec: number
  reorgEveryMs: number
  /** Block rates of the step-up run, each for `stepMs`; empty: none. */
  steps: number[]
  stepMs: number
  say: (line: string) => void
}

export type TipStep = {
  targetPerSec: number
  /** Blocks a second the node (devnet and anvil, on this machine, beside the daemon) delivered. */
  nodePerSec: number
  lagStart: number
  lagEnd: number
  lagMax: number
  /** The daemon's lag grew by more than LAG_GROWTH_BLOCKS over the step. */
  lagGrew: boolean
  /** The node delivered less than NODE_SHORTFALL of the rate: its ceiling, not the daemon's. */
  nodeShort: boolean
}

/**
 * Where a block's tip delay went, in ms, from the daemon's per-step log line (`head follower: blocks`):
 * `busy` waiting for the step before it to end, `idle` waiting for the next poll or notification,
 * `head` reading the newest head, `read` the step's batch of bodies and logs, `attribute`, `store` the
 * database transaction, `seen` from its commit to this process's next look at the database.
 */
export type DelayParts = { busy: number; idle: number; head: number; read: number; attribute: number; store: number; seen: number }

export type TipRun = {
  scope: 'logs' | 'blocks'
  heads: TipHeads
  blocks: number
  logs: number
  reorgs: number
  blocksPerSec: number
  /** From a block's mine returning to all its logs readable, over the blocks with logs. */
  delay: { blocks: number; p50Ms: number; p99Ms: number; maxMs: number; unreadable: number }
  /** Mean breakdown over every measured block, and over the slowest 1 % (at or above the p99); null without step lines. */
  breakdown: { all: DelayParts; slowest: DelayParts; blocks: number } | null
  longestBehindMs: number
  calls: { perBlock: number; requestsPerBlock: number; byMethod: Record<string, number> }
  cpu: { codetrailMsPerBlock: number; postgresMsPerBlock: number; codetrailCorePct: number; postgresCorePct: number }
  /** Daemon RSS at evenly spaced points of the measured run, in MiB. */
  rssMiB: number[]
  pendingRowsWritten: number
  steps: TipStep[]
  /** Highest rate the node delivered in a step over which the daemon's lag did not grow; null when none. */
  sustainedPerSec: number | null
  /** Highest rate the node delivered in the step-up run. */
  nodeCeilingPerSec: number
  daemonPeakRssMiB: number
}

type MeasuredBlock = { number: number; hash: Hex; visibleAt: number; expectedLogs: number; readableAt?: number; orphaned?: boolean }

/** One stored step as the daemon logged it, its start on this process's `performance.now()` clock. */
type LoggedStep = {
  from: number
  to: number
  startedAt: number
  head: number
  read: number
  attribute: number
  store: number
  finalize: number
}

const STEP_LINE = 'head follower: blocks'

/** A daemon stdout line's stored step, or null for any other line. */
function parseStep(line: string): LoggedStep | null {
  if (!line.includes(STEP_LINE)) return null
  try {
    const entry = JSON.parse(line) as { msg?: string; from?: number; to?: number; timings?: Omit<LoggedStep, 'from' | 'to'> }
    if (entry.msg !== STEP_LINE || entry.from === undefined || entry.to === undefined || !entry.timings) return null
    return { from: entry.from, to: entry.to, ...entry.timings, startedAt: entry.timings.startedAt - performance.timeOrigin }
  } catch {
    return null
  }
}

/** Counts every row the daemon writes into `logs` as pending (on a chain without pre-confirmations: none). */
const PENDING_TRIGGER_SQL = [
  'CREATE TABLE bench_pending_writes (n bigint NOT NULL)',
  'INSERT INTO bench_pending_writes VALUES (0)',
  `CREATE FUNCTION bench_count_pending() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN UPDATE bench_pending_writes SET n = n + 1; RETURN NULL; END $$`,
  `CREATE TRIGGER bench_pending_writes AFTER INSERT OR UPDATE ON logs
     FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION bench_count_pending()`,
]

export async function runTip(parameters: TipRunParameters): Promise<TipRun> {
  const { say } = parameters
  const cleanups: (() => Promise<unknown>)[] = []
  try {
    // Mined here, so the rate can step up and each block's visibility is known to the millisecond.
    const devnet = await createDevnet({ profile: 'base', blockTimeMs: 0 })
    cleanups.push(() => devnet.stop())
    const anvil = createRawRpc(devnet.anvilUrl, 4)
    cleanups.push(async () => anvil.close())
    const db = await createBenchDatabase(parameters.adminDatabaseUrl, 'tip')
    cleanups.push(() => db.drop())
    const redis = createRedisPrefix(parameters.redisUrl, 'ct_bench_tip')
    cleanups.push(() => redis.cleanup())

    const emitter = await deployWhileMining(devnet)
    const chainId = Number(await anvil.call<string>('eth_chainId', []))
    const load = createLoad(anvil, emitter)
    await load.syncNonces()

    const steps: LoggedStep[] = []
    const daemon = spawnNode({
      entry: COMPILED_ENTRIES.daemon,
      args: ['--role', 'scheduler'],
      onStdoutLine: (line) => {
        const step = parseStep(line)
        if (step) steps.push(step)
      },
      env: {
        RPC_URL: devnet.url,
        ...(parameters.heads === 'ws' ? { RPC_WS_URL: devnet.wsUrl } : {}),
        DATABASE_URL: db.url,
        REDIS_URL: parameters.redisUrl,
        REDIS_PREFIX: redis.prefix,
        ATTRIBUTION_SCOPE: parameters.scope,
        // Info: each stored step's line carries its timings, read for the delay's breakdown.
        LOG_LEVEL: 'info',
      },
    })
    cleanups.push(() => daemon.kill())
    const watch = watchProcess(daemon.pid, { postgres: () => postgresBackendsOf(db.name) })
    cleanups.push(async () => watch.stop())

    const blocks: MeasuredBlock[] = []
    let head = 0
    let measuring = false
    const mineBlock = async () => {
      const sent = await load.send(TIP_TX_PER_BLOCK)
      const mined = await devnet.mine({ timestampMs: Date.now() })
      const visibleAt = performance.now()
      head = Number(mined.number)
      if (measuring) blocks.push({ number: head, hash: mined.hash, visibleAt, expectedLogs: sent * LOGS_PER_TX })
      return sent
    }

    const readable = new pg.Pool({ connectionString: db.url, max: 1 })
    readable.on('error', () => {})
    cleanups.push(() => readable.end())
    let liveBlock: number | null = null
    let anyReadable = false
    const lagSamples: { at: number; lag: number }[] = []
    let stopped = false
    const watcher = (async () => {
      while (!stopped) {
        const started = performance.now()
        await look().catch(() => {})
        await sleep(Math.max(0, WATCH_MS - (performance.now() - started)))
      }
    })()
    cleanups.push(async () => {
      stopped = true
      await watcher
    })
    async function look() {
      const state = await readable.query<{ live_block: string | null }>('SELECT live_block FROM chain_state WHERE chain_id = $1', [chainId])
      liveBlock = state.rows[0]?.live_block == null ? null : Number(state.rows[0].live_block)
      const now = performance.now()
      if (liveBlock !== null) lagSamples.push({ at: now, lag: Math.max(0, head - liveBlock) })
      const outstanding = blocks.filter((b) => b.readableAt === undefined && !b.orphaned && b.expectedLogs > 0)
      if (outstanding.length === 0 && anyReadable) return
      const from = outstanding.length > 0 ? Math.min(...outstanding.map((b) => b.number)) : Math.max(0, head - 5)
      const { rows } = await readable.query<{ block_hash: string; n: number }>(
        'SELECT block_hash, count(*)::int AS n FROM analytics.logs WHERE chain_id = $1 AND block_number >= $2 AND NOT removed GROUP BY block_hash',
        [chainId, from],
      )
      const at = performance.now()
      if (rows.length > 0) anyReadable = true
      const counts = new Map(rows.map((row) => [row.block_hash.toLowerCase(), row.n]))
      for (const b of outstanding) if ((counts.get(b.hash.toLowerCase()) ?? 0) >= b.expectedLogs) b.readableAt = at
    }

    say(`  warm-up: mining ${parameters.blocksPerSec} blocks/s until the daemon has stored a log…`)
    const warmupDeadline = Date.now() + WARMUP_TIMEOUT_MS
    await runAtRate(parameters.blocksPerSec, () => anyReadable || Date.now() > warmupDeadline, mineBlock)
    if (!anyReadable) throw new Error(`the daemon stored no log within ${WARMUP_TIMEOUT_MS} ms:\n${daemon.stderrTail()}`)
    // Caught up before measuring: the warm-up backlog is not the tip's delay.
    await waitFor(() => liveBlock !== null && liveBlock >= head, 30_000)
    await db.pool.query(PENDING_TRIGGER_SQL.join(';\n'))

    say(
      `  measuring ${parameters.durationMs / 1000} s at ${parameters.blocksPerSec} blocks/s (${TIP_TX_PER_BLOCK} txs, ${TIP_TX_PER_BLOCK * LOGS_PER_TX} logs a block), ATTRIBUTION_SCOPE=${parameters.scope}, heads by ${parameters.heads === 'ws' ? 'newHeads' : 'polling'}…`,
    )
    measuring = true
    const callsBefore = devnet.calls()
    const cpuBefore = watch.cpu()
    const started = performance.now()
    let nextReorg = started + Math.min(parameters.reorgEveryMs / 2, parameters.durationMs / 2)
    let reorgs = 0
    let logs = 0
    await runAtRate(
      parameters.blocksPerSec,
      () => performance.now() - started >= parameters.durationMs,
      async () => {
        if (performance.now() >= nextReorg) {
          nextReorg += parameters.reorgEveryMs
          const depth = 1 + (reorgs % 3)
          const replaced = await devnet.reorg(depth)
          reorgs++
          for (const b of blocks) if (b.number > Number(replaced.number) - depth) b.orphaned = true
          await load.syncNonces()
          return
        }
        logs += (await mineBlock()) * LOGS_PER_TX
      },
    )
    const elapsedMs = performance.now() - started
    const calls = diffCalls(callsBefore, devnet.calls())
    const cpuAfter = watch.cpu()
    measuring = false
    await waitFor(() => blocks.every((b) => b.readableAt !== undefined || b.orphaned || b.expectedLogs === 0), DRAIN_MS)

    const mined = blocks.length
    const withLogs = blocks.filter((b) => !b.orphaned && b.expectedLogs > 0)
    const delays = withLogs
      .filter((b) => b.readableAt !== undefined)
      .map((b) => b.readableAt! - b.visibleAt)
      .sort((a, b) => a - b)
    const byMethod = Object.fromEntries(Object.entries(calls.calls).map(([method, n]) => [method, n / mined]))
    const cpuSeconds = (group: string) => (cpuAfter[group] ?? 0) - (cpuBefore[group] ?? 0)
    const pending = await db.pool.query<{ n: string }>('SELECT n FROM bench_pending_writes')

    const breakdown = delayBreakdown(withLogs, steps)

    const rates: TipStep[] = []
    for (const rate of parameters.steps) {
      say(`  step-up: ${rate} blocks/s for ${parameters.stepMs / 1000} s…`)
      const step = await runStep(rate, parameters.stepMs, mineBlock, () => (liveBlock === null ? head : head - liveBlock), lagSamples)
      rates.push(step)
      if (step.lagGrew || step.nodeShort) break
      // Let the daemon catch up, so the next step starts from the tip.
      await waitFor(() => liveBlock !== null && liveBlock >= head, 10_000)
    }
    watch.stop()

    return {
      scope: parameters.scope,
      heads: parameters.heads,
      blocks: mined,
      logs,
      reorgs,
      blocksPerSec: (mined * 1000) / elapsedMs,
      delay: {
        blocks: withLogs.length,
        p50Ms: percentile(delays, 50),
        p99Ms: percentile(delays, 99),
        maxMs: delays.at(-1) ?? Number.NaN,
        unreadable: withLogs.length - delays.length,
      },
      breakdown,
      longestBehindMs: longestStretch(
        lagSamples.filter((s) => s.at >= started && s.at <= started + elapsedMs),
        (s) => s.lag > BEHIND_BLOCKS,
      ),
      calls: {
        perBlock: Object.values(calls.calls).reduce((a, b) => a + b, 0) / mined,
        requestsPerBlock: calls.requests / mined,
        byMethod,
      },
      cpu: {
        codetrailMsPerBlock: (cpuSeconds('codetrail') * 1000) / mined,
        postgresMsPerBlock: (cpuSeconds('postgres') * 1000) / mined,
        codetrailCorePct: (cpuSeconds('codetrail') * 100_000) / elapsedMs,
        postgresCorePct: (cpuSeconds('postgres') * 100_000) / elapsedMs,
      },
      rssMiB: rssPoints(watch, started, started + elapsedMs),
      pendingRowsWritten: Number(pending.rows[0]?.n ?? 0),
      steps: rates,
      sustainedPerSec: rates.filter((s) => !s.lagGrew).reduce<number | null>((best, s) => Math.max(best ?? 0, s.nodePerSec), null),
      nodeCeilingPerSec: Math.max(0, ...rates.map((s) => s.nodePerSec)),
      daemonPeakRssMiB: watch.peakMiB(),
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
  }
}

/**
 * Each readable block's delay split along the step that stored it (the last logged step covering its
 * height that began before it was readable) and the step before that one; means over every block and
 * over the slowest 1 %.
 */
function delayBreakdown(
  blocks: readonly MeasuredBlock[],
  steps: readonly LoggedStep[],
): { all: DelayParts; slowest: DelayParts; blocks: number } | null {
  const ended = (step: LoggedStep) => step.startedAt + step.head + step.read + step.attribute + step.store + step.finalize
  const parts: { delay: number; parts: DelayParts }[] = []
  for (const block of blocks) {
    if (block.readableAt === undefined) continue
    let at = steps.length - 1
    while (at >= 0 && !(steps[at]!.from <= block.number && block.number <= steps[at]!.to && steps[at]!.startedAt <= block.readableAt)) at--
    if (at < 0) continue
    const step = steps[at]!
    const previousEnd = at > 0 ? ended(steps[at - 1]!) : -Infinity
    const waited = Math.max(0, step.startedAt - block.visibleAt)
    const busy = Math.max(0, Math.min(previousEnd, step.startedAt) - block.visibleAt)
    const committed = step.startedAt + step.head + step.read + step.attribute + step.store
    parts.push({
      delay: block.readableAt - block.visibleAt,
      parts: {
        busy,
        idle: waited - busy,
        head: step.head,
        read: step.read,
        attribute: step.attribute,
        store: step.store,
        seen: Math.max(0, block.readableAt - committed),
      },
    })
  }
  if (parts.length === 0) return null
  const mean = (of: typeof parts): DelayParts => {
    const sum: DelayParts = { busy: 0, idle: 0, head: 0, read: 0, attribute: 0, store: 0, seen: 0 }
    for (const { parts: p } of of) for (const key of Object.keys(sum) as (keyof DelayParts)[]) sum[key] += p[key] / of.length
    return sum
  }
  const p99 = percentile(
    parts.map((p) => p.delay).sort((a, b) => a - b),
    99,
  )
  return { all: mean(parts), slowest: mean(parts.filter((p) => p.delay >= p99)), blocks: parts.length }
}

/** Deploys the Emitter on a devnet that mines only on request: mines every 100 ms until the deployment lands. */
async function deployWhileMining(devnet: Devnet): Promise<Address> {
  let deployed = false
  const mining = (async () => {
    while (!deployed) {
      await sleep(100)
      await devnet.mine()
    }
  })()
  try {
    return await deployContract(devnet.url, artifacts.Emitter)
  } finally {
    deployed = true
    await mining
  }
}

/** Emitter calls from anvil's unlocked accounts, signed by anvil; every 50th carries an ERC-8021 suffix. */
function createLoad(anvil: RawRpc, emitter: Address) {
  const senders = Array.from({ length: SENDERS }, (_, i) => anvilAccount(i).address)
  const nonces = new Map<Address, number>()
  let i = 0
  return {
    async syncNonces() {
      const counts = await anvil.batch<Hex>(senders.map((address) => ({ method: 'eth_getTransactionCount', params: [address, 'latest'] })))
      senders.forEach((address, k) => nonces.set(address, Number(counts[k])))
    },
    /** Sends `count` transactions in one batch straight to anvil (the devnet queued the block's deposits already); resolves how many it took. */
    async send(count: number): Promise<number> {
      const calls = Array.from({ length: count }, () => {
        const from = senders[i % SENDERS]!
        const nonce = nonces.get(from)!
        nonces.set(from, nonce + 1)
        const call = encodeEmitMany(LOGS_PER_TX, i * LOGS_PER_TX, '0x')
        const suffix = fixtureSuffix({ ...FIXTURE_PARAMETERS.full, suffixEvery: SUFFIX_EVERY }, i)
        i++
        return {
          method: 'eth_sendTransaction',
          params: [
            {
              from,
              to: emitter,
              data: suffix ? concat([call, suffix]) : call,
              nonce: `0x${nonce.toString(16)}`,
              gas: `0x${TX_GAS.toString(16)}`,
              maxFeePerGas: `0x${MAX_FEE.toString(16)}`,
              maxPriorityFeePerGas: `0x${PRIORITY_FEE.toString(16)}`,
            },
          ],
        }
      })
      try {
        await anvil.batch(calls)
        return count
      } catch {
        // A refused transaction leaves a nonce gap: start again from the chain's nonces.
        await this.syncNonces()
        return 0
      }
    },
  }
}

/** Runs `step` at `perSec` a second, on a fixed schedule (a late step is not made up twice), until `done()`. */
async function runAtRate(perSec: number, done: () => boolean, step: () => Promise<unknown>): Promise<number> {
  const intervalMs = 1000 / perSec
  const started = performance.now()
  let n = 0
  while (!done()) {
    await step()
    n++
    const due = started + n * intervalMs
    const now = performance.now()
    if (due > now) await sleep(due - now)
    else n = Math.floor((now - started) / intervalMs)
  }
  return n
}

async function runStep(
  rate: number,
  stepMs: number,
  mineBlock: () => Promise<number>,
  lag: () => number,
  lagSamples: { at: number; lag: number }[],
): Promise<TipStep> {
  const lagStart = lag()
  const started = performance.now()
  let mined = 0
  await runAtRate(
    rate,
    () => performance.now() - started >= stepMs,
    async () => {
      await mineBlock()
      mined++
    },
  )
  const ended = performance.now()
  // The daemon stores the last blocks a poll later: the lag a moment after the step is the one it ended with.
  await sleep(WATCH_MS * 3)
  const lagEnd = lag()
  const nodePerSec = (mined * 1000) / (ended - started)
  const lagMax = Math.max(lagStart, ...lagSamples.filter((s) => s.at >= started && s.at <= ended).map((s) => s.lag))
  return {
    targetPerSec: rate,
    nodePerSec,
    lagStart,
    lagEnd,
    lagMax,
    lagGrew: lagEnd - lagStart > LAG_GROWTH_BLOCKS,
    nodeShort: nodePerSec < rate * NODE_SHORTFALL,
  }
}

function diffCalls(before: DevnetCalls, after: DevnetCalls): DevnetCalls {
  const calls: Record<string, number> = {}
  for (const [method, n] of Object.entries(after.calls)) {
    const d = n - (before.calls[method] ?? 0)
    if (d > 0) calls[method] = d
  }
  return { requests: after.requests - before.requests, calls }
}

/** The longest time `samples` (in time order) stayed where `inside` holds. */
function longestStretch<T extends { at: number }>(samples: readonly T[], inside: (sample: T) => boolean): number {
  let longest = 0
  let since: number | undefined
  for (const sample of samples) {
    if (inside(sample)) {
      since ??= sample.at
      longest = Math.max(longest, sample.at - since)
    } else since = undefined
  }
  return longest
}

function rssPoints(watch: ProcessWatch, from: number, to: number): number[] {
  const samples = watch.samples.filter((s) => s.at >= from && s.at <= to)
  if (samples.length === 0) return []
  return Array.from({ length: RSS_POINTS }, (_, k) => samples[Math.round((k * (samples.length - 1)) / (RSS_POINTS - 1))]!.rssMiB)
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition() && Date.now() < deadline) await sleep(WATCH_MS)
}
