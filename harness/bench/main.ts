/**
 * npm run bench -- [--quick] [--profile] [--pending-ws] [--duration 300s] [--step 15s] [--heads poll,ws] [--scope logs,blocks] [all | backfill pending decode api webhooks blocks tip]
 *
 * The benchmarks of codetrail's backfill, pending, decode, API, webhook and tip paths, each figure beside the limits of this machine measured in the same
 * run on the same data: prints a table and writes `harness/bench/results.json`. Named parts run alone and
 * the other figures in `harness/bench/results.json` are kept. Without names: backfill, pending and decode
 * (about 4 minutes); `api` seeds 10 million attributions first (about 8 minutes more), so it runs
 * when named or with `all`. `--quick` runs a smaller fixture and 1 million attributions, every part
 * by default, in under five minutes; `webhooks` (when named, with `all` or `--quick`) measures delivery
 * latency from commit to a healthy receiver's 2xx at 200 events/s beside a bare HTTP POST loop; `blocks`
 * (likewise) the backfill with `ATTRIBUTION_SCOPE=blocks` at Base's density beside the block-body fetch
 * limit; `--profile` adds a CPU-profiled backfill and prints where its time goes; `--pending-ws`
 * gives the daemon the devnet's WebSocket (RPC_WS_URL) in the pending part (printed, not written); `tip`
 * (when named or with `all`) follows the devnet's `base` profile at Base's density for `--duration`
 * (default 300 s, 60 s with --quick) in logs and then blocks scope (`--scope`), each with the head polled and
 * then announced by `newHeads` over the devnet's WebSocket (`--heads`), each with a step-up run of `--step` per rate.
 * Environment: DATABASE_URL (a server where it may create and drop `codetrail_bench_*` databases),
 * REDIS_URL. See harness/bench/README.md.
 */
import { spawnSync } from 'node:child_process'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { startAnvil } from '../devnet/anvil.js'
import { runMigrations } from '../../src/store/index.js'
import { runApiLatency, type ApiRun } from './api.js'
import { runBackfill, runProfiledBackfill, type BackfillRun } from './backfill.js'
import { BLOCK_BODY_IN_FLIGHT, runBlocksScope, type BlocksScopePart } from './blocksScope.js'
import { CPUS_BESIDE_THE_NODE, withNodeOnOwnCore } from './processStats.js'
import { createRawRpc } from './rawRpc.js'
import { measureCopyLimit, measureRpcLimit, type BodyRead, type CopyLimit, type RpcLimit } from './limits.js'
import { runPendingLatency, type PendingRun } from './pending.js'
import { runWebhookLatency, type WebhookRun } from './webhooks.js'
import { PRUNE_BATCH } from '../../src/delivery/dispatcher.js'
import { runTip, TIP_TX_PER_BLOCK, type DelayParts, type TipHeads, type TipRun } from './tip.js'
import { parseDuration } from '../demo/options.js'
import type { ProfileSummary } from './profile.js'
import { count, formatTable, readResults, round, writeResults, type TableRow, type TipResults } from './report.js'
import { createBenchDatabase } from '../services.js'
import { benchDecode, type DecodeBenchCase } from './decode.js'
import { ensureFixture, type Fixture } from './fixture.js'

const PARTS = ['backfill', 'pending', 'decode', 'api', 'webhooks', 'blocks', 'tip'] as const
type Part = (typeof PARTS)[number]
// Seeding 10 million attributions takes minutes: the full API figures run when asked for.
const DEFAULT_FULL_PARTS: Part[] = ['backfill', 'pending', 'decode']

const RESULTS_PATH = fileURLToPath(new URL('./results.json', import.meta.url))
const CHUNK_BLOCKS = 1000
// The indexer's default WORKER_CONCURRENCY: chunk jobs in flight.
const CONCURRENCY = 4
const PENDING_POLL_MS = 200
const BACKFILL_ROUNDS = 3
const WATCH_MS = 20
// The full fixture is a 635 MiB state dump: seconds on a quiet machine, minutes on a busy one.
const FIXTURE_LOAD_TIMEOUT_MS = 300_000

const TARGETS = {
  backfillRatio: 0.85,
  pendingP99Ms: 300,
  decodeNoSuffixPerSec: 1_000_000,
  apiP99Ms: 50,
  /** API process and PostgreSQL backends together. */
  apiCpuMsPerRequest: 1.5,
  webhookP99Ms: 500,
  blocksScopeRatio: 0.8,
}
/** The tip's targets at 5 blocks/s on this machine with the node on it. */
const TIP_TARGETS = { p99Ms: 300, callsPerBlock: 3, requestsPerBlock: 2.5, corePct: 10, sustainedPerSec: 25 }
const TIP_BLOCKS_PER_SEC = 5
const TIP_REORG_EVERY_MS = 60_000
const TIP_STEPS = [5, 10, 15, 25, 35, 50]

const SIZES = {
  full: {
    pendingMs: 30_000,
    decodeMs: 1_000,
    apiRows: 10_000_000,
    apiSessions: 1_000,
    webhookMs: 30_000,
    triggerCopyRows: 100_000,
    retentionRows: 1_000_000,
    tipMs: 300_000,
    tipStepMs: 20_000,
  },
  quick: {
    pendingMs: 12_000,
    decodeMs: 300,
    apiRows: 1_000_000,
    apiSessions: 400,
    webhookMs: 10_000,
    triggerCopyRows: 20_000,
    retentionRows: 100_000,
    tipMs: 60_000,
    tipStepMs: 10_000,
  },
}
const WEBHOOK_EVENTS_PER_SEC = 200
const PENDING_TX_PER_SEC = 10
// Concurrent clients, each its own connection, over this many seeded builder codes.
const API_CLIENTS = 8
const API_CODES = 100
// Pages of a code's attributions one session reads (the first, then nextCursor).
const API_PAGES = 5

// Functions whose inclusive share of the backfill's CPU the profile summary reports.
const PROFILED_FUNCTIONS = [
  'processRange',
  'getLogs',
  'JSON.parse',
  'toLogRows',
  'toCopyData',
  'insertCanonicalLogs',
  'forLogs',
  'attributeTransaction',
  'decodeAttribution',
  'knownTransactions',
  'upsertTransactions',
  'upsertAttributions',
]

type BackfillPart = {
  fixture: Fixture
  loadMs: number
  /** The first RPC limit, once per way of reading bodies; the fastest one is the limit's. */
  tried: RpcLimit[]
  copyIndexed: CopyLimit
  /**
   * The same rounds with the node on a core of its own, as a node on another machine would be: anvil
   * pinned to CPU 0, the backfill and the limits' client to the others, PostgreSQL unpinned. Absent on
   * a machine of one CPU or without `taskset`.
   */
  nodeOwnCore?: BackfillRounds
  profile?: ProfileSummary & { path: string }
} & BackfillRounds

/** RPC and COPY limits around the backfill runs: run i sits between limits i and i + 1. */
type BackfillRounds = { rpc: RpcLimit[]; copy: CopyLimit[]; runs: BackfillRun[] }

const say = (message: string) => process.stderr.write(`${message}\n`)

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      'pending-ws': { type: 'boolean', default: false },
      duration: { type: 'string' },
      step: { type: 'string' },
      heads: { type: 'string', default: 'poll,ws' },
      scope: { type: 'string', default: 'logs,blocks' },
      'api-rows': { type: 'string' },
      'api-db': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: true,
    strict: true,
  })
  const unknown = positionals.filter((p) => p !== 'all' && !PARTS.includes(p as Part))
  if (values.help || unknown.length > 0) {
    if (unknown.length > 0) say(`bench: unknown part ${unknown.join(', ')}`)
    say(
      `usage: npm run bench -- [--quick] [--profile] [--pending-ws] [--duration <300s|5m>] [--step <20s>] [--heads poll,ws] [--scope logs,blocks] [--api-rows <n>] [--api-db codetrail_bench_<name>] [all | ${PARTS.join(' ')}]`,
    )
    return values.help ? 0 : 2
  }
  const size = values.quick ? 'quick' : 'full'
  const parts = new Set<Part>(
    positionals.includes('all') ? PARTS : positionals.length > 0 ? (positionals as Part[]) : values.quick ? PARTS : DEFAULT_FULL_PARTS,
  )
  const sizing = SIZES[size]
  let tipMs: number
  let tipStepMs: number
  try {
    tipMs = values.duration === undefined ? sizing.tipMs : parseDuration(values.duration)
    tipStepMs = values.step === undefined ? sizing.tipStepMs : parseDuration(values.step)
  } catch (error) {
    say(`bench: ${(error as Error).message}`)
    return 2
  }
  const apiRowCount = values['api-rows'] === undefined ? sizing.apiRows : Number(values['api-rows'])
  if (!Number.isSafeInteger(apiRowCount) || apiRowCount <= 0) {
    say(`bench: --api-rows takes a positive integer (got ${values['api-rows']})`)
    return 2
  }
  if (values['api-db'] !== undefined && !/^codetrail_bench_[a-z0-9_]+$/.test(values['api-db'])) {
    say(`bench: --api-db takes a database name codetrail_bench_<letters, digits, _> (got ${values['api-db']})`)
    return 2
  }
  const tipHeads = values.heads.split(',').filter(Boolean)
  if (tipHeads.length === 0 || tipHeads.some((h) => h !== 'poll' && h !== 'ws')) {
    say(`bench: --heads takes poll, ws or poll,ws (got ${values.heads})`)
    return 2
  }
  const tipScopes = values.scope.split(',').filter(Boolean)
  if (tipScopes.length === 0 || tipScopes.some((h) => h !== 'logs' && h !== 'blocks')) {
    say(`bench: --scope takes logs, blocks or logs,blocks (got ${values.scope})`)
    return 2
  }
  const adminDatabaseUrl = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres'
  const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
  const started = performance.now()

  let backfill: BackfillPart | undefined
  let pending: PendingRun | undefined
  let decode: DecodeBenchCase[] | undefined
  let api: ApiRun | undefined
  let webhooks: WebhookRun | undefined
  let blocks: BlocksScopePart | undefined
  const tips: TipRun[] = []

  // The backfill and the daemons the bench times are the compiled ones users start.
  if (parts.has('backfill') || parts.has('blocks') || parts.has('pending') || parts.has('webhooks') || parts.has('tip')) {
    say('npm run build…')
    build()
  }
  if (parts.has('backfill')) backfill = await benchBackfill(size, adminDatabaseUrl, redisUrl, values.profile)
  if (parts.has('pending')) {
    const ws = values['pending-ws'] ? ' and subscribed to pendingLogs' : ''
    say(
      `pending latency: devnet with 2 s blocks, daemon --role scheduler polling every ${PENDING_POLL_MS} ms${ws}, ${PENDING_TX_PER_SEC} tx/s for ${sizing.pendingMs / 1000} s…`,
    )
    pending = await runPendingLatency({
      adminDatabaseUrl,
      redisUrl,
      pendingPollMs: PENDING_POLL_MS,
      durationMs: sizing.pendingMs,
      txPerSec: PENDING_TX_PER_SEC,
      watchMs: WATCH_MS,
      webSocket: values['pending-ws'],
    })
  }
  if (parts.has('decode')) {
    say('attribution rate of the per-transaction path (attributeTransaction on node transaction objects)…')
    decode = benchDecode({ durationMs: sizing.decodeMs })
  }
  if (parts.has('api')) {
    say(`API latency: ${values['api-db'] ? `${values['api-db']}, seeded with` : 'seeding'} ${count(apiRowCount)} attributions…`)
    api = await runApiLatency({
      adminDatabaseUrl,
      rows: apiRowCount,
      seededDatabase: values['api-db'],
      clients: API_CLIENTS,
      codes: API_CODES,
      sessions: sizing.apiSessions,
      pages: API_PAGES,
      say,
    })
  }
  if (parts.has('webhooks')) {
    say(
      `webhook latency: outbox trigger cost on a ${count(sizing.triggerCopyRows)}-row COPY, retention of a ${count(sizing.retentionRows)}-event month, then ${WEBHOOK_EVENTS_PER_SEC} events/s for ${sizing.webhookMs / 1000} s to a local receiver…`,
    )
    webhooks = await runWebhookLatency({
      adminDatabaseUrl,
      redisUrl,
      eventsPerSec: WEBHOOK_EVENTS_PER_SEC,
      durationMs: sizing.webhookMs,
      copyRows: sizing.triggerCopyRows,
      retentionRows: sizing.retentionRows,
    })
  }
  if (parts.has('blocks')) {
    say('ATTRIBUTION_SCOPE=blocks at Base density…')
    blocks = await runBlocksScope({
      size,
      adminDatabaseUrl,
      redisUrl,
      oneJobChunkBlocks: CHUNK_BLOCKS,
      concurrency: CONCURRENCY,
      rounds: BACKFILL_ROUNDS,
      profile: values.profile,
      say,
    })
  }

  if (parts.has('tip')) {
    const runs = (tipScopes as ('logs' | 'blocks')[]).flatMap((scope) => (tipHeads as TipHeads[]).map((heads) => ({ scope, heads })))
    for (const { scope, heads } of runs) {
      say(
        `tip: the daemon on the devnet's base profile, ATTRIBUTION_SCOPE=${scope}, ${heads === 'ws' ? 'newHeads over RPC_WS_URL' : 'polling the head'}…`,
      )
      tips.push(
        await runTip({
          adminDatabaseUrl,
          redisUrl,
          scope,
          heads,
          durationMs: tipMs,
          blocksPerSec: TIP_BLOCKS_PER_SEC,
          reorgEveryMs: TIP_REORG_EVERY_MS,
          steps: TIP_STEPS,
          stepMs: tipStepMs,
          say,
        }),
      )
    }
  }

  const results = readResults(RESULTS_PATH)
  const rows: TableRow[] = []
  if (backfill) rows.push(...backfillRows(backfill, results))
  if (pending) rows.push(...pendingRows(pending, results, values['pending-ws']))
  if (decode) rows.push(...decodeRows(decode, results))
  if (api) rows.push(...apiRows(api, results))
  if (webhooks) rows.push(...webhookRows(webhooks, results))
  if (blocks) rows.push(...blocksRows(blocks, results))
  for (const tip of tips) rows.push(...tipRows(tip, results))
  writeResults(RESULTS_PATH, results)

  const cores = cpus().length
  process.stdout.write(
    `\ncodetrail bench (${size}, ${cores} cores, ${((performance.now() - started) / 1000).toFixed(0)} s)` +
      (backfill
        ? `: fixture ${backfill.fixture.name}, ${count(backfill.fixture.logs)} logs in blocks ${backfill.fixture.fromBlock}–${backfill.fixture.toBlock}`
        : '') +
      `\n\n${formatTable(rows)}\n\nwrote ${RESULTS_PATH}\n`,
  )
  if (!parts.has('api') && results.api.p99Ms === null) process.stdout.write('API figures not measured yet: npm run bench -- api\n')
  if (backfill?.profile) process.stdout.write(`\n${profileText(backfill.profile)}\n`)
  if (blocks?.profile) process.stdout.write(`\nATTRIBUTION_SCOPE=blocks: ${profileText(blocks.profile)}\n`)
  const failure = pending && pendingFailure(pending)
  if (failure) {
    say(`\nbench failed: ${failure}`)
    return 1
  }
  return 0
}

async function benchBackfill(size: 'full' | 'quick', adminDatabaseUrl: string, redisUrl: string, profile: boolean): Promise<BackfillPart> {
  const fixture = await ensureFixture({ size, say })
  const range: [number, number] = [0, fixture.toBlock]
  say(
    `fixture ${fixture.name}: ${count(fixture.logs)} logs, ${count(fixture.transactions)} transactions (${count(fixture.suffixed)} with a suffix), blocks ${range[0]}–${range[1]}`,
  )
  let loadMs = performance.now()
  const anvil = await startAnvil({ loadState: fixture.statePath, readyTimeoutMs: FIXTURE_LOAD_TIMEOUT_MS })
  loadMs = performance.now() - loadMs
  const copyDb = await createBenchDatabase(adminDatabaseUrl, 'copy', CONCURRENCY)
  try {
    const client = createRawRpc(anvil.url, 1)
    const head = Number(await client.call<string>('eth_blockNumber', []).finally(() => client.close()))
    if (head < fixture.toBlock) throw new Error(`anvil loaded ${fixture.statePath} up to block ${head}, expected ${fixture.toBlock}`)
    say(`anvil loaded the fixture in ${(loadMs / 1000).toFixed(1)} s`)
    const rpcLimit = async (bodies: BodyRead) => {
      say(`raw limit: eth_getLogs + transaction bodies ${bodies}, ${CONCURRENCY} requests in flight…`)
      const measured = await measureRpcLimit({
        rpcUrl: anvil.url,
        range,
        chunkBlocks: CHUNK_BLOCKS,
        concurrency: CONCURRENCY,
        bodies,
        nodePid: anvil.process.pid,
      })
      if (measured.logs !== fixture.logs) throw new Error(`eth_getLogs returned ${measured.logs} logs, the fixture holds ${fixture.logs}`)
      return measured
    }
    const copyParameters = {
      rpcUrl: anvil.url,
      pool: copyDb.pool,
      chainId: fixture.chainId,
      range,
      chunkBlocks: CHUNK_BLOCKS,
      streams: CONCURRENCY,
    }
    const copyLimit = () => {
      say(`raw limit: COPY, ${CONCURRENCY} streams…`)
      return measureCopyLimit({ ...copyParameters, table: 'unindexed' })
    }
    // The cheapest way the node serves the bodies is the limit's: each is tried once, the fastest kept.
    const tried = [await rpcLimit('by-hash'), await rpcLimit('by-block'), await rpcLimit('by-share')]
    const cheapest = tried.reduce((best, r) => (r.logsPerSec > best.logsPerSec ? r : best))
    const backfillParameters = {
      rpcUrl: anvil.url,
      nodePid: anvil.process.pid!,
      adminDatabaseUrl,
      redisUrl,
      range,
      chunkBlocks: CHUNK_BLOCKS,
      concurrency: CONCURRENCY,
      expected: { logs: fixture.logs, transactions: fixture.transactions, attributions: fixture.suffixed },
    }
    // Limits, backfill, limits, backfill, …, limits: each backfill is set against the limits measured
    // just before and after it, so noise from other work on the machine falls on both sides alike.
    const rounds = async (first: RpcLimit, cpus?: string): Promise<BackfillRounds> => {
      const measured: BackfillRounds = { rpc: [first], copy: [await copyLimit()], runs: [] }
      for (let round = 1; round <= BACKFILL_ROUNDS; round++) {
        say(`codetrail backfill (${round} of ${BACKFILL_ROUNDS}${cpus === undefined ? '' : `, on CPUs ${cpus}`})…`)
        measured.runs.push(await runBackfill({ ...backfillParameters, cpus }))
        measured.rpc.push(await rpcLimit(cheapest.bodies))
        measured.copy.push(await copyLimit())
      }
      return measured
    }
    const { rpc, copy, runs } = await rounds(cheapest)
    const nodeOwnCore = await withNodeOnOwnCore(anvil.process.pid!, async () => {
      say(`the node on a core of its own: anvil on CPU 0, the backfill and the limits' client on CPUs ${CPUS_BESIDE_THE_NODE}…`)
      return rounds(await rpcLimit(cheapest.bodies), CPUS_BESIDE_THE_NODE)
    })
    await runMigrations(copyDb.pool)
    say(`for reference: COPY into codetrail's logs table, ${CONCURRENCY} streams…`)
    const copyIndexed = await measureCopyLimit({ ...copyParameters, table: 'logs' })
    let summary: (ProfileSummary & { path: string }) | undefined
    if (profile) {
      say('codetrail backfill again, with a CPU profile…')
      summary = await runProfiledBackfill(backfillParameters, PROFILED_FUNCTIONS)
    }
    return {
      fixture,
      loadMs,
      tried,
      rpc,
      copy,
      copyIndexed,
      runs,
      ...(nodeOwnCore ? { nodeOwnCore } : {}),
      ...(summary ? { profile: summary } : {}),
    }
  } finally {
    await copyDb.drop()
    await anvil.stop()
  }
}

/** `npm run build`: `dist/` as users run it. */
function build(): void {
  const result = spawnSync('npm', ['run', 'build'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`npm run build failed:\n${result.stdout}${result.stderr}`)
}

const cpuNote = (copy: CopyLimit) => (copy.backendCpuSec === undefined ? '' : `, backend CPU ${copy.backendCpuSec.toFixed(1)} s`)
const pct = (share: number) => `${(share * 100).toFixed(0)} %`
const verdict = (ok: boolean) => (ok ? 'ok' : 'BELOW TARGET')

const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
const sumOf = (record: Record<string, number>) => Object.values(record).reduce((sum, v) => sum + v, 0)

/** Two lines per backfill run: its rate against its limits, and the CPU time of every process. */
function backfillRunLines(
  runs: readonly BackfillRun[],
  { limits, ratios }: Pick<ReturnType<typeof roundRatios>, 'limits' | 'ratios'>,
  logs: number,
): TableRow[] {
  return runs.flatMap((run, i) => {
    const sorted = [...run.chunkMs].sort((a, b) => a - b)
    const limit = limits[i]!
    return [
      {
        figure: '',
        measured: `run ${i + 1}: ${count(run.logsPerSec)} logs/s, ${pct(ratios[i]!)} of its limit (RPC ${count(limit.rpcLogsPerSec)}, COPY ${count(limit.copyRowsPerSec)}); ${count(logs)} logs in ${(run.workMs / 1000).toFixed(1)} s (process ${(run.processMs / 1000).toFixed(1)} s with start-up); chunk jobs p50/max ${count(sorted[Math.floor(sorted.length / 2)] ?? 0)}/${count(sorted.at(-1) ?? 0)} ms`,
      },
      {
        figure: '',
        measured: `       CPU seconds: codetrail ${(run.cpu.codetrail ?? 0).toFixed(1)} (+ ${run.startupCpuSec.toFixed(1)} start-up), anvil ${(run.cpu.node ?? 0).toFixed(1)}, postgres backends ${(run.cpu.postgres ?? 0).toFixed(1)} (${cpus().length} cores × ${(run.processMs / 1000).toFixed(1)} s); RSS at ${run.rssAt.map((r) => pct(r.share)).join(' / ')}: ${run.rssAt.map((r) => r.rssMiB.toFixed(0)).join(' / ')} MiB`,
      },
    ]
  })
}

/** Each run's limits (the mean of those just before and after it, the lower kind of the two) and its ratio to them. */
function roundRatios({ rpc, copy, runs }: BackfillRounds) {
  const limits = runs.map((_, i) => {
    const rpcLogsPerSec = mean([rpc[i]!.logsPerSec, rpc[i + 1]!.logsPerSec])
    const copyRowsPerSec = mean([copy[i]!.rowsPerSec, copy[i + 1]!.rowsPerSec])
    return { rpcLogsPerSec, copyRowsPerSec, lower: Math.min(rpcLogsPerSec, copyRowsPerSec) }
  })
  const ratios = runs.map((run, i) => run.logsPerSec / limits[i]!.lower)
  return { limits, ratios, ratio: median(ratios) }
}

function backfillRows(part: BackfillPart, results: ReturnType<typeof readResults>): TableRow[] {
  const { fixture, loadMs, tried, rpc, copy, copyIndexed, runs, nodeOwnCore } = part
  const { limits, ratios, ratio } = roundRatios(part)
  const own = nodeOwnCore && roundRatios(nodeOwnCore)
  const logsPerSec = median(runs.map((run) => run.logsPerSec))
  const peakRssMiB = Math.max(...runs.map((run) => run.peakRssMiB))
  const rpcLimit = median(rpc.map((r) => r.logsPerSec))
  const copyLimit = median(copy.map((c) => c.rowsPerSec))
  results.limits = { rpcLogsPerSec: round(rpcLimit), copyRowsPerSec: round(copyLimit) }
  results.backfill = {
    logs: fixture.logs,
    logsPerSec: round(logsPerSec),
    ratioToLimit: round(ratio, 3),
    peakRssMiB: round(peakRssMiB, 1),
    nodeOwnCoreRatioToLimit: own ? round(own.ratio, 3) : null,
  }
  const perThousand = (n: number) => (n * 1000) / fixture.logs
  const rawCpuMsPerThousand =
    perThousand(median(rpc.map((r) => (r.nodeCpuSec ?? 0) + r.clientCpuSec)) + median(copy.map((c) => c.backendCpuSec ?? 0))) * 1000
  const backfillCpuMsPerThousand = perThousand(median(runs.map((run) => sumOf(run.cpu)))) * 1000
  // The backfill's node and database work with a process of its own costing no more than the raw client's
  // (the same fetch and parse): what the ratio could reach on these cores, given the index's writes.
  const boundCpuMsPerThousand =
    perThousand(median(runs.map((run) => (run.cpu.node ?? 0) + (run.cpu.postgres ?? 0))) + median(rpc.map((r) => r.clientCpuSec))) * 1000
  const calls = runs[0]!.nodeCalls
  return [
    {
      figure: 'raw eth_getLogs + tx bodies (limit)',
      measured: `${count(rpcLimit)} logs/s`,
      beside: `median of ${rpc.map((r) => count(r.logsPerSec)).join(', ')}; bodies ${rpc[0]!.bodies}, ${CONCURRENCY} requests in flight, logs and bodies overlapped`,
    },
    ...tried.map((r) => ({
      figure: '',
      measured: `bodies ${r.bodies}: ${count(r.logsPerSec)} logs/s (${(r.ms / 1000).toFixed(1)} s), ${count(r.calls)} calls in ${count(r.requests)} requests (${perThousand(r.calls).toFixed(1)} per 1,000 logs)`,
    })),
    {
      figure: '',
      measured: `CPU seconds per raw fetch of the fixture: anvil ${rpc.map((r) => (r.nodeCpuSec ?? 0).toFixed(1)).join(', ')}; client ${rpc.map((r) => r.clientCpuSec.toFixed(1)).join(', ')}`,
    },
    {
      figure: 'raw COPY, unindexed table (limit)',
      measured: `${count(copyLimit)} rows/s`,
      beside: `median of ${copy.map((c) => count(c.rowsPerSec)).join(', ')}; ${CONCURRENCY} streams, ${count(copy[0]!.rows)} rows, ${copy[0]!.tableMiB.toFixed(0)} MiB${cpuNote(copy[0]!)}`,
    },
    {
      figure: '',
      measured: `the same COPY into codetrail's logs table with its indexes: ${count(copyIndexed.rowsPerSec)} rows/s, ${copyIndexed.tableMiB.toFixed(0)} MiB${cpuNote(copyIndexed)}`,
    },
    {
      figure: 'backfill, attribution on',
      measured: `${count(logsPerSec)} logs/s`,
      beside: `≥ ${pct(TARGETS.backfillRatio)} of min(raw RPC, raw COPY), median of ${runs.length} runs`,
      verdict: `${pct(ratio)} ${verdict(ratio >= TARGETS.backfillRatio)}`,
    },
    ...backfillRunLines(runs, { limits, ratios }, fixture.logs),
    ...(own && nodeOwnCore
      ? [
          {
            figure: '  the node on a core of its own',
            measured: `${count(median(nodeOwnCore.runs.map((run) => run.logsPerSec)))} logs/s`,
            beside: `median of ${nodeOwnCore.runs.length} runs; anvil on CPU 0, the rest on the others, PostgreSQL unpinned; its limits RPC ${nodeOwnCore.rpc.map((r) => count(r.logsPerSec)).join(', ')}, COPY ${nodeOwnCore.copy.map((c) => count(c.rowsPerSec)).join(', ')}`,
            verdict: pct(own.ratio),
          },
          ...backfillRunLines(nodeOwnCore.runs, own, fixture.logs),
        ]
      : []),
    {
      figure: 'backfill node calls per 1,000 logs',
      measured: `${perThousand(sumOf(calls)).toFixed(1)} calls in ${perThousand(runs[0]!.nodeRequests).toFixed(1)} requests`,
      beside: Object.entries(calls)
        .sort(([, a], [, b]) => b - a)
        .map(([method, n]) => `${method} ${perThousand(n).toFixed(1)}`)
        .join(', '),
    },
    {
      figure: 'gas fill after the ranges (not timed in the ratio)',
      measured: runs.map((run) => `${(run.gas.ms / 1000).toFixed(1)} s`).join(', '),
      beside: `${perThousand(sumOf(runs[0]!.gas.nodeCalls)).toFixed(1)} calls in ${perThousand(runs[0]!.gas.nodeRequests).toFixed(1)} requests per 1,000 logs (${Object.entries(
        runs[0]!.gas.nodeCalls,
      )
        .map(([method, n]) => `${method} ${perThousand(n).toFixed(1)}`)
        .join(', ')}); ${runs[0]!.gas.left} left owed`,
    },
    {
      figure: '',
      measured: `CPU cost of 1,000 logs, every process counted (steadier than rates on a shared machine): raw fetch + COPY ${rawCpuMsPerThousand.toFixed(0)} ms, codetrail's backfill ${backfillCpuMsPerThousand.toFixed(0)} ms (${pct(rawCpuMsPerThousand / backfillCpuMsPerThousand)})`,
    },
    {
      figure: '',
      measured: `  the backfill's node and PostgreSQL with a process costing what the raw client's does: ${boundCpuMsPerThousand.toFixed(0)} ms (${pct(rawCpuMsPerThousand / boundCpuMsPerThousand)}), the ratio's bound on these cores while the limit's COPY goes into a table without indexes`,
    },
    {
      figure: 'backfill peak RSS',
      measured: `${peakRssMiB.toFixed(0)} MiB`,
      beside: 'the backfill process (its worker included), highest VmHWM',
    },
    {
      figure: '',
      measured: `anvil loaded the ${(fixture.stateBytes / 2 ** 20).toFixed(0)} MiB state dump in ${(loadMs / 1000).toFixed(1)} s`,
    },
  ]
}

function pendingRows(run: PendingRun, results: ReturnType<typeof readResults>, webSocket: boolean): TableRow[] {
  const failed = run.missing > 0
  // results.json holds the figure the target is about: polling alone, and only from a run where every served log was readable.
  if (!webSocket && !failed) results.pending = { p50Ms: round(run.p50Ms, 1), p99Ms: round(run.p99Ms, 1) }
  const { head, liveBlock, caughtUpAfterMs, waitedMs } = run.drain
  const drained =
    caughtUpAfterMs === null
      ? `the daemon had not stored the head holding every sent transaction after ${(waitedMs / 1000).toFixed(1)} s (live block ${liveBlock ?? 'none'}, head ${head ?? 'not reached'})`
      : `daemon at the head (block ${head}) ${(caughtUpAfterMs / 1000).toFixed(1)} s after the last send`
  return [
    {
      figure: `pending latency p50 / p99${webSocket ? ' (poll + WebSocket)' : ''}`,
      measured: `${run.p50Ms.toFixed(0)} / ${run.p99Ms.toFixed(0)} ms`,
      beside: `p99 < ${TARGETS.pendingP99Ms} ms at PENDING_POLL_MS=${PENDING_POLL_MS}, every served log readable`,
      verdict: failed ? `FAILED: ${run.missing} never readable` : verdict(run.p99Ms < TARGETS.pendingP99Ms),
    },
    {
      figure: '',
      measured: `${run.logs} logs served, max ${run.maxMs.toFixed(0)} ms, ${run.missing} never readable (${drained}); scheduler peak RSS ${run.daemonPeakRssMiB.toFixed(0)} MiB`,
    },
    ...Object.entries(run.byStatus).map(([status, figures]) => ({
      figure: '',
      measured: `first readable as ${status}: ${figures.logs} logs, p50 / p99 ${figures.p50Ms.toFixed(0)} / ${figures.p99Ms.toFixed(0)} ms`,
    })),
    ...run.missingExamples.map((example) => ({ figure: '', measured: `never readable: ${example}` })),
  ]
}

/** Why the run fails, if a part's result does not hold: every served pending log must become readable. */
function pendingFailure(run: PendingRun): string | undefined {
  if (run.missing === 0) return undefined
  return (
    `pending: ${run.missing} of ${run.logs} logs served by the node as pending were never readable in analytics.logs ` +
    `(waited ${(run.drain.waitedMs / 1000).toFixed(1)} s after the last send), e.g.\n  ${run.missingExamples.join('\n  ')}`
  )
}

function decodeRows(cases: DecodeBenchCase[], results: ReturnType<typeof readResults>): TableRow[] {
  const rate = (name: string) => {
    const found = cases.find((c) => c.name === name)
    if (!found) throw new Error(`benchDecode has no case "${name}"`)
    return found.transactionsPerSecond
  }
  const noSuffix = rate('no suffix')
  const withSuffix = rate('suffix schema 0, one code')
  results.decode = { noSuffixPerSec: noSuffix, withSuffixPerSec: withSuffix }
  return [
    {
      figure: 'attributeTransaction, no suffix',
      measured: `${count(noSuffix)} tx/s`,
      beside: `≥ ${count(TARGETS.decodeNoSuffixPerSec)} tx/s`,
      verdict: verdict(noSuffix >= TARGETS.decodeNoSuffixPerSec),
    },
    { figure: 'attributeTransaction, schema 0 suffix', measured: `${count(withSuffix)} tx/s` },
    ...cases.map((c) => ({
      figure: '',
      measured: `${c.name}: ${count(c.transactionsPerSecond)} tx/s (avg ${c.averageBytes} bytes of input)`,
    })),
  ]
}

function apiRows(run: ApiRun, results: ReturnType<typeof readResults>): TableRow[] {
  results.api = { p50Ms: round(run.p50Ms, 2), p99Ms: round(run.p99Ms, 2), requestsPerSec: round(run.requestsPerSec) }
  const { codes } = run
  return [
    {
      figure: `API p50 / p99, slowest route`,
      measured: `${run.p50Ms.toFixed(1)} / ${run.p99Ms.toFixed(1)} ms`,
      beside: `p99 < ${TARGETS.apiP99Ms} ms at ${count(run.rows)} attributions, ${run.clients} clients over ${codes.used} codes`,
      verdict: verdict(run.p99Ms < TARGETS.apiP99Ms),
    },
    ...run.routes.map((r) => ({
      figure: '',
      measured: `${r.route}: ${r.p50Ms.toFixed(1)} / ${r.p99Ms.toFixed(1)} ms, max ${r.maxMs.toFixed(0)} ms (n=${r.requests})`,
    })),
    {
      figure: 'API throughput',
      measured: `${count(run.requestsPerSec)} requests/s`,
      beside: `all requests p50 / p99 ${run.overall.p50Ms.toFixed(1)} / ${run.overall.p99Ms.toFixed(1)} ms`,
    },
    {
      figure: 'API CPU per request',
      measured: `${(run.cpuMsPerRequest.api + run.cpuMsPerRequest.postgres).toFixed(2)} ms`,
      beside: `< ${TARGETS.apiCpuMsPerRequest} ms: API process ${run.cpuMsPerRequest.api.toFixed(2)} ms, PostgreSQL backends ${run.cpuMsPerRequest.postgres.toFixed(2)} ms (PostgreSQL ${run.postgres.version}, shared_buffers ${run.postgres.sharedBuffers}; ${cpus().length} cores)`,
      verdict: verdict(run.cpuMsPerRequest.api + run.cpuMsPerRequest.postgres < TARGETS.apiCpuMsPerRequest),
    },
    {
      figure: '',
      measured: `${run.requests} requests in ${run.seconds.toFixed(1)} s, ${run.sessions} sessions after ${run.warmup} of warm-up; codes used ${codes.used} of ${codes.seeded}, rows per code hottest / median / coldest ${count(codes.hottestRows)} / ${count(codes.medianRows)} / ${count(codes.coldestRows)}; ${run.seedMs === null ? 'seeded before' : `seeded in ${(run.seedMs / 1000).toFixed(0)} s`}`,
    },
  ]
}

function webhookRows(run: WebhookRun, results: ReturnType<typeof readResults>): TableRow[] {
  const overhead = run.copy.withTriggerMs / run.copy.withoutTriggerMs - 1
  results.webhooks = {
    p50Ms: round(run.p50Ms, 1),
    p99Ms: round(run.p99Ms, 1),
    barePostsPerSec: round(run.barePostsPerSec),
    triggerCopyOverhead: round(overhead, 3),
    retentionDroppedMs: round(run.retention.droppedMs),
    retentionDeletedMs: round(run.retention.deletedMs),
  }
  return [
    {
      figure: 'webhook delivery p50 / p99',
      measured: `${run.p50Ms.toFixed(0)} / ${run.p99Ms.toFixed(0)} ms`,
      beside: `p99 < ${TARGETS.webhookP99Ms} ms at ${WEBHOOK_EVENTS_PER_SEC} events/s, commit → receiver's 2xx`,
      verdict: verdict(run.p99Ms < TARGETS.webhookP99Ms && run.missing === 0),
    },
    {
      figure: '',
      measured: `${count(run.events)} events, max ${run.maxMs.toFixed(0)} ms, ${run.missing} not delivered within the drain time`,
    },
    {
      figure: 'webhook backlog recovery',
      measured: `${(run.recovery.fromFirstSuccessMs / 1000).toFixed(2)} s`,
      beside: `${count(run.recovery.backlog)} events owed to a receiver that was down, first 2xx → last; ${(run.recovery.fromUpMs / 1000).toFixed(2)} s from it answering again, ${run.recovery.missing} missing, ${run.recovery.deadlocks} deadlocks`,
      verdict: verdict(run.recovery.fromFirstSuccessMs < 10_000 && run.recovery.missing === 0 && run.recovery.deadlocks === 0),
    },
    {
      figure: '',
      measured: `CPU per 1,000 events: daemon ${run.cpuMsPerThousand.daemon.toFixed(0)} ms, its PostgreSQL backends ${run.cpuMsPerThousand.postgres.toFixed(0)} ms`,
    },
    {
      figure: 'bare HTTP POST loop (limit)',
      measured: `${count(run.barePostsPerSec)} posts/s`,
      beside: `sequential fetch to the same receiver, p50 ${run.barePostP50Ms.toFixed(1)} ms`,
    },
    {
      figure: 'outbox trigger on a COPY',
      measured: `${overhead >= 0 ? '+' : ''}${pct(overhead)}`,
      beside: `${count(run.copy.rows)} attribution rows nobody subscribes to: ${(run.copy.withTriggerMs / 1000).toFixed(2)} s with, ${(run.copy.withoutTriggerMs / 1000).toFixed(2)} s without`,
    },
    {
      figure: '',
      measured: `${run.copy.wantedMs >= run.copy.withoutTriggerMs ? '+' : ''}${pct(run.copy.wantedMs / run.copy.withoutTriggerMs - 1)}`,
      beside: `the same COPY while a stream client wants every event: ${(run.copy.wantedMs / 1000).toFixed(2)} s`,
    },
    {
      figure: 'webhook retention, a month',
      measured: `${(run.retention.droppedMs / 1000).toFixed(2)} s`,
      beside: `${count(run.retention.rows)} events handed out, partition dropped; the same rows deleted ${count(PRUNE_BATCH)} per statement: ${(run.retention.deletedMs / 1000).toFixed(2)} s`,
    },
  ]
}

/** A delay breakdown as one line, largest part first. */
function partsText(parts: DelayParts): string {
  const names: Record<keyof DelayParts, string> = {
    busy: 'previous step',
    idle: 'waiting for the head',
    head: 'head read',
    read: 'batch read',
    attribute: 'attribution',
    store: 'DB transaction',
    seen: 'commit → seen',
  }
  return (Object.entries(parts) as [keyof DelayParts, number][])
    .sort((a, b) => b[1] - a[1])
    .map(([key, ms]) => `${names[key]} ${ms.toFixed(0)}`)
    .join(', ')
}

function tipRows(run: TipRun, results: ReturnType<typeof readResults>): TableRow[] {
  const scope = (run.scope === 'logs' ? '' : ', blocks scope') + (run.heads === 'ws' ? ', newHeads' : ', polling')
  const figures: TipResults = {
    p50Ms: round(run.delay.p50Ms, 1),
    p99Ms: round(run.delay.p99Ms, 1),
    callsPerBlock: round(run.calls.perBlock, 2),
    requestsPerBlock: round(run.calls.requestsPerBlock, 2),
    corePct: round(run.cpu.codetrailCorePct, 1),
    pendingRows: run.pendingRowsWritten,
    sustainedPerSec: run.sustainedPerSec === null ? null : round(run.sustainedPerSec, 1),
  }
  results[run.heads === 'ws' ? (run.scope === 'logs' ? 'tipWs' : 'tipWsBlocksScope') : run.scope === 'logs' ? 'tip' : 'tipBlocksScope'] =
    figures
  const byMethod = Object.entries(run.calls.byMethod)
    .sort((a, b) => b[1] - a[1])
    .map(([method, n]) => `${method} ${n.toFixed(2)}`)
    .join(', ')
  const steps = run.steps
    .map(
      (s) =>
        `${s.targetPerSec}/s: node ${s.nodePerSec.toFixed(1)}/s, lag ${s.lagStart}→${s.lagEnd} (max ${s.lagMax})` +
        `${s.lagGrew ? ', lag grew' : ''}${s.nodeShort ? ', node short of the rate' : ''}`,
    )
    .join('; ')
  return [
    {
      figure: `tip delay p50 / p99 / max${scope}`,
      measured: `${run.delay.p50Ms.toFixed(0)} / ${run.delay.p99Ms.toFixed(0)} / ${run.delay.maxMs.toFixed(0)} ms`,
      beside: `p99 < ${TIP_TARGETS.p99Ms} ms at ${TIP_BLOCKS_PER_SEC} blocks/s`,
      verdict: verdict(run.delay.p99Ms < TIP_TARGETS.p99Ms && run.delay.unreadable === 0),
    },
    {
      figure: '',
      measured:
        `${run.blocks} blocks (${run.blocksPerSec.toFixed(2)}/s), ${count(run.logs)} logs, ${TIP_TX_PER_BLOCK} txs a block, ${run.reorgs} reorgs; ` +
        `${run.delay.unreadable} blocks never readable; longest stretch > 10 blocks behind ${(run.longestBehindMs / 1000).toFixed(1)} s`,
    },
    ...(run.breakdown
      ? [
          { figure: '', measured: `delay, mean ms over ${run.breakdown.blocks} blocks: ${partsText(run.breakdown.all)}` },
          { figure: '', measured: `delay, mean ms over the slowest 1 %: ${partsText(run.breakdown.slowest)}` },
        ]
      : []),
    {
      figure: `node calls / HTTP requests per block${scope}`,
      measured: `${run.calls.perBlock.toFixed(2)} / ${run.calls.requestsPerBlock.toFixed(2)}`,
      beside: `≤ ${TIP_TARGETS.callsPerBlock} / ≤ ${TIP_TARGETS.requestsPerBlock}`,
      verdict: verdict(run.calls.perBlock <= TIP_TARGETS.callsPerBlock && run.calls.requestsPerBlock <= TIP_TARGETS.requestsPerBlock),
    },
    { figure: '', measured: `per block: ${byMethod}` },
    {
      figure: `codetrail CPU${scope}`,
      measured: `${run.cpu.codetrailCorePct.toFixed(1)} % of a core`,
      beside: `< ${TIP_TARGETS.corePct} % of a core`,
      verdict: verdict(run.cpu.codetrailCorePct < TIP_TARGETS.corePct),
    },
    {
      figure: '',
      measured:
        `${run.cpu.codetrailMsPerBlock.toFixed(1)} ms a block; PostgreSQL ${run.cpu.postgresMsPerBlock.toFixed(1)} ms a block (${run.cpu.postgresCorePct.toFixed(1)} % of a core); ` +
        `RSS ${run.rssMiB.map((m) => m.toFixed(0)).join(' → ')} MiB (peak ${run.daemonPeakRssMiB.toFixed(0)})`,
    },
    {
      figure: `pending rows written${scope}`,
      measured: count(run.pendingRowsWritten),
      beside: '0 on a chain without pre-confirmations',
      verdict: verdict(run.pendingRowsWritten === 0),
    },
    {
      figure: `sustained block rate${scope}`,
      measured: run.sustainedPerSec === null ? 'none' : `${run.sustainedPerSec.toFixed(1)} blocks/s`,
      beside: `≥ ${TIP_TARGETS.sustainedPerSec} blocks/s (node ceiling ${run.nodeCeilingPerSec.toFixed(1)}/s)`,
      verdict: verdict((run.sustainedPerSec ?? 0) >= TIP_TARGETS.sustainedPerSec),
    },
    { figure: '', measured: `steps: ${steps}` },
  ]
}

function blocksRows(part: BlocksScopePart, results: ReturnType<typeof readResults>): TableRow[] {
  const { fixture, transactions, chunkBlocks, oneJobChunkBlocks, concurrency, limits, runs, oneJob } = part
  const limitTxPerSec = median(limits.map((l) => l.fastest.txPerSec))
  const txPerSecOf = (run: BackfillRun) => (transactions / run.workMs) * 1000
  // Run i sits between limit measurements i and i + 1; the one-job run last.
  const limitAround = (i: number) => mean([limits[i]!.fastest.txPerSec, limits[i + 1]!.fastest.txPerSec])
  const ratios = runs.map((run, i) => txPerSecOf(run) / limitAround(i))
  const ratio = median(ratios)
  const txPerSec = median(runs.map(txPerSecOf))
  const peakRssMiB = Math.max(...runs.map((run) => run.peakRssMiB))
  const own = part.nodeOwnCore
  const ownCoreRatio = own && txPerSecOf(own.run) / mean(own.limits.map((l) => l.fastest.txPerSec))
  results.blocksScope = {
    transactions,
    txPerSec: round(txPerSec),
    limitTxPerSec: round(limitTxPerSec),
    ratioToLimit: round(ratio, 3),
    peakRssMiB: round(peakRssMiB, 1),
    nodeOwnCoreRatioToLimit: ownCoreRatio !== undefined ? round(ownCoreRatio, 3) : null,
  }
  const perThousand = (n: number) => (n * 1000) / transactions
  const runLines = (run: BackfillRun, limit: number, label: string) => {
    const sorted = [...run.chunkMs].sort((a, b) => a - b)
    return [
      {
        figure: '',
        measured: `${label}: ${count(txPerSecOf(run))} tx/s, ${pct(txPerSecOf(run) / limit)} of its limits; ${(run.workMs / 1000).toFixed(1)} s (process ${(run.processMs / 1000).toFixed(1)} s with start-up); ${sorted.length} chunk jobs, p50/max ${count(sorted[Math.floor(sorted.length / 2)] ?? 0)}/${count(sorted.at(-1) ?? 0)} ms; peak RSS ${run.peakRssMiB.toFixed(0)} MiB`,
      },
      {
        figure: '',
        measured: `       CPU seconds: codetrail ${(run.cpu.codetrail ?? 0).toFixed(1)} (+ ${run.startupCpuSec.toFixed(1)} start-up), anvil ${(run.cpu.node ?? 0).toFixed(1)}, postgres backends ${(run.cpu.postgres ?? 0).toFixed(1)}`,
      },
    ]
  }
  const limitCpuMs = perThousand(median(limits.map((l) => (l.fastest.nodeCpuSec ?? 0) + l.fastest.clientCpuSec)) * 1000)
  const backfillCpuMs = perThousand(median(runs.map((run) => sumOf(run.cpu))) * 1000)
  const calls = runs[0]!.nodeCalls
  const byMethod = Object.entries(calls)
    .sort(([, a], [, b]) => b - a)
    .map(([method, n]) => `${method} ${perThousand(n).toFixed(1)}`)
    .join(', ')
  const blocks = fixture.toBlock + 1
  const fastest = limits[0]!.fastest
  return [
    {
      figure: 'raw eth_getBlockByNumber(n, true) (limit)',
      measured: `${count(limitTxPerSec)} tx/s`,
      beside: `fastest batch size, median of ${limits.map((l) => `${count(l.fastest.txPerSec)} (×${l.fastest.batchSize})`).join(', ')}`,
    },
    ...limits.map((l, i) => ({
      figure: '',
      measured: `limit ${i + 1}, ${BLOCK_BODY_IN_FLIGHT} in flight: ${l.passes.map((p) => `batches of ${p.batchSize} ${count(p.txPerSec)} tx/s`).join(', ')}; CPU s anvil ${(l.fastest.nodeCpuSec ?? 0).toFixed(1)}, client ${l.fastest.clientCpuSec.toFixed(1)}`,
    })),
    {
      figure: 'backfill, ATTRIBUTION_SCOPE=blocks',
      measured: `${count(txPerSec)} tx/s`,
      beside: `≥ ${pct(TARGETS.blocksScopeRatio)} of the block-body limit, median of ${runs.length} runs`,
      verdict: `${pct(ratio)} ${verdict(ratio >= TARGETS.blocksScopeRatio)}`,
    },
    {
      figure: '',
      measured: `${count(transactions)} transactions in ${count(blocks)} blocks (${count(fixture.suffixed)} suffixed, ${count(fixture.logs)} logs), CHUNK_BLOCKS=${chunkBlocks}, WORKER_CONCURRENCY=${concurrency}`,
    },
    ...runs.flatMap((run, i) => runLines(run, limitAround(i), `run ${i + 1}`)),
    ...runLines(oneJob, limitAround(runs.length), `as one job (CHUNK_BLOCKS=${oneJobChunkBlocks})`),
    ...(own ? nodeOwnCoreRows(own, txPerSecOf, runLines) : []),
    {
      figure: '',
      // The limit keeps every core busy with the node alone, so on this machine the backfill's CPU bounds its ratio.
      measured: `CPU cost of 1,000 transactions, every process counted (steadier than rates on a shared machine): raw block-body fetch ${limitCpuMs.toFixed(0)} ms, codetrail's backfill ${backfillCpuMs.toFixed(0)} ms (${pct(limitCpuMs / backfillCpuMs)})`,
    },
    {
      figure: 'node calls per 1,000 tx, blocks scope',
      measured: `${perThousand(sumOf(calls)).toFixed(1)} JSON-RPC calls in ${perThousand(runs[0]!.nodeRequests).toFixed(1)} HTTP requests`,
      beside: `limit: ${perThousand(blocks).toFixed(1)} calls in ${perThousand(fastest.httpRequests).toFixed(1)} requests (batches of ${fastest.batchSize})`,
    },
    { figure: '', measured: `by method: ${byMethod} (run 1's summary line)` },
  ]
}

/** The blocks part's backfill with the node on a core of its own, against that node's limit. */
function nodeOwnCoreRows(
  { limits, run }: NonNullable<BlocksScopePart['nodeOwnCore']>,
  txPerSecOf: (run: BackfillRun) => number,
  runLines: (run: BackfillRun, limit: number, label: string) => TableRow[],
): TableRow[] {
  const limit = mean(limits.map((l) => l.fastest.txPerSec))
  return [
    {
      figure: '  the node on a core of its own',
      measured: `${count(txPerSecOf(run))} tx/s`,
      beside: `its limit ${limits.map((l) => `${count(l.fastest.txPerSec)} (×${l.fastest.batchSize})`).join(' and ')} tx/s; anvil on CPU 0, the rest on the others, PostgreSQL unpinned`,
      verdict: pct(txPerSecOf(run) / limit),
    },
    ...runLines(run, limit, 'run'),
  ]
}

function profileText(summary: ProfileSummary & { path: string }): string {
  const busy = summary.totalMs - summary.idleMs
  const lines = [
    `backfill CPU profile (main thread, during the work): ${(busy / 1000).toFixed(1)} s busy of ${(summary.totalMs / 1000).toFixed(1)} s sampled; ${summary.path}`,
    'self time by where it was spent:',
    ...summary.byPlace
      .filter((p) => p.share >= 0.01)
      .map((p) => `  ${p.name.padEnd(28)} ${pct(p.share).padStart(5)}  ${(p.ms / 1000).toFixed(2)} s`),
    'inclusive time of (synchronous stretches of):',
    ...summary.inclusive.map((p) => `  ${p.name.padEnd(28)} ${pct(p.share).padStart(5)}  ${(p.ms / 1000).toFixed(2)} s`),
  ]
  return lines.join('\n')
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  },
)
