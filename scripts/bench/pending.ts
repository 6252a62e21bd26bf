/**
 * Pending latency on the devnet: a sender emits logs at a steady rate, the daemon (`--role
 * scheduler`) polls pre-confirmed logs every PENDING_POLL_MS, and this process watches both ends
 * every `watchMs`: when the node first serves each log as pending, and when it becomes readable in
 * `analytics.logs`.
 */
import type { Hex } from 'viem'
import pg from 'pg'
import { createDevnet } from '../../src/devnet/index.js'
import { anvilAccount, artifacts, deployContract, encodeEmitMany } from '../../test/fixtures/chain.js'
import { fixtureSuffix, FIXTURE_PARAMETERS } from '../generate-fixture.js'
import { spawnNode, watchProcess } from './processes.js'
import { createRawRpc, type RawRpc } from './rawRpc.js'
import { createBenchDatabase, createBenchRedisPrefix } from './services.js'
import { sleep } from '../../src/utils/loop.js'

const BLOCK_TIME_MS = 2_000
const LOGS_PER_TX = 2
const TX_GAS = 300_000n
// Far above anvil's base fee on a quiet devnet, so no transaction waits for a cheaper block.
const MAX_FEE = 100_000_000_000n
const PRIORITY_FEE = 1_000_000_000n
const SENDER = 1
const WARMUP_TIMEOUT_MS = 60_000
const DRAIN_TIMEOUT_MS = 15_000

export type PendingRunParameters = {
  adminDatabaseUrl: string
  redisUrl: string
  pendingPollMs: number
  /** How long transactions are sent and measured. */
  durationMs: number
  txPerSec: number
  /** Cadence of this process's own watching of the node and the database. */
  watchMs: number
  /** Give the daemon the devnet's WebSocket too (RPC_WS_URL: `pendingLogs` subscription beside the poll). */
  webSocket?: boolean
}

export type PendingRun = {
  /** Logs first served as pending during the measurement. */
  logs: number
  /** Milliseconds from first served to readable, sorted. */
  latenciesMs: number[]
  p50Ms: number
  p99Ms: number
  maxMs: number
  /** Logs first readable with status `pending` (the rest were first readable once confirmed). */
  readAsPending: number
  /** Latency percentiles of the logs by the status they were first readable with. */
  byStatus: Record<string, { logs: number; p50Ms: number; p99Ms: number }>
  /** Logs never readable within the drain timeout. */
  missing: number
  daemonPeakRssMiB: number
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

type Served = { servedAt: number; readableAt?: number; status?: string; measured: boolean }

export async function runPendingLatency(parameters: PendingRunParameters): Promise<PendingRun> {
  const cleanups: (() => Promise<unknown>)[] = []
  try {
    const devnet = await createDevnet({ blockTimeMs: BLOCK_TIME_MS })
    cleanups.push(() => devnet.stop())
    const db = await createBenchDatabase(parameters.adminDatabaseUrl, 'pending')
    cleanups.push(() => db.drop())
    const redis = createBenchRedisPrefix(parameters.redisUrl, 'pending')
    cleanups.push(() => redis.cleanup())
    const rpc = createRawRpc(devnet.url, 4)
    cleanups.push(async () => rpc.close())

    const emitter = await deployContract(devnet.url, artifacts.Emitter)
    const chainId = Number(await rpc.call<string>('eth_chainId', []))
    const daemon = spawnNode({
      entry: 'src/main.ts',
      args: ['--role', 'scheduler'],
      env: {
        RPC_URL: devnet.url,
        DATABASE_URL: db.url,
        REDIS_URL: parameters.redisUrl,
        REDIS_PREFIX: redis.prefix,
        PENDING_POLL_MS: String(parameters.pendingPollMs),
        LOG_LEVEL: 'warn',
        ...(parameters.webSocket ? { RPC_WS_URL: devnet.wsUrl } : {}),
      },
    })
    cleanups.push(() => daemon.stop())
    const daemonWatch = watchProcess(daemon.pid, {})
    cleanups.push(async () => daemonWatch.stop())

    const served = new Map<string, Served>()
    const hashes = new Set<string>()
    let measuring = false
    let stopped = false
    const loops: Promise<void>[] = []
    const every = (fn: () => Promise<void>) =>
      loops.push(
        (async () => {
          while (!stopped) {
            const started = performance.now()
            // A failed look is a missed sample, not a failed run: the next one follows.
            await fn().catch(() => {})
            await sleep(Math.max(0, parameters.watchMs - (performance.now() - started)))
          }
        })(),
      )
    cleanups.push(async () => {
      stopped = true
      await Promise.all(loops)
    })

    // Logs are keyed by (transaction, ordinal in it): a pending log's index moves when its transaction moves to the next block.
    every(async () => {
      const logs = await rpc.call<{ transactionHash: string; logIndex: string }[]>('eth_getLogs', [{ fromBlock: 'pending', toBlock: 'pending' }])
      const now = performance.now()
      for (const key of logKeys(logs.map((log) => ({ hash: log.transactionHash.toLowerCase(), group: '', logIndex: Number(log.logIndex) })))) {
        if (!served.has(key)) served.set(key, { servedAt: now, measured: measuring })
      }
    })

    const readable = new pg.Pool({ connectionString: db.url, max: 1 })
    readable.on('error', () => {})
    cleanups.push(() => readable.end())
    let anyReadable = false
    every(async () => {
      const outstanding = [...hashes]
      if (outstanding.length === 0) return
      const { rows } = await readable
        .query<{ transaction_hash: string; block_hash: string; log_index: number; status: string }>(
          'SELECT transaction_hash, block_hash, log_index, status FROM analytics.logs WHERE chain_id = $1 AND transaction_hash = ANY($2)',
          [chainId, outstanding],
        )
      const now = performance.now()
      const status = new Map(rows.map((row) => [`${row.transaction_hash}:${row.block_hash}:${row.log_index}`, row.status]))
      for (const [key, where] of logKeysWithGroup(rows.map((row) => ({ hash: row.transaction_hash, group: row.block_hash, logIndex: row.log_index })))) {
        anyReadable = true
        const entry = served.get(key)
        if (entry && entry.readableAt === undefined) {
          entry.readableAt = now
          entry.status = status.get(where)
        }
      }
      for (const row of rows) {
        if (served.get(`${row.transaction_hash}:${LOGS_PER_TX - 1}`)?.readableAt !== undefined) hashes.delete(row.transaction_hash)
      }
    })

    const sender = createSender(rpc, chainId, emitter)
    const send = async () => hashes.add((await sender.send()).toLowerCase())

    // Warm-up: until the daemon has stored a log, nothing is measured.
    const warmupDeadline = Date.now() + WARMUP_TIMEOUT_MS
    while (!anyReadable) {
      if (Date.now() > warmupDeadline) throw new Error(`the daemon stored no log within ${WARMUP_TIMEOUT_MS} ms:\n${daemon.stderrTail()}`)
      await send()
      await sleep(1000 / parameters.txPerSec)
    }
    await sleep(BLOCK_TIME_MS)

    measuring = true
    const started = performance.now()
    for (let i = 0; performance.now() - started < parameters.durationMs; i++) {
      await send()
      await sleep(Math.max(0, started + ((i + 1) * 1000) / parameters.txPerSec - performance.now()))
    }
    const drainDeadline = performance.now() + DRAIN_TIMEOUT_MS
    const measured = () => [...served.values()].filter((entry) => entry.measured)
    while (measured().some((entry) => entry.readableAt === undefined) && performance.now() < drainDeadline) await sleep(100)

    const entries = measured()
    const latenciesMs = entries
      .filter((entry) => entry.readableAt !== undefined)
      .map((entry) => entry.readableAt! - entry.servedAt)
      .sort((a, b) => a - b)
    const byStatus: PendingRun['byStatus'] = {}
    for (const status of new Set(entries.map((entry) => entry.status).filter((s): s is string => s !== undefined))) {
      const sorted = entries
        .filter((entry) => entry.status === status)
        .map((entry) => entry.readableAt! - entry.servedAt)
        .sort((a, b) => a - b)
      byStatus[status] = { logs: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) }
    }
    daemonWatch.stop()
    return {
      byStatus,
      logs: entries.length,
      latenciesMs,
      p50Ms: percentile(latenciesMs, 50),
      p99Ms: percentile(latenciesMs, 99),
      maxMs: latenciesMs.at(-1) ?? Number.NaN,
      readAsPending: entries.filter((entry) => entry.status === 'pending').length,
      missing: entries.filter((entry) => entry.readableAt === undefined).length,
      daemonPeakRssMiB: daemonWatch.peakMiB(),
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
  }
}

/** Signs Emitter calls locally with consecutive nonces; every fifth carries an ERC-8021 suffix, as in the fixture. */
function createSender(rpc: RawRpc, chainId: number, emitter: Hex) {
  const account = anvilAccount(SENDER)
  let nonce: number | undefined
  let i = 0
  return {
    async send(): Promise<Hex> {
      nonce ??= Number(await rpc.call<string>('eth_getTransactionCount', [account.address, 'pending']))
      const suffix = fixtureSuffix(FIXTURE_PARAMETERS.full, i)
      const call = encodeEmitMany(LOGS_PER_TX, i * LOGS_PER_TX, '0x')
      const serialized = await account.signTransaction({
        type: 'eip1559',
        chainId,
        nonce: nonce++,
        to: emitter,
        data: suffix ? `${call}${suffix.slice(2)}` : call,
        gas: TX_GAS,
        maxFeePerGas: MAX_FEE,
        maxPriorityFeePerGas: PRIORITY_FEE,
      })
      i++
      return rpc.call<Hex>('eth_sendRawTransaction', [serialized])
    },
  }
}

type KeyedLog = { hash: string; group: string; logIndex: number }

/** `hash:ordinal` of each log, the ordinal counted in log-index order within (transaction, group), with the log's own `hash:group:logIndex`. */
function logKeysWithGroup(logs: readonly KeyedLog[]): [string, string][] {
  const sorted = [...logs].sort((a, b) => a.logIndex - b.logIndex)
  const ordinals = new Map<string, number>()
  return sorted.map((log) => {
    const tx = `${log.hash}:${log.group}`
    const ordinal = ordinals.get(tx) ?? 0
    ordinals.set(tx, ordinal + 1)
    return [`${log.hash}:${ordinal}`, `${tx}:${log.logIndex}`]
  })
}

function logKeys(logs: readonly KeyedLog[]): string[] {
  return logKeysWithGroup(logs).map(([key]) => key)
}

