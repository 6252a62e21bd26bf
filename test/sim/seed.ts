/**
 * One seed of the simulation: a devnet chain (two, of both profiles, on a two-chain seed), the daemon
 * (scheduler and worker processes) with one filter per chain, backfills with other filters, the seed's
 * schedule of reorgs, kills, crash points, pending churn, provider faults and a Redis restart, then the
 * chains moved past finality, the processes left to settle, and every filter compared with its chain's node.
 */
import { rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import { toEventSelector, type AbiEvent } from 'viem'
import { builderCodesRegistryFilter } from '../../src/attribution/registry.js'
import { createDevnet, type Devnet } from '../../harness/devnet/index.js'
import { clearRedisPrefix, createRedis, rangeQueueName } from '../../src/queue/index.js'
import { storedBlocks } from '../../src/sync/historical.js'
import { filterIdOf } from '../../src/sync/filter.js'
import { artifacts } from '../../harness/fixtures/chain.js'
import { startFaultProxy, type FaultProxy, type Faults } from '../../harness/fixtures/faultProxy.js'
import { waitFor } from '../helpers/compare.js'
import { createTestDatabase, type TestDatabase } from '../../harness/services.js'
import { createCleanups, nodeHead, waitCaughtUp, type Cleanups } from '../faults/helpers/faultChain.js'
import type { PrivateRedis } from '../faults/helpers/privateServices.js'
import { createSimChain, type SimChain } from './simChain.js'
import { compareWithNode, type ComparedFilter, type OrphanedRow } from './compare.js'
import { createSupervisor, type Supervisor } from './supervisor.js'
import {
  CHAIN_IDS,
  chainOf,
  createSchedule,
  describeSchedule,
  PAST_FINALITY,
  plannedCrashes,
  type Action,
  type BlockPlan,
  type ChainPlan,
  type CrashPlan,
  type FaultKind,
  type ProcessName,
  type Schedule,
  type SimFilter,
} from './schedule.js'
import { writeConfigFile } from '../helpers/configFile.js'

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

/** One chain of the seed: its node, contracts and fault proxy, and what the daemon follows on it. */
type SimSide = {
  chainId: number
  /** Its name in the config file of a two-chain seed: its profile. */
  name: string
  devnet: Devnet
  chain: SimChain
  proxy: FaultProxy
  firstTrafficBlock: number
  /** The daemon's filter from its START_BLOCK on. */
  daemon: { addresses: string[]; topics: string[]; from: number }
  orphanedRows: OrphanedRow[]
  /** The chain's scheduler lease in Redis. */
  leaseKey: string
  /** The chain's range queue. */
  queue: string
}

type World = {
  redisClient: Redis
  /** The seed's chains: one, or two followed by the same processes. */
  chains: SimSide[]
  redis: PrivateRedis
  db: TestDatabase
  processes: Supervisor
  env: Record<string, string>
  /** Each backfill's filter and range, and its chain's index. */
  backfillRanges: ((ComparedFilter & { chain: number }) | undefined)[]
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

/** Rows of the chain stored from blocks above the fork point: after the reorg they must still be there, removed. */
async function rowsAbove(world: World, side: SimSide, fork: number): Promise<OrphanedRow[]> {
  const { rows } = await world.db.store.pool.query(
    `SELECT block_number, block_hash, log_index FROM logs WHERE chain_id = $2 AND block_number > $1 AND status <> 'pending'`,
    [fork, side.chainId],
  )
  return rows.map((r) => ({ blockNumber: Number(r.block_number), blockHash: r.block_hash, logIndex: r.log_index }))
}

async function runAction(world: World, action: Action, index: number, schedule: Schedule) {
  const { processes } = world
  const side = world.chains[chainOf(action) ?? 0]!
  const { chain } = side
  // With two chains, what happens on one says which.
  const log = (line: string) =>
    world.log(world.chains.length > 1 && chainOf(action) !== undefined ? `[chain ${side.chainId}] ${line}` : line)
  switch (action.type) {
    case 'blocks': {
      const numbers: number[] = []
      for (const block of action.blocks) numbers.push(await chain.mineBlock(block))
      return log(`blocks ${numbers.join(', ')} mined`)
    }
    case 'reorg': {
      const done = await chain.reorg(action, async (fork) => void side.orphanedRows.push(...(await rowsAbove(world, side, fork))))
      return log(
        done
          ? `reorg: depth ${done.depth}, fork block ${done.fork}, ${done.replacements} transaction(s) on the new fork; head ${await chain.head()}`
          : 'reorg skipped: the chain is too short',
      )
    }
    case 'start-backfill': {
      const plan = schedule.backfills[action.index]!
      const on = world.chains[plan.chain ?? 0]!
      const { addresses, topics, flags } = resolveFilter(plan.filter, on.chain)
      const from = on.firstTrafficBlock + plan.fromOffset
      const to = Math.max(from, (await on.chain.head()) - plan.toBelowHead)
      const name: ProcessName = `backfill-${action.index}`
      world.backfillRanges[action.index] = { name, addresses, topics, range: [from, to], chain: plan.chain ?? 0 }
      // A waiting backfill runs range jobs itself too: a `range-stored` crash point is set in it as in the worker.
      const crashAt = world.awaitedCrash?.point === 'range-stored' ? 'range-stored' : undefined
      // With two chains the config file lists both: the backfill names its own.
      const chainFlag = world.chains.length > 1 ? ['--chain', String(on.chainId)] : []
      processes.start(
        name,
        'scripts/backfill.ts',
        ['--from', String(from), '--to', String(to), ...flags, ...chainFlag, '--json'],
        world.env,
        crashAt,
      )
      return log(`${name} started: blocks ${from}–${to}${world.chains.length > 1 ? ` of chain ${on.chainId}` : ''}`)
    }
    case 'await-backfill': {
      const name = `backfill-${action.index}` as const
      const range = world.backfillRanges[action.index]!
      const chainId = world.chains[range.chain]!.chainId
      const filterId = filterIdOf({ addresses: range.addresses, topics: range.topics })
      const blocks = range.range[1] - range.range[0] + 1
      const progressed = async () =>
        !processes.running(name) ||
        (await storedBlocks(world.db.store.pool, chainId, filterId, range.range)) >= Math.ceil(blocks * action.share)
      await waitFor(progressed, `${name} to store blocks`, AWAIT_MS, 50).catch(() =>
        log(`${name} had not stored ${action.share * 100} % of its range within ${AWAIT_MS / 1000} s`),
      )
      return log(`${name} has stored ${await storedBlocks(world.db.store.pool, chainId, filterId, range.range)} blocks`)
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
      const leaders = await Promise.all(world.chains.map((c) => world.redisClient.get(c.leaseKey)))
      // With two schedulers both get the point: whichever leads next reaches it.
      for (const name of action.process === 'scheduler' ? world.schedulers : [action.process]) await processes.crashAt(name, action.point)
      world.awaitedCrash = { point: action.point, firedBefore: firedCount(world, action.point) }
      // A new scheduler waits for the killed one's lease (every chain's) to lapse: the point must be reachable before what follows.
      if (action.process === 'scheduler') {
        await waitFor(
          async () => {
            const now = await Promise.all(world.chains.map((c) => world.redisClient.get(c.leaseKey)))
            return now.every((holder, i) => holder !== null && holder !== leaders[i])
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
      setFaults(world, action.kind)
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

/** Every chain's proxy gets the faults (none: off). */
function setFaults(world: World, kind: FaultKind | 'none') {
  for (const side of world.chains) side.proxy.setFaults(kind === 'none' ? {} : FAULTS[kind])
}

/** What one chain still waits for: its follower at its node's head, its finality at or past `finalAtLeast`, its range queue empty. */
async function chainWaitsFor(world: World, side: SimSide, queue: Queue, finalAtLeast: number | undefined) {
  const [head, { rows }, counts] = await Promise.all([
    nodeHead(side.devnet.url),
    world.db.store.pool.query('SELECT live_block, live_hash, finalized_block FROM chain_state WHERE chain_id = $1', [side.chainId]),
    queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed'),
  ])
  const state = rows[0]
  const of = world.chains.length > 1 ? ` of chain ${side.chainId}` : ''
  const waitingFor = [
    ...(state?.live_block === head.number && state?.live_hash === head.hash
      ? []
      : [`the follower${of} to reach head ${head.number} (at ${state?.live_block})`]),
    ...(finalAtLeast === undefined || (state?.finalized_block ?? -1) >= finalAtLeast
      ? []
      : [`finality${of} to reach ${finalAtLeast} (at ${state?.finalized_block})`]),
    ...(Object.entries(counts).every(([state, n]) => state === 'failed' || n === 0) ? [] : [`queued jobs${of} ${JSON.stringify(counts)}`]),
  ]
  return { waitingFor, failed: counts.failed ?? 0 }
}

/**
 * Waits until everything asked for is done: backfills finished, no job queued or running, each chain's
 * follower at its node's head, its finality at or past its `finalAtLeast` and every repair closed.
 * Returns what is still not done at the timeout (empty when settled).
 */
async function settle(world: World, finalAtLeast: (number | undefined)[], timeoutMs = SETTLE_TIMEOUT_MS): Promise<string[]> {
  const connection = createRedis(world.redis.url)
  connection.on('error', () => {})
  const queues = world.chains.map((side) => new Queue(side.queue, { connection, prefix: world.env.REDIS_PREFIX! }))
  try {
    const deadline = Date.now() + timeoutMs
    let settledSince: number | undefined
    for (;;) {
      const [chains, repairs] = await Promise.all([
        Promise.all(world.chains.map((side, i) => chainWaitsFor(world, side, queues[i]!, finalAtLeast[i]))),
        world.db.store.pool.query('SELECT count(*)::int AS n FROM sync_repairs'),
      ])
      const waitingFor = [
        ...(world.processes.backfillsDone() ? [] : ['backfills to finish']),
        ...chains.flatMap((chain) => chain.waitingFor),
        ...(repairs.rows[0].n === 0 ? [] : [`${repairs.rows[0].n} open repair(s)`]),
      ]
      if (waitingFor.length === 0) {
        settledSince ??= Date.now()
        if (Date.now() - settledSince >= SETTLED_FOR_MS) {
          const failed = chains.reduce((n, chain) => n + chain.failed, 0)
          if (failed) world.log(`${failed} range job(s) ended failed`)
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
    await Promise.all(queues.map((queue) => queue.close()))
    connection.disconnect()
  }
}

/** The scheduler process that holds the first chain's lease now (the one that logged acquiring its stored generation). */
async function leadingScheduler(world: World): Promise<{ name: ProcessName; generation: number } | undefined> {
  const { chainId } = world.chains[0]!
  const { rows } = await world.db.store.pool.query('SELECT lease_generation FROM chain_state WHERE chain_id = $1', [chainId])
  const generation = Number(rows[0]?.lease_generation ?? 0)
  const fields = [new RegExp(`"lease_generation":"?${generation}"?[,}]`), new RegExp(`"chain_id":"?${chainId}"?[,}]`)]
  const acquired = (output: string) =>
    output.split('\n').some((line) => line.includes('scheduler lease acquired') && fields.every((field) => field.test(line)))
  const name = world.schedulers.find((n) => acquired(world.processes.output(n)))
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
  const { leaseKey } = world.chains[0]!
  const token = await world.redisClient.get(leaseKey)
  world.processes.signal(leader.name, 'SIGSTOP')
  world.log(`${leader.name} stopped (SIGSTOP) holding lease generation ${leader.generation}`)
  // The lease in Redis: the new leader's claim of the next generation waits for the stopped one's transaction in flight, if any.
  const takenOver = async () => {
    const holder = await world.redisClient.get(leaseKey)
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

/**
 * The filters asked for so far on one chain, each over its range (the daemon's and the registry's, always
 * indexed from block 0, up to `top`).
 */
function comparedFilters(world: World, side: SimSide, top: number): ComparedFilter[] {
  const index = world.chains.indexOf(side)
  return [
    { name: 'daemon', addresses: side.daemon.addresses, topics: side.daemon.topics, range: [side.daemon.from, top] },
    { name: 'registry', ...builderCodesRegistryFilter(side.chain.registry), range: [0, top] },
    ...world.backfillRanges.flatMap((f) =>
      f?.chain === index ? [{ name: f.name, addresses: f.addresses, topics: f.topics, range: f.range }] : [],
    ),
  ]
}

/**
 * Each chain's rows against its own node (`canonicalTop` per chain mid-run), each difference line naming
 * the chain when there are two.
 */
async function compareChains(world: World, tops: number[], midRun: boolean): Promise<string[]> {
  const lines: string[] = []
  for (const [i, side] of world.chains.entries()) {
    const differences = await compareWithNode({
      pool: world.db.store.pool,
      rpcUrl: side.devnet.anvilUrl,
      filters: comparedFilters(world, side, tops[i]!),
      orphanedRows: side.orphanedRows,
      entryPoints: side.chain.entryPoints,
      chainId: side.chainId,
      scope: world.scope,
      registry: side.chain.registry,
      ...(midRun ? { canonicalTop: tops[i]! } : {}),
      note: world.log,
    })
    lines.push(...differences.map((line) => (world.chains.length > 1 ? `chain ${side.chainId}: ${line}` : line)))
  }
  return lines
}

/**
 * A quiet moment mid-run: faults off, then once everything settled (tips at the heads, backfills done,
 * no job or repair left) each chain is compared with its node before finality; then the faults go on again.
 */
async function checkMidRun(world: World) {
  setFaults(world, 'none')
  const unsettled = await settle(
    world,
    world.chains.map(() => undefined),
    CHECK_SETTLE_TIMEOUT_MS,
  )
  const tops = await Promise.all(world.chains.map((side) => side.chain.head()))
  const differences = [...unsettled, ...(await compareChains(world, tops, true))]
  const at = tops.join(' and ')
  world.midRunDifferences.push(...differences.map((line) => `mid-run (head ${at}): ${line}`))
  world.log(`mid-run check at head ${at}: ${differences.length === 0 ? 'equal to the node' : `${differences.length} difference line(s)`}`)
  setFaults(world, world.faults)
}

/** A chain of the seed as planned: its devnet of the profile, contracts and prefix traffic, and the fault proxy in front. */
async function startChain(
  plan: { chainId: number; chain: ChainPlan; prefix: BlockPlan[]; handOffBelowPrefix: number; daemonFilter: SimFilter },
  schedule: Schedule,
  cleanups: Cleanups,
  redisPrefix: string,
  log: (line: string) => void,
): Promise<SimSide> {
  const devnet = await createDevnet(
    plan.chain.profile === 'op'
      ? { profile: 'op', blockTimeMs: 0, refreshMs: 100, canonicalLag: plan.chain.canonicalLag, chainId: plan.chainId }
      : { profile: 'base', blockTimeMs: 0, chainId: plan.chainId },
  )
  cleanups.add(() => devnet.stop())
  const chain = await createSimChain(devnet, schedule.emitters, log)
  const firstTrafficBlock = chain.deployedTop + 1
  for (const block of plan.prefix) await chain.mineBlock(block)
  const prefixTop = await chain.head()
  const proxy = await startFaultProxy({ upstream: devnet.url, seed: schedule.seed + plan.chainId })
  cleanups.add(() => proxy.stop())
  const daemon = resolveFilter(plan.daemonFilter, chain)
  const handOff = prefixTop + 1 - plan.handOffBelowPrefix
  log(
    `chain ${plan.chainId} (${plan.chain.profile}): deployments up to block ${chain.deployedTop}, traffic ${firstTrafficBlock}–${prefixTop}; daemon from block ${handOff}`,
  )
  return {
    chainId: plan.chainId,
    name: plan.chain.profile,
    devnet,
    chain,
    proxy,
    firstTrafficBlock,
    daemon: { addresses: daemon.addresses, topics: daemon.topics, from: handOff },
    orphanedRows: [],
    leaseKey: `${redisPrefix}:scheduler:${plan.chainId}`,
    queue: rangeQueueName({ chains: schedule.twoChains ? [0, 1] : [0] }, plan.chainId),
  }
}

/**
 * The config file of a two-chain seed: both chains, each with its fault proxy, START_BLOCK, filter and
 * registry (the environment keeps the settings both share).
 */
function twoChainConfigFile(world: World, websocket: boolean): string {
  const chains = world.chains.map((side) => ({
    id: side.chainId,
    name: side.name,
    rpc: side.proxy.url,
    ...(websocket ? { ws: side.devnet.wsUrl } : {}),
    ...(side.daemon.addresses.length > 0 ? { addresses: side.daemon.addresses } : {}),
    ...(side.daemon.topics.length > 0 ? { topics: side.daemon.topics } : {}),
    startBlock: side.daemon.from,
    headPollMs: 100,
    pendingPollMs: 100,
    attributionScope: world.scope,
    registry: { address: side.chain.registry.toLowerCase() },
  }))
  return writeConfigFile(`${JSON.stringify({ chains }, null, 2)}\n`, 'codetrail.config.json')
}

/** Runs `seed` against a private Redis (restarted by the schedule) and the shared PostgreSQL. */
export async function runSeed(seed: number, redis: PrivateRedis): Promise<SeedResult> {
  const started = Date.now()
  const schedule = createSchedule(seed)
  const lines: string[] = []
  const log = (line: string) => lines.push(`${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${line}`)
  const cleanups = createCleanups()
  try {
    const prefix = `ct_sim_${seed}_${Date.now().toString(36)}`
    const plans = [{ chainId: CHAIN_IDS[0], ...schedule }, ...(schedule.second ? [{ chainId: CHAIN_IDS[1], ...schedule.second }] : [])]
    const chains: SimSide[] = []
    for (const plan of plans) chains.push(await startChain(plan, schedule, cleanups, prefix, log))
    const db = await createTestDatabase()
    // Kept for a look after the run: `--keep-db` (SIM_KEEP_DB).
    cleanups.add(() => (process.env.SIM_KEEP_DB ? db.store.close() : db.drop()))
    if (process.env.SIM_KEEP_DB) log(`database ${db.url} kept`)
    cleanups.add(() => clearRedisPrefix(redis.url, prefix))
    const env: Record<string, string> = {
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      CHUNK_BLOCKS: String(schedule.chunkBlocks),
      WORKER_CONCURRENCY: '2',
      JOB_LOCK_MS: '2000',
      RPC_TIMEOUT_MS: '5000',
    }
    const processes = createSupervisor(log)
    cleanups.add(() => processes.stopAll())
    const redisClient = createRedis(redis.url)
    // The schedule restarts Redis: the client reconnects, and its errors meanwhile are expected.
    redisClient.on('error', () => {})
    cleanups.add(async () => redisClient.disconnect())
    const world: World = {
      redisClient,
      chains,
      redis,
      db,
      processes,
      env,
      backfillRanges: [],
      schedulers: schedule.twoSchedulers ? ['scheduler', 'scheduler-2'] : ['scheduler'],
      scope: schedule.scope,
      faults: 'none',
      midRunDifferences: [],
      log,
    }

    // One chain: the environment describes it. Two: a config file lists both, for every process.
    const first = chains[0]!
    const chainEnv: Record<string, string> = {
      HEAD_POLL_MS: '100',
      PENDING_POLL_MS: '100',
      ATTRIBUTION_SCOPE: schedule.scope,
      RPC_URL: first.proxy.url,
      BUILDER_CODES_REGISTRY: first.chain.registry.toLowerCase(),
    }
    if (chains.length > 1) {
      const configFile = twoChainConfigFile(world, schedule.websocket)
      cleanups.add(async () => rmSync(dirname(configFile), { recursive: true, force: true }))
      env.CODETRAIL_CONFIG = configFile
    } else Object.assign(env, chainEnv)
    const daemonEnv = {
      ...env,
      ...(chains.length > 1
        ? {}
        : {
            INDEX_ADDRESSES: first.daemon.addresses.join(','),
            INDEX_TOPICS: first.daemon.topics.join(','),
            START_BLOCK: String(first.daemon.from),
            ...(schedule.websocket ? { RPC_WS_URL: first.devnet.wsUrl } : {}),
          }),
      // The stall finds the leading scheduler by the lease it logged acquiring.
      ...(schedule.twoSchedulers ? { LOG_LEVEL: 'info' } : {}),
    }
    for (const name of world.schedulers) processes.start(name, 'src/main.ts', ['--role', 'scheduler'], daemonEnv)
    processes.start('worker', 'src/main.ts', ['--role', 'worker'], env)
    for (const side of chains) await waitCaughtUp(db.store.pool, side.devnet.url, undefined, side.chainId)
    log(chains.length > 1 ? 'the followers have reached the heads' : 'the follower has reached the head')

    for (const [i, action] of schedule.actions.entries()) {
      await runAction(world, action, i, schedule)
      if (action.type !== 'crash') await awaitCrash(world)
      await sleep(schedule.gapsMs[i]!)
    }

    // The end: no more faults or crash points, the chains past finality, everything asked for done.
    setFaults(world, 'none')
    for (const name of [...world.schedulers, 'worker'] as const) await processes.clearCrashPoint(name)
    const compareTops: number[] = []
    for (const side of chains) {
      await side.chain.mineEmpty(0)
      compareTops.push(await side.chain.head())
      await side.chain.mineEmpty(PAST_FINALITY)
    }
    log(
      `compared range ends at block ${compareTops.join(' and ')}; mined to ${(await Promise.all(chains.map((side) => side.chain.head()))).join(' and ')} to pass finality`,
    )
    const unsettled = await settle(world, compareTops)
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
      ...(await compareChains(world, compareTops, false)),
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
