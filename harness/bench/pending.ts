/**
 * Pending latency on the devnet: a sender emits logs at a steady rate, the daemon (`--role
 * scheduler`) polls pre-confirmed logs every PENDING_POLL_MS, and this process watches both ends
 * every `watchMs`: when the node first serves each log as pending, and when it becomes readable in
 * `analytics.logs`. Every log served counts: once sending stops, the run waits until every transaction
 * is mined, the daemon's live follower has stored the head that holds them, and a grace period more;
 * a served log still not readable then is `missing`, which fails the part.
 */
import type { Hex } from 'viem'
import pg from 'pg'
import { createDevnet } from '../devnet/index.js'
import { anvilAccount, artifacts, deployContract, encodeEmitMany } from '../fixtures/chain.js'
import { fixtureSuffix, FIXTURE_PARAMETERS } from './fixture.js'
import { spawnNode } from '../processes.js'
import { COMPILED_ENTRIES, watchProcess } from './processStats.js'
import { createRawRpc, type RawRpc } from './rawRpc.js'
import { percentile } from './report.js'
import { createBenchDatabase, createRedisPrefix } from '../services.js'
import { sleep } from '../../src/utils/loop.js'

const BLOCK_TIME_MS = 2_000
const LOGS_PER_TX = 2
const TX_GAS = 300_000n
// Far above anvil's base fee on a quiet devnet, so no transaction waits for a cheaper block.
const MAX_FEE = 100_000_000_000n
const PRIORITY_FEE = 1_000_000_000n
const SENDER = 1
const WARMUP_TIMEOUT_MS = 60_000
/** After the daemon has stored the head holding every sent transaction: time for its last writes to commit. */
const DRAIN_GRACE_MS = 3_000
/** Longest wait, from the last send, for the daemon to catch up and every served log to be readable. */
const DRAIN_TIMEOUT_MS = 60_000
const DRAIN_POLL_MS = 100
const MISSING_EXAMPLES = 5

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
  /** Served logs never readable by the end of the drain: any makes the part fail. */
  missing: number
  /** A few of them: `transaction:ordinal`, when served, the block that mined the transaction. */
  missingExamples: string[]
  /** How the drain ended: the head holding every sent transaction and when the daemon had stored it. */
  drain: { head: number | null; liveBlock: number | null; caughtUpAfterMs: number | null; waitedMs: number }
  daemonPeakRssMiB: number
}

type Served = { servedAt: number; readableAt?: number; status?: string; measured: boolean }

export async function runPendingLatency(parameters: PendingRunParameters): Promise<PendingRun> {
  const cleanups: (() => Promise<unknown>)[] = []
  try {
    const devnet = await createDevnet({ profile: 'op', blockTimeMs: BLOCK_TIME_MS })
    cleanups.push(() => devnet.stop())
    const db = await createBenchDatabase(parameters.adminDatabaseUrl, 'pending')
    cleanups.push(() => db.drop())
    const redis = createRedisPrefix(parameters.redisUrl, 'ct_bench_pending')
    cleanups.push(() => redis.cleanup())
    const rpc = createRawRpc(devnet.url, 4)
    cleanups.push(async () => rpc.close())

    const emitter = await deployContract(devnet.url, artifacts.Emitter)
    const chainId = Number(await rpc.call<string>('eth_chainId', []))
    const daemon = spawnNode({
      entry: COMPILED_ENTRIES.daemon,
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
    cleanups.push(() => daemon.kill())
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
      const logs = await rpc.call<{ transactionHash: string; logIndex: string }[]>('eth_getLogs', [
        { fromBlock: 'pending', toBlock: 'pending' },
      ])
      const now = performance.now()
      for (const key of logKeys(
        logs.map((log) => ({ hash: log.transactionHash.toLowerCase(), group: '', logIndex: Number(log.logIndex) })),
      )) {
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
      const { rows } = await readable.query<{ transaction_hash: string; block_hash: string; log_index: number; status: string }>(
        'SELECT transaction_hash, block_hash, log_index, status FROM analytics.logs WHERE chain_id = $1 AND transaction_hash = ANY($2)',
        [chainId, outstanding],
      )
      const now = performance.now()
      const status = new Map(rows.map((row) => [`${row.transaction_hash}:${row.block_hash}:${row.log_index}`, row.status]))
      for (const [key, where] of logKeysWithGroup(
        rows.map((row) => ({ hash: row.transaction_hash, group: row.block_hash, logIndex: row.log_index })),
      )) {
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
    const sendingEnded = performance.now()
    const measured = () => [...served.values()].filter((entry) => entry.measured)
    const drain = await drainUntilCaughtUp({
      rpc,
      pool: readable,
      chainId,
      sender: sender.address,
      nextNonce: sender.nextNonce(),
      settled: () => measured().every((entry) => entry.readableAt !== undefined),
    })
    // Stop watching before reading the entries, so none changes while the figures are made.
    stopped = true
    await Promise.all(loops)

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
    const missingKeys = [...served.entries()].filter(([, entry]) => entry.measured && entry.readableAt === undefined)
    const missingExamples = await Promise.all(
      missingKeys.slice(0, MISSING_EXAMPLES).map(async ([key, entry]) => {
        const hash = key.split(':')[0]!
        const receipt = await rpc.call<{ blockNumber: string } | null>('eth_getTransactionReceipt', [hash]).catch(() => null)
        const mined = receipt ? `mined in block ${Number(receipt.blockNumber)}` : 'not mined'
        const offset = (entry.servedAt - sendingEnded) / 1000
        return `${key} (served ${Math.abs(offset).toFixed(1)} s ${offset < 0 ? 'before' : 'after'} sending stopped, ${mined})`
      }),
    )
    return {
      byStatus,
      logs: entries.length,
      latenciesMs,
      p50Ms: percentile(latenciesMs, 50),
      p99Ms: percentile(latenciesMs, 99),
      maxMs: latenciesMs.at(-1) ?? Number.NaN,
      readAsPending: entries.filter((entry) => entry.status === 'pending').length,
      missing: missingKeys.length,
      missingExamples,
      drain,
      daemonPeakRssMiB: daemonWatch.peakMiB(),
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
  }
}

type DrainParameters = {
  rpc: RawRpc
  pool: pg.Pool
  chainId: number
  sender: string
  /** The sender's nonce after its last transaction. */
  nextNonce: number
  /** Whether every served log is readable already. */
  settled: () => boolean
}

/**
 * Waits until every sent transaction is mined (the sender's latest nonce reaches `nextNonce`), the
 * daemon's live follower has stored the head then (`chain_state.live_block`), then until `settled()`
 * or `DRAIN_GRACE_MS` more; at most `DRAIN_TIMEOUT_MS` in all. No log is first served after that, and
 * one served just before sending stopped is readable by a correct daemon, as pending or once confirmed.
 */
async function drainUntilCaughtUp({ rpc, pool, chainId, sender, nextNonce, settled }: DrainParameters): Promise<PendingRun['drain']> {
  const started = performance.now()
  const deadline = started + DRAIN_TIMEOUT_MS
  let head: number | null = null
  let liveBlock: number | null = null
  let caughtUpAt: number | null = null
  while (performance.now() < deadline) {
    // Only once caught up: until every transaction is mined, a log may still be served for the first time.
    if (caughtUpAt !== null && (settled() || performance.now() - caughtUpAt >= DRAIN_GRACE_MS)) break
    if (caughtUpAt === null) {
      // A failed look is retried on the next turn; the deadline bounds the whole wait.
      try {
        if (head === null && Number(await rpc.call<string>('eth_getTransactionCount', [sender, 'latest'])) >= nextNonce)
          head = Number(await rpc.call<string>('eth_blockNumber', []))
        if (head !== null) {
          const { rows } = await pool.query<{ live_block: string | null }>('SELECT live_block FROM chain_state WHERE chain_id = $1', [
            chainId,
          ])
          liveBlock = rows[0]?.live_block == null ? null : Number(rows[0].live_block)
          if (liveBlock !== null && liveBlock >= head) caughtUpAt = performance.now()
        }
      } catch {}
    }
    await sleep(DRAIN_POLL_MS)
  }
  return { head, liveBlock, caughtUpAfterMs: caughtUpAt === null ? null : caughtUpAt - started, waitedMs: performance.now() - started }
}

/** Signs Emitter calls locally with consecutive nonces; every fifth carries an ERC-8021 suffix, as in the fixture. */
function createSender(rpc: RawRpc, chainId: number, emitter: Hex) {
  const account = anvilAccount(SENDER)
  let nonce: number | undefined
  let i = 0
  return {
    address: account.address,
    /** The nonce the next transaction takes. */
    nextNonce: () => nonce ?? 0,
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
