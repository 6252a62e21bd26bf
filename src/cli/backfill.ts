/**
 * `codetrail backfill --from <block> --to <block> [--address 0x..]... [--topic0 0x..]... [--no-wait] [--json]`
 *
 * Enqueues the missing part of the range as chunk jobs and, unless --no-wait, works on them itself
 * while showing progress, so it completes with or without daemons running. Exit 0 only when every
 * block of the range is stored.
 */
import cliProgress from 'cli-progress'
import { ConfigError, forChain, loadConfig, secretsOf, type Config } from '../config/index.js'
import { UsageError } from '../internal/errors.js'
import { createIndexer } from '../indexer.js'
import { createLogger } from '../internal/logger.js'
import { createMetrics, type Metrics } from '../internal/metrics.js'
import {
  checkRedis,
  createGasWorker,
  createRangeEvents,
  createRangeQueue,
  createRangeWorker,
  FATAL_REASON_PREFIX,
  rangeJobId,
  rangeQueueName,
} from '../queue/index.js'
import type { FilterRange } from '../store/index.js'
import { analyzeForGasFill, gasUsedMissing } from '../store/index.js'
import { planBackfill, storedBlocks } from '../sync/historical.js'
import { sleep } from '../utils/loop.js'
import { createRedactor } from '../utils/redact.js'

const POLL_MS = 500
const REPLAN_MS = 5_000
/** Longest wait for one client to close when the backfill ends. */
const CLOSE_TIMEOUT_MS = 5_000
/** The queued gas fills are waited for while what is owed shrinks at least this often. */
const GAS_STALL_MS = 15_000
/** A Redis command of the waiting loop that has no answer by then is given up for this poll. */
const REDIS_STEP_TIMEOUT_MS = 10_000

export type BackfillOptions = {
  from: number
  to: number | 'latest' | 'safe' | 'finalized'
  addresses: string[]
  topics: string[]
  wait: boolean
  json: boolean
  /** The configured chain's id or name; needed when the configuration has several. */
  chain?: string | undefined
  configFile?: string | undefined
}

/** The `backfill` command's flags as commander parses them. */
export type BackfillFlags = {
  from: string
  to: string
  address: string[]
  topic0: string[]
  wait: boolean
  json?: boolean
  chain?: string
  config?: string
}

/** Checks the flags' values; throws a `UsageError` naming the first bad one. */
export function parseBackfillOptions(values: BackfillFlags): BackfillOptions {
  const block = (flag: string, value: string) => {
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value)))
      throw new UsageError(`--${flag} must be a block number, got "${value}"`)
    return Number(value)
  }
  const from = block('from', values.from)
  const to = values.to === 'latest' || values.to === 'safe' || values.to === 'finalized' ? values.to : block('to', values.to)
  if (typeof to === 'number' && to < from) throw new UsageError(`--to (${to}) is below --from (${from})`)
  for (const address of values.address) {
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new UsageError(`--address must be a 0x-prefixed 20-byte address, got "${address}"`)
  }
  for (const topic of values.topic0) {
    if (!/^0x[0-9a-fA-F]{64}$/.test(topic)) throw new UsageError(`--topic0 must be a 0x-prefixed 32-byte topic, got "${topic}"`)
  }
  return {
    from,
    to,
    addresses: values.address,
    topics: values.topic0,
    wait: values.wait,
    json: values.json ?? false,
    chain: values.chain,
    configFile: values.config,
  }
}

/** The chunk jobs Redis no longer holds in any state. */
async function missingJobs(rangeQueue: ReturnType<typeof createRangeQueue>, jobs: readonly FilterRange[]): Promise<FilterRange[]> {
  const held = await Promise.all(jobs.map((job) => rangeQueue.queue.getJob(rangeJobId(job))))
  return jobs.filter((_, i) => !held[i])
}

/** `promise`, or a rejection once `ms` pass without its answer (the command itself is not cancelled). */
async function answeredWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`
  return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`
}

/** The configuration of the chain `--chain` names (by id or name); without it, the only chain configured. */
function chosenChain(config: Config, chain: string | undefined): Config {
  const listed = config.chains.map((c) => `${c.chainId ?? '?'} (${c.chainName})`).join(', ')
  if (chain === undefined) {
    if (config.chains.length === 1) return config
    throw new ConfigError(`${config.chains.length} chains are configured: choose one with --chain (${listed})`)
  }
  // The environment's one chain has no id until CHAIN_ID names it: --chain <id> then holds its node to that id.
  if (config.chains.length === 1 && config.chainId === undefined && /^\d+$/.test(chain))
    return forChain(config, { ...config.chains[0]!, chainId: Number(chain) })
  const chosen = config.chains.find((c) => String(c.chainId) === chain || c.chainName === chain)
  if (!chosen) throw new ConfigError(`--chain ${chain} is not configured; expected one of ${listed}`)
  return forChain(config, chosen)
}

/** Masks the configuration's secrets in what this command prints; set once the configuration is read. */
let redact = (text: string) => text

/** Runs the backfill; resolves to the exit code (a failure other than the configuration's is one masked line and 1). */
export async function backfill(options: BackfillOptions): Promise<number> {
  try {
    return await run(options)
  } catch (error) {
    if (error instanceof ConfigError) throw error
    process.stderr.write(`${redact(`backfill failed: ${(error as Error).message}`)}\n`)
    return 1
  }
}

async function run(options: BackfillOptions): Promise<number> {
  const config = chosenChain(loadConfig({ LOG_LEVEL: 'warn', ...process.env }, { file: options.configFile }), options.chain)
  const secrets = secretsOf(config)
  redact = createRedactor(secrets)
  const logger = createLogger(config.logLevel, { role: 'backfill' }, { fd: 2, secrets })
  const say = (text: string, fields: Record<string, unknown> = {}) => {
    const message = redact(text)
    options.json
      ? process.stdout.write(`${JSON.stringify({ event: 'message', message, ...fields })}\n`)
      : process.stderr.write(`${message}\n`)
  }

  await checkRedis(config.redisUrl)
  // Counts the node calls this process sends, for the summary line.
  const metrics = createMetrics({ defaultMetrics: false })
  const indexer = await createIndexer(config, logger, metrics)
  const cleanups: (() => Promise<unknown>)[] = [() => indexer.close()]
  // Each close is bounded: a BullMQ worker or queue whose Redis connection was dropped (a restart) may
  // never finish closing, and the backfill's result must not wait on it.
  const cleanup = async () => {
    for (const close of cleanups.reverse()) {
      await answeredWithin(
        close().catch(() => {}),
        CLOSE_TIMEOUT_MS,
      ).catch(() => logger.warn('a Redis or database client did not close in time; exiting without it'))
    }
  }
  try {
    const to = typeof options.to === 'number' ? options.to : await indexer.blockNumberAt(options.to)
    if (to < options.from) {
      say(`backfill: the node's ${options.to} block (${to}) is below --from (${options.from})`)
      return 2
    }
    const range = [options.from, to] as const
    const filter =
      options.addresses.length || options.topics.length ? { addresses: options.addresses, topics: options.topics } : indexer.filter
    const plan = await planBackfill(indexer.store.pool, { chainId: indexer.chainId, filter, range, chunkBlocks: config.chunkBlocks })
    if (plan.jobs.length === 0) {
      say(`blocks ${range[0]}–${range[1]} are already indexed (filter ${plan.filterId}); nothing to do`, { done: true })
      return 0
    }
    const queue = { redisUrl: config.redisUrl, prefix: config.redisPrefix, name: rangeQueueName(config, indexer.chainId) }
    const rangeQueue = createRangeQueue(queue)
    cleanups.push(() => rangeQueue.close())
    const { added, retried } = await rangeQueue.enqueue(plan.jobs)
    say(
      `enqueued ${plan.jobs.length} chunk jobs for ${plan.totalBlocks - plan.doneBlocks} missing blocks of ${range[0]}–${range[1]} (filter ${plan.filterId})`,
      {
        jobs: plan.jobs.length,
        added,
        retried,
      },
    )
    if (!options.wait) return 0

    const ids = new Set(plan.jobs.map(rangeJobId))
    const events = createRangeEvents(queue)
    cleanups.push(() => events.close())
    let logs = 0
    events.events.on('completed', ({ jobId, returnvalue }) => {
      if (!ids.has(jobId)) return
      const result = typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue
      logs += Number(result?.logs ?? 0)
    })
    const worker = createRangeWorker({
      ...queue,
      concurrency: config.workerConcurrency,
      lockDurationMs: config.jobLockMs,
      logger,
      process: indexer.processRange,
    })
    cleanups.push(() => worker.close())
    let interrupted = false
    const interrupt = () => (interrupted = true)
    process.once('SIGINT', interrupt)
    process.once('SIGTERM', interrupt)

    /**
     * Gas used of the attributed transactions, filled once every range is stored (so receipts never
     * compete with the ranges for the node): by the queued fills, then here for whatever they left.
     * Null when interrupted first.
     */
    const fillGas = async (rangeCalls: Awaited<ReturnType<typeof nodeCalls>>) => {
      const gasStarted = Date.now()
      await analyzeForGasFill(indexer.store.pool)
      const gasWorker = createGasWorker({
        redisUrl: config.redisUrl,
        prefix: config.redisPrefix,
        lockDurationMs: config.jobLockMs,
        logger,
        process: indexer.fillGas,
      })
      cleanups.push(() => gasWorker.close())
      // The queued fills know which blocks to read whole; but Redis may have lost them, or this process its
      // connections to it. So the wait ends when the queue is empty or when what PostgreSQL says is owed
      // stops shrinking, and whatever is still owed is filled here over the range.
      let owed = await gasUsedMissing(indexer.store.pool, indexer.chainId, range)
      let progressAt = Date.now()
      while (owed > 0 && Date.now() - progressAt < GAS_STALL_MS) {
        if (interrupted) {
          say('interrupted while filling gas used; the workers of a running daemon finish it', { done: false })
          return null
        }
        const pendingFills = await answeredWithin(indexer.gasQueue.pending(), REDIS_STEP_TIMEOUT_MS).catch(() => undefined)
        if (pendingFills === 0) break
        await sleep(POLL_MS)
        const now = await gasUsedMissing(indexer.store.pool, indexer.chainId, range)
        if (now < owed) progressAt = Date.now()
        owed = now
      }
      await indexer.fillGas({ chainId: indexer.chainId, fromBlock: range[0], toBlock: range[1] })
      const left = await gasUsedMissing(indexer.store.pool, indexer.chainId, range)
      const node = await nodeCalls(metrics)
      const byMethod = Object.fromEntries(
        Object.entries(node.byMethod)
          .map(([method, n]) => [method, n - (rangeCalls.byMethod[method] ?? 0)])
          .filter(([, n]) => Number(n) > 0),
      )
      return {
        seconds: (Date.now() - gasStarted) / 1000,
        left,
        byMethod,
        calls: node.calls - rangeCalls.calls,
        requests: node.requests - rangeCalls.requests,
      }
    }

    const started = Date.now()
    let lastPlanned = started
    const startDone = plan.doneBlocks
    const bar = options.json
      ? undefined
      : new cliProgress.SingleBar(
          {
            format: 'backfill |{bar}| {value}/{total} blocks | {logs} logs | {rate} logs/s | ETA {etaText}',
            noTTYOutput: true,
            notTTYSchedule: 2_000,
            etaBuffer: 20,
            stream: process.stderr,
          },
          cliProgress.Presets.shades_classic,
        )
    bar?.start(plan.totalBlocks, plan.doneBlocks, { logs: 0, rate: 0, etaText: '…' })
    for (;;) {
      const done = await storedBlocks(indexer.store.pool, indexer.chainId, plan.filterId, range)
      const seconds = (Date.now() - started) / 1000
      const rate = Math.round(logs / Math.max(seconds, 0.001))
      const blocksPerSec = (done - startDone) / Math.max(seconds, 0.001)
      const etaSec = blocksPerSec > 0 ? Math.round((plan.totalBlocks - done) / blocksPerSec) : null
      bar?.update(done, { logs, rate, etaText: etaSec === null ? '…' : formatDuration(etaSec) })
      if (options.json) {
        process.stdout.write(
          `${JSON.stringify({ event: 'progress', blocksDone: done, blocksTotal: plan.totalBlocks, logs, logsPerSec: rate, etaSec })}\n`,
        )
      }
      if (done === plan.totalBlocks) {
        bar?.stop()
        const node = await nodeCalls(metrics)
        const perThousandLogs = logs > 0 ? ` (${((node.calls * 1000) / logs).toFixed(1)} per 1,000 logs)` : ''
        say(
          `blocks stored: ${plan.totalBlocks} blocks, ${logs} logs in ${seconds.toFixed(1)} s (${rate} logs/s); ${node.calls} node calls in ${node.requests} requests${perThousandLogs}`,
        )
        const gas = await fillGas(node)
        if (!gas) return 1
        say(
          `done: ${plan.totalBlocks} blocks, ${logs} logs; gas used filled in ${gas.seconds.toFixed(1)} s more with ${gas.calls} node calls` +
            (gas.left > 0
              ? `, ${gas.left} attributed transaction(s) still without it (their receipts are asked again when their blocks are)`
              : ''),
          {
            done: true,
            blocks: plan.totalBlocks,
            logs,
            seconds,
            nodeCalls: node.byMethod,
            nodeRequests: node.requests,
            gas: { seconds: gas.seconds, left: gas.left, nodeCalls: gas.byMethod, nodeRequests: gas.requests },
          },
        )
        return 0
      }
      // Redis may be restarting: its part of the step is bounded and tried again on the next poll, so a
      // dropped connection neither ends the backfill nor stalls it (the blocks stored are read from PostgreSQL).
      let failed: Awaited<ReturnType<typeof rangeQueue.failedJobs>> = []
      try {
        failed = await answeredWithin(rangeQueue.failedJobs([...ids]), REDIS_STEP_TIMEOUT_MS)
        // Jobs lost with Redis (a restart without persistence) are planned again from what the database lacks; ids are deterministic, so live jobs are not doubled.
        if (Date.now() - lastPlanned > REPLAN_MS) {
          lastPlanned = Date.now()
          const again = await planBackfill(indexer.store.pool, { chainId: indexer.chainId, filter, range, chunkBlocks: config.chunkBlocks })
          const missing = await answeredWithin(missingJobs(rangeQueue, again.jobs), REDIS_STEP_TIMEOUT_MS)
          if (missing.length > 0) await answeredWithin(rangeQueue.enqueue(missing), REDIS_STEP_TIMEOUT_MS)
        }
      } catch (error) {
        logger.warn({ err: error }, 'Redis did not answer the backfill; asking again')
        lastPlanned = 0
      }
      if (failed.length > 0 || interrupted) {
        bar?.stop()
        for (const job of failed) {
          const fatal = job.failedReason.startsWith(FATAL_REASON_PREFIX)
          say(`chunk ${job.data.fromBlock}–${job.data.toBlock} failed after ${job.attemptsMade} attempt(s): ${job.failedReason}`, {
            failed: job.id,
            fromBlock: job.data.fromBlock,
            toBlock: job.data.toBlock,
            attempts: job.attemptsMade,
            fatal,
            reason: job.failedReason,
          })
        }
        const fatal = failed.filter((job) => job.failedReason.startsWith(FATAL_REASON_PREFIX)).length
        say(
          interrupted
            ? `interrupted with ${plan.totalBlocks - done} blocks left; run the same command again to resume`
            : `${failed.length} chunk(s) failed (${fatal} at once on an error asking again cannot fix, ${failed.length - fatal} after retries); fix the cause and run the same command again to resume`,
          { done: false },
        )
        return 1
      }
      await sleep(POLL_MS)
    }
  } finally {
    await cleanup()
  }
}

/** JSON-RPC calls (by method, and in all) and HTTP requests this process sent to the node. */
async function nodeCalls(metrics: Metrics): Promise<{ byMethod: Record<string, number>; calls: number; requests: number }> {
  const byMethod = Object.fromEntries((await metrics.rpcCalls.get()).values.map((v) => [String(v.labels.method), v.value]))
  const requests = (await metrics.rpcDuration.get()).values
    .filter((v) => v.metricName?.endsWith('_count'))
    .reduce((sum, v) => sum + v.value, 0)
  return { byMethod, calls: Object.values(byMethod).reduce((sum, n) => sum + n, 0), requests }
}
