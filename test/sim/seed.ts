/**
 * One seed of the simulation: a devnet chain, the daemon (scheduler and worker processes) with one
 * filter, backfills with other filters, the seed's schedule of reorgs, kills, crash points, pending
 * churn, provider faults and a Redis restart, then the chain moved past finality, the processes left
 * to settle, and every filter compared with the node.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import { toEventSelector, type AbiEvent } from 'viem'
import { builderCodesRegistryFilter } from '../../src/attribution/registry.js'
import { createDevnet, type Devnet } from '../../harness/devnet/index.js'
import { clearRedisPrefix, createRedis, RANGE_QUEUE } from '../../src/queue/index.js'
import { storedBlocks } from '../../src/sync/historical.js'
import { filterIdOf } from '../../src/sync/filter.js'
import { artifacts } from '../../harness/fixtures/chain.js'
import { startFaultProxy, type FaultProxy, type Faults } from '../../harness/fixtures/faultProxy.js'
import { waitFor } from '../helpers/compare.js'
import { createTestDatabase, type TestDatabase } from '../../harness/services.js'
import { CHAIN_ID, createCleanups, nodeHead, waitCaughtUp } from '../faults/helpers/faultChain.js'
import type { PrivateRedis } from '../faults/helpers/privateServices.js'
import { createSimChain, type SimChain } from './simChain.js'
import { compareWithNode, type ComparedFilter, type OrphanedRow } from './compare.js'
import { createSupervisor, type Supervisor } from './supervisor.js'
import {
  createSchedule,
  describeSchedule,
  PAST_FINALITY,
  plannedCrashes,
  type Action,
  type CrashPlan,
  type FaultKind,
  type ProcessName,
  type SimFilter,
} from './schedule.js'

const SETTLE_TIMEOUT_MS = 180_000
/** A quiet moment mid-run settles sooner: only the tip, the backfills and the repairs, no finality. */
const CHECK_SETTLE_TIMEOUT_MS = 90_000
const SETTLE_POLL_MS = 250
/** Longest wait for a process to get somewhere before the schedule moves on anyway. */
const AWAIT_MS = 30_000
/** The settled state must hold this long (a repair job may still be on its way). */
const SETTLED_FOR_MS = 2_000

/** The proxy's faults per kind: every one is something providers do and the indexer must ride out. */
const FAULTS: Record<FaultKind, Faults> = {
  'rate-limit': { '*': { rateLimit: { probability: 0.15 } } },
  unavailable: { '*': { unavailable: { probability: 0.1 } } },
  malformed: { '*': { malformed: { probability: 0.1 } } },
  'slow-logs': { eth_getLogs: { slow: { probability: 0.5, delayMs: 400 } } },
  'range-cap': { eth_getLogs: { hintlessCap: { maxBlocks: 2 } } },
  'suggested-range': { eth_getLogs: { suggestedRange: { maxBlocks: 3 } } },
  'result-cap': { eth_getLogs: { maxResults: 150 } },
}

export type SeedResult = { seed: number; schedule: string[]; log: string[]; differences: string[]; seconds: number }

type World = {
  redisClient: Redis
  leaseKey: string
  devnet: Devnet
  chain: SimChain
  proxy: FaultProxy
  redis: PrivateRedis
  db: TestDatabase
  processes: Supervisor
  env: Record<string, string>
  orphanedRows: OrphanedRow[]
  backfillRanges: (ComparedFilter | undefined)[]
  firstTrafficBlock: number
  /** The daemon's filter from its START_BLOCK on. */
  daemon: { addresses: string[]; topics: string[]; from: number }
  schedulers: ProcessName[]
  scope: 'logs' | 'blocks'
  /** The provider faults now on (off during a mid-run check, then on again). */
  faults: FaultKind | 'none'
  /** The crash point a `crash` action set that the next action must reach, and how often it had fired before. */
  awaitedCrash?: { point: CrashPlan['point']; firedBefore: number }
  midRunDifferences: string[]
  log: (line: string) => void
}

/** A filter in `eth_getLogs` terms, and as the backfill's flags. */
function resolveFilter(filter: SimFilter, chain: SimChain) {
  const addresses = filter.contracts
    .flatMap((c) => (c === 'entryPoints' ? chain.entryPoints : [chain.emitters[c]!]))
    .map((a) => a.toLowerCase())
  const topics = filter.events.map((name) => {
    const event = artifacts.Emitter.abi.find((item): item is AbiEvent => item.type === 'event' && item.name === name)!
    return toEventSelector(event)
  })
  return { addresses, topics, flags: [...addresses.flatMap((a) => ['--address', a]), ...topics.flatMap((t) => ['--topic0', t])] }
}

/** Rows stored from blocks above the fork point: after the reorg they must still be there, removed. */
async function rowsAbove(world: World, fork: number): Promise<OrphanedRow[]> {
  const { rows } = await world.db.store.pool.query(
    `SELECT block_number, block_hash, log_index FROM logs WHERE block_number > $1 AND status <> 'pending'`,
    [fork],
  )
  return rows.map((r) => ({ blockNumber: Number(r.block_number), blockHash: r.block_hash, logIndex: r.log_index }))
}

async function runAction(world: World, action: Action, index: number, schedule: ReturnType<typeof createSchedule>) {
  const { chain, processes, log } = world
  switch (action.type) {
    case 'blocks': {
      const numbers: number[] = []
      for (const block of action.blocks) numbers.push(await chain.mineBlock(block))
      return log(`blocks ${numbers.join(', ')} mined`)
    }
    case 'reorg': {
      const done = await chain.reorg(action, async (fork) => void world.orphanedRows.push(...(await rowsAbove(world, fork))))
      return log(
        done
          ? `reorg: depth ${done.depth}, fork block ${done.fork}, ${done.replacements} transaction(s) on the new fork; head ${await chain.head()}`
          : 'reorg skipped: the chain is too short',
      )
    }
    case 'start-backfill': {
      const plan = schedule.backfills[action.index]!
      const { addresses, topics, flags } = resolveFilter(plan.filter, chain)
      const from = world.firstTrafficBlock + plan.fromOffset
      const to = Math.max(from, (await chain.head()) - plan.toBelowHead)
      const name: ProcessName = `backfill-${action.index}`
      world.backfillRanges[action.index] = { name, addresses, topics, range: [from, to] }
      // A waiting backfill runs range jobs itself too: a `range-stored` crash point is set in it as in the worker.
      const crashAt = world.awaitedCrash?.point === 'range-stored' ? 'range-stored' : undefined
      processes.start(name, 'scripts/backfill.ts', ['--from', String(from), '--to', String(to), ...flags, '--json'], world.env, crashAt)
      return log(`${name} started: blocks ${from}–${to}`)
    }
    case 'await-backfill': {
      const name = `backfill-${action.index}` as const
      const range = world.backfillRanges[action.index]!
      const filterId = filterIdOf({ addresses: range.addresses, topics: range.topics })
      const blocks = range.range[1] - range.range[0] + 1
      const progressed = async () =>
        !processes.running(name) ||
        (await storedBlocks(world.db.store.pool, CHAIN_ID, filterId, range.range)) >= Math.ceil(blocks * action.share)
      await waitFor(progressed, `${name} to store blocks`, AWAIT_MS, 50).catch(() =>
        log(`${name} had not stored ${action.share * 100} % of its range within ${AWAIT_MS / 1000} s`),
      )
      return log(`${name} has stored ${await storedBlocks(world.db.store.pool, CHAIN_ID, filterId, range.range)} blocks`)
    }
    case 'kill': {
      await sleep(action.afterMs)
      const running =
        action.process === 'backfill'
          ? schedule.backfills.map((_, i) => `backfill-${i}` as const).filter(processes.running)
          : [action.process]
      const victim = running[index % Math.max(running.length, 1)]
      if (!victim || !(await processes.kill(victim))) return log(`kill ${action.process}: none running`)
      return log(`${victim} SIGKILLed`)
    }
    case 'crash': {
      const leader = await world.redisClient.get(world.leaseKey)
      // With two schedulers both get the point: whichever leads next reaches it.
      for (const name of action.process === 'scheduler' ? world.schedulers : [action.process]) await processes.crashAt(name, action.point)
      world.awaitedCrash = { point: action.point, firedBefore: firedCount(world, action.point) }
      // A new scheduler waits for the killed one's lease to lapse: the point must be reachable before what follows.
      if (action.process === 'scheduler') {
        await waitFor(
          async () => {
            const now = await world.redisClient.get(world.leaseKey)
            return now !== null && now !== leader
          },
          'the restarted scheduler to lead',
          AWAIT_MS,
        ).catch(() => log('the restarted scheduler did not lead in time'))
      }
      return log(`${action.process} restarted with CODETRAIL_CRASH_AT=${action.point}`)
    }
    case 'pending':
      return log(`pending ${action.kind}: ${await chain.pendingChurn(action)}`)
    case 'faults':
      world.faults = action.kind
      world.proxy.setFaults(action.kind === 'none' ? {} : FAULTS[action.kind])
      return log(`provider faults: ${action.kind}`)
    case 'stall':
      return stallLeader(world, action.ms)
    case 'check':
      return checkMidRun(world)
    case 'registry':
      return log(`registry: ${await chain.registryCall(action)}`)
    case 'restart-redis':
      await world.redis.restart(action.downMs)
      return log(`redis restarted (down ${action.downMs} ms)`)
    case 'pause':
      return sleep(action.ms)
  }
}

/**
 * Waits until everything asked for is done: backfills finished, no job queued or running, the
 * follower at the node's head, finality at or past `finalAtLeast` and every repair closed. Returns
 * what is still not done at the timeout (empty when settled).
 */
async function settle(world: World, finalAtLeast: number | undefined, timeoutMs = SETTLE_TIMEOUT_MS): Promise<string[]> {
  const connection = createRedis(world.redis.url)
  connection.on('error', () => {})
  const queue = new Queue(RANGE_QUEUE, { connection, prefix: world.env.REDIS_PREFIX! })
  try {
    const deadline = Date.now() + timeoutMs
    let settledSince: number | undefined
    for (;;) {
      const [head, { rows }, counts, repairs] = await Promise.all([
        nodeHead(world.devnet.url),
        world.db.store.pool.query('SELECT live_block, live_hash, finalized_block FROM chain_state'),
        queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed'),
        world.db.store.pool.query('SELECT count(*)::int AS n FROM sync_repairs'),
      ])
      const state = rows[0]
      const waitingFor = [
        ...(world.processes.backfillsDone() ? [] : ['backfills to finish']),
        ...(state?.live_block === head.number && state?.live_hash === head.hash
          ? []
          : [`the follower to reach head ${head.number} (at ${state?.live_block})`]),
        ...(finalAtLeast === undefined || (state?.finalized_block ?? -1) >= finalAtLeast
          ? []
          : [`finality to reach ${finalAtLeast} (at ${state?.finalized_block})`]),
        ...(repairs.rows[0].n === 0 ? [] : [`${repairs.rows[0].n} open repair(s)`]),
        ...(Object.entries(counts).every(([state, n]) => state === 'failed' || n === 0) ? [] : [`queued jobs ${JSON.stringify(counts)}`]),
      ]
      if (waitingFor.length === 0) {
        settledSince ??= Date.now()
        if (Date.now() - settledSince >= SETTLED_FOR_MS) {
          if (counts.failed) world.log(`${counts.failed} range job(s) ended failed`)
          return []
        }
      } else settledSince = undefined
      if (Date.now() > deadline) {
        return [
          ...waitingFor.map((what) => `not settled after ${timeoutMs / 1000} s: waiting for ${what}`),
          ...world.processes.unfinishedOutput(),
        ]
      }
      await sleep(SETTLE_POLL_MS)
    }
  } finally {
    await queue.close()
    connection.disconnect()
  }
}

/** The scheduler process that holds the lease now (the one that logged acquiring the stored generation). */
async function leadingScheduler(world: World): Promise<{ name: ProcessName; generation: number } | undefined> {
  const { rows } = await world.db.store.pool.query('SELECT lease_generation FROM chain_state')
  const generation = Number(rows[0]?.lease_generation ?? 0)
  const acquired = new RegExp(`"lease_generation":"?${generation}"?[,}][^\\n]*scheduler lease acquired`)
  const name = world.schedulers.find((n) => acquired.test(world.processes.output(n)))
  return name && { name, generation }
}

/**
 * Stops the leading scheduler (SIGSTOP) past its lease, so the other takes over, and resumes it after
 * `ms`: whatever it was about to write must be refused by the lease generation, not applied.
 */
async function stallLeader(world: World, ms: number) {
  const leader = await leadingScheduler(world)
  if (!leader) return world.log('stall: no leading scheduler found')
  const started = Date.now()
  const token = await world.redisClient.get(world.leaseKey)
  world.processes.signal(leader.name, 'SIGSTOP')
  world.log(`${leader.name} stopped (SIGSTOP) holding lease generation ${leader.generation}`)
  // The lease in Redis: the new leader's claim of the next generation waits for the stopped one's transaction in flight, if any.
  const takenOver = async () => {
    const holder = await world.redisClient.get(world.leaseKey)
    return holder !== null && holder !== token
  }
  await waitFor(takenOver, 'the other scheduler to take the lease', AWAIT_MS).catch(() =>
    world.log('stall: no scheduler took the lease over'),
  )
  await sleep(Math.max(0, ms - (Date.now() - started)))
  world.processes.signal(leader.name, 'SIGCONT')
  world.log(`${leader.name} resumed (SIGCONT) after ${((Date.now() - started) / 1000).toFixed(1)} s`)
}

const firedCount = (world: World, point: string) => world.processes.fired().filter((f) => f.point === point).length

/** Waits until the crash point the last `crash` action set has fired (the action after it reaches it). */
async function awaitCrash(world: World) {
  const planned = world.awaitedCrash
  if (!planned) return
  world.awaitedCrash = undefined
  await waitFor(
    async () => firedCount(world, planned.point) > planned.firedBefore,
    `crash point ${planned.point} to fire`,
    AWAIT_MS,
    50,
  ).catch(() => world.log(`crash point ${planned.point} had not fired ${AWAIT_MS / 1000} s after the action meant to reach it`))
}

/** The filters asked for so far, each over its range (the daemon's and the registry's, always indexed from block 0, up to `top`). */
function comparedFilters(world: World, top: number): ComparedFilter[] {
  return [
    { name: 'daemon', addresses: world.daemon.addresses, topics: world.daemon.topics, range: [world.daemon.from, top] },
    { name: 'registry', ...builderCodesRegistryFilter(world.chain.registry), range: [0, top] },
    ...world.backfillRanges.filter((f) => f !== undefined),
  ]
}

/**
 * A quiet moment mid-run: faults off, then once everything settled (tip at the head, backfills done,
 * no job or repair left) the index is compared with the node before finality; then the faults go on again.
 */
async function checkMidRun(world: World) {
  world.proxy.setFaults({})
  const unsettled = await settle(world, undefined, CHECK_SETTLE_TIMEOUT_MS)
  const top = await world.chain.head()
  const differences = [
    ...unsettled,
    ...(await compareWithNode({
      pool: world.db.store.pool,
      rpcUrl: world.devnet.anvilUrl,
      filters: comparedFilters(world, top),
      orphanedRows: world.orphanedRows,
      entryPoints: world.chain.entryPoints,
      chainId: CHAIN_ID,
      scope: world.scope,
      registry: world.chain.registry,
      canonicalTop: top,
      note: world.log,
    })),
  ]
  world.midRunDifferences.push(...differences.map((line) => `mid-run (head ${top}): ${line}`))
  world.log(`mid-run check at head ${top}: ${differences.length === 0 ? 'equal to the node' : `${differences.length} difference line(s)`}`)
  world.proxy.setFaults(world.faults === 'none' ? {} : FAULTS[world.faults])
}

/** Runs `seed` against a private Redis (restarted by the schedule) and the shared PostgreSQL. */
export async function runSeed(seed: number, redis: PrivateRedis): Promise<SeedResult> {
  const started = Date.now()
  const schedule = createSchedule(seed)
  const lines: string[] = []
  const log = (line: string) => lines.push(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${line}`)
  const cleanups = createCleanups()
  try {
    const devnet = await createDevnet(
      schedule.chain.profile === 'op'
        ? { profile: 'op', blockTimeMs: 0, refreshMs: 100, canonicalLag: schedule.chain.canonicalLag }
        : { profile: 'base', blockTimeMs: 0 },
    )
    cleanups.add(() => devnet.stop())
    const chain = await createSimChain(devnet, schedule.emitters, log)
    const firstTrafficBlock = chain.deployedTop + 1
    for (const block of schedule.prefix) await chain.mineBlock(block)
    const prefixTop = await chain.head()
    const proxy = await startFaultProxy({ upstream: devnet.url, seed })
    cleanups.add(() => proxy.stop())
    const db = await createTestDatabase()
    const prefix = `ct_sim_${seed}_${Date.now().toString(36)}`
    // Kept for a look after the run: `--keep-db` (SIM_KEEP_DB).
    cleanups.add(() => (process.env.SIM_KEEP_DB ? db.store.close() : db.drop()))
    if (process.env.SIM_KEEP_DB) log(`database ${db.url} kept`)
    cleanups.add(() => clearRedisPrefix(redis.url, prefix))
    const env: Record<string, string> = {
      RPC_URL: proxy.url,
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      CHUNK_BLOCKS: String(schedule.chunkBlocks),
      WORKER_CONCURRENCY: '2',
      JOB_LOCK_MS: '2000',
      HEAD_POLL_MS: '100',
      PENDING_POLL_MS: '100',
      RPC_TIMEOUT_MS: '5000',
      ATTRIBUTION_SCOPE: schedule.scope,
      BUILDER_CODES_REGISTRY: chain.registry.toLowerCase(),
    }
    const processes = createSupervisor(log)
    cleanups.add(() => processes.stopAll())
    const redisClient = createRedis(redis.url)
    // The schedule restarts Redis: the client reconnects, and its errors meanwhile are expected.
    redisClient.on('error', () => {})
    cleanups.add(async () => redisClient.disconnect())
    const daemon = resolveFilter(schedule.daemonFilter, chain)
    const handOff = prefixTop + 1 - schedule.handOffBelowPrefix
    const world: World = {
      redisClient,
      leaseKey: `${prefix}:scheduler:${CHAIN_ID}`,
      devnet,
      chain,
      proxy,
      redis,
      db,
      processes,
      env,
      orphanedRows: [],
      backfillRanges: [],
      firstTrafficBlock,
      daemon: { addresses: daemon.addresses, topics: daemon.topics, from: handOff },
      schedulers: schedule.twoSchedulers ? ['scheduler', 'scheduler-2'] : ['scheduler'],
      scope: schedule.scope,
      faults: 'none',
      midRunDifferences: [],
      log,
    }

    const daemonEnv = {
      ...env,
      INDEX_ADDRESSES: daemon.addresses.join(','),
      INDEX_TOPICS: daemon.topics.join(','),
      START_BLOCK: String(handOff),
      ...(schedule.websocket ? { RPC_WS_URL: devnet.wsUrl } : {}),
      // The stall finds the leading scheduler by the lease it logged acquiring.
      ...(schedule.twoSchedulers ? { LOG_LEVEL: 'info' } : {}),
    }
    for (const name of world.schedulers) processes.start(name, 'src/main.ts', ['--role', 'scheduler'], daemonEnv)
    processes.start('worker', 'src/main.ts', ['--role', 'worker'], env)
    log(`chain: deployments up to block ${chain.deployedTop}, traffic ${firstTrafficBlock}–${prefixTop}; daemon from block ${handOff}`)
    await waitCaughtUp(db.store.pool, devnet.url)
    log('the follower has reached the head')

    for (const [i, action] of schedule.actions.entries()) {
      await runAction(world, action, i, schedule)
      if (action.type !== 'crash') await awaitCrash(world)
      await sleep(schedule.gapsMs[i]!)
    }

    // The end: no more faults or crash points, the chain past finality, everything asked for done.
    proxy.setFaults({})
    for (const name of [...world.schedulers, 'worker'] as const) await processes.clearCrashPoint(name)
    await chain.mineEmpty(0)
    const compareTop = await chain.head()
    await chain.mineEmpty(PAST_FINALITY)
    log(`compared range ends at block ${compareTop}; mined to ${await chain.head()} to pass finality`)
    const unsettled = await settle(world, compareTop)
    log(`settled; restarts ${JSON.stringify(processes.restarts())}`)

    const fired = processes.fired()
    log(`crash points fired: ${fired.map((f) => `${f.point} (${f.name})`).join(', ') || 'none'}`)
    // A planned crash point that never fired fails the seed. One planned again that fired fewer times is
    // reported only: the action after it may be handled by a path without that point, and the compare
    // still holds the index to the node.
    const plannedPoints = [...new Set(plannedCrashes(schedule).map((planned) => planned.point))]
    for (const point of plannedPoints) {
      const planned = plannedCrashes(schedule).filter((p) => p.point === point).length
      const times = fired.filter((f) => f.point === point).length
      if (times > 0 && times < planned) log(`crash point ${point} planned ${planned} time(s), fired ${times} time(s)`)
    }
    const differences = [
      ...world.midRunDifferences,
      ...unsettled,
      ...plannedPoints.flatMap((point) =>
        fired.some((f) => f.point === point) ? [] : [`crash point ${point} was planned but never fired`],
      ),
      ...(await compareWithNode({
        pool: db.store.pool,
        rpcUrl: devnet.anvilUrl,
        filters: comparedFilters(world, compareTop),
        orphanedRows: world.orphanedRows,
        entryPoints: chain.entryPoints,
        chainId: CHAIN_ID,
        scope: schedule.scope,
        registry: chain.registry,
        note: log,
      })),
    ]
    return { seed, schedule: describeSchedule(schedule), log: lines, differences, seconds: (Date.now() - started) / 1000 }
  } catch (error) {
    // A seed that cannot play out (a node call refused, a wait timed out) is reported like a difference, with its schedule.
    const reason = error instanceof Error ? (error.stack ?? error.message) : String(error)
    return {
      seed,
      schedule: describeSchedule(schedule),
      log: lines,
      differences: [`the seed stopped: ${reason}`],
      seconds: (Date.now() - started) / 1000,
    }
  } finally {
    await cleanups.run()
  }
}

/** A seed's report: the seed, how to replay it, what differs from the node, the schedule, what happened. */
export function formatReport(result: SeedResult): string {
  const failed = result.differences.length > 0
  return [
    `seed ${result.seed} ${failed ? 'FAILED' : 'passed'} (${result.seconds.toFixed(0)} s) — replay: npm run test:sim -- --seed ${result.seed}`,
    ...(failed ? ['differences from the node:', ...result.differences.map((line) => `  ${line}`)] : []),
    'schedule:',
    ...result.schedule.map((line) => `  ${line}`),
    'run:',
    ...result.log.map((line) => `  ${line}`),
  ].join('\n')
}
