/**
 * A seed's plan, as a pure function of the seed: the contracts, the filters, the chain before the
 * daemon starts and the schedule of actions that follows. Nothing here touches a process or the node,
 * so the same seed always yields the same plan (the timing of the processes around it still varies).
 */
import { seededRandom } from '../../harness/random.js'

/** Emitter events with a signature topic, so a topic0 filter can name them. */
export const TOPIC_EVENTS = ['Ping', 'Data', 'Indexed1', 'Indexed2', 'Indexed3'] as const
export type TopicEvent = (typeof TOPIC_EVENTS)[number]

export const ENTRY_POINT_VERSIONS = ['0.6', '0.7', '0.8'] as const
export type EntryPointVersion = (typeof ENTRY_POINT_VERSIONS)[number]

/** Smart accounts per EntryPoint version. */
export const ACCOUNTS_PER_VERSION = 2
/** On v0.8, the account after the deployed ones (index `ACCOUNTS_PER_VERSION`) is an EOA delegated with EIP-7702. */
export const EIP7702_ACCOUNT = 2
/** Suffix kinds of `suffixFor` (test/faults/helpers/chain.ts): one code, two codes, schema 2, none. */
const SUFFIX_KINDS = 4
/** Blocks the chain has past the tip before the comparison: anvil calls head − 64 final. */
export const PAST_FINALITY = 70
/** The chain id of a seed's chain, and of the second chain of a two-chain seed. */
export const CHAIN_IDS = [31337, 31338] as const

/**
 * A log filter in the seed's own terms: emitters by index (`entryPoints` = the three EntryPoints) and
 * events by name; empty lists mean any.
 */
export type SimFilter = { contracts: (number | 'entryPoints')[]; events: TopicEvent[] }

/** One plain transaction: `Emitter.emitMany(logs, …)` on an emitter, with the `suffixFor(suffix)` suffix. */
export type TxPlan = { emitter: number; logs: number; suffix: number; payload: number }
/** One user operation: `execute(emitter, emitMany(logs, …))` ∥ the `suffixFor(suffix)` suffix. */
export type OpPlan = { account: number; emitter: number; logs: number; suffix: number }
/** One block: its transactions, maybe a `handleOps` bundle, and how long they stay pre-confirmed before it is mined. */
export type BlockPlan = { txs: TxPlan[]; bundle?: { version: EntryPointVersion; ops: OpPlan[] }; pendingMs: number }

export type ProcessName = 'scheduler' | 'scheduler-2' | 'worker' | `backfill-${number}`
/**
 * Crash points a seed plans: each only where the actions that follow reach it (`orphans-marked` is left
 * out: finality finds an orphaned block only when a range job stores one the tip has not orphaned first,
 * which no action can provoke on purpose).
 */
export type SchedulerCrashPoint = 'reorg-marked' | 'tip-stored' | 'pending-stored' | 'repairs-enqueued'
export type CrashPlan = { process: 'scheduler'; point: SchedulerCrashPoint } | { process: 'worker'; point: 'range-stored' }

export const FAULT_KINDS = ['rate-limit', 'unavailable', 'malformed', 'slow-logs', 'range-cap', 'suggested-range', 'result-cap'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

/**
 * Actions on a chain name it by its index in the seed's chains (absent: the first). Everything else acts on
 * what the chains share: the processes, the provider faults (on both chains' proxies), Redis.
 */
type OnChain = { chain?: number }

export type Action =
  | ({ type: 'blocks'; blocks: BlockPlan[] } & OnChain)
  /**
   * `anvil_reorg` of the last `depth` blocks: about `keep` of the orphaned transactions come back on the
   * new fork (each a block later or not, drawn from `salt`), the rest vanish, and new ones are added.
   */
  | ({
      type: 'reorg'
      depth: number
      keep: number
      salt: number
      replacements: { offset: number; emitter: number; logs: number }[]
    } & OnChain)
  | { type: 'start-backfill'; index: number }
  /** Waits until the backfill has stored this share of its range (or is done), so what follows happens during or right after it. */
  | { type: 'await-backfill'; index: number; share: number }
  | { type: 'kill'; process: 'scheduler' | 'worker' | 'backfill'; afterMs: number }
  | ({ type: 'crash' } & CrashPlan)
  /** The leading scheduler stopped (SIGSTOP) for this long, past its lease, then resumed (SIGCONT): its writes must be refused. */
  | { type: 'stall'; ms: number }
  /** A quiet moment: faults off, everything settled, the index compared with the node before finality; then the faults go on again. */
  | { type: 'check' }
  /** A BuilderCodes registry call mined in a block of its own: code `sim_code_<code>` registered, its payout address changed, or the token transferred. */
  | ({ type: 'registry'; call: 'register' | 'payout' | 'transfer'; code: number } & OnChain)
  | ({ type: 'pending'; kind: 'dropped' | 'moved'; emitter: number; logs: number } & OnChain)
  | { type: 'faults'; kind: FaultKind | 'none' }
  | { type: 'restart-redis'; downMs: number }
  | { type: 'pause'; ms: number }

export type BackfillPlan = {
  /** The chain it runs on (`--chain`), by index (absent: the first). */
  chain?: number
  filter: SimFilter
  /** First block: this many blocks after the first block of traffic. */
  fromOffset: number
  /** Last block: this many blocks below the head when the backfill starts. */
  toBelowHead: number
}

/**
 * `base`: no pre-confirmations, system deposits leading each block. `op`: pre-confirmed through `pending`
 * and `pendingLogs`, its canonical chain lagging the pending window by `canonicalLag` blocks.
 */
export type ChainPlan = { profile: 'base' } | { profile: 'op'; canonicalLag: number }

/**
 * The second chain of a two-chain seed: a devnet of the other profile with its own chain id, contracts
 * (as many emitters as the first, so every filter means something on both), traffic before the daemon
 * starts, START_BLOCK and daemon filter.
 */
export type SecondChainPlan = {
  chain: ChainPlan
  prefix: BlockPlan[]
  handOffBelowPrefix: number
  daemonFilter: SimFilter
}

export type Schedule = {
  seed: number
  chain: ChainPlan
  /** The daemon's `ATTRIBUTION_SCOPE`. */
  scope: 'logs' | 'blocks'
  /** A second scheduler process beside the first, each waiting for the other's lease. */
  twoSchedulers: boolean
  /** A second chain the same processes follow, from one config file listing both. */
  twoChains: boolean
  second?: SecondChainPlan
  emitters: number
  /** Blocks of traffic mined before the daemon starts. */
  prefix: BlockPlan[]
  /** The daemon's START_BLOCK: this many blocks below the last prefix block (0: the block after it). */
  handOffBelowPrefix: number
  daemonFilter: SimFilter
  backfills: BackfillPlan[]
  chunkBlocks: number
  /** Whether the scheduler also follows `pendingLogs` over the devnet's WebSocket. */
  websocket: boolean
  actions: Action[]
  /** Pause after each action, in milliseconds (same length as `actions`). */
  gapsMs: number[]
}

type Random = ReturnType<typeof createRandom>

function createRandom(seed: number) {
  const next = seededRandom(seed)
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  const chance = (p: number) => next() < p
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!
  const subset = <T>(items: readonly T[], min: number, max: number): T[] => {
    const copy = [...items]
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1))
      ;[copy[i], copy[j]] = [copy[j]!, copy[i]!]
    }
    return copy.slice(0, int(min, Math.min(max, copy.length)))
  }
  return { next, int, chance, pick, subset }
}

/** A filter's identity, to keep the seed's filters distinct. */
export function filterKey(filter: SimFilter): string {
  return `${[...filter.contracts].map(String).sort().join(',')}|${[...filter.events].sort().join(',')}`
}

function randomFilter(random: Random, emitters: number, allowEverything: boolean): SimFilter {
  const contracts = (): SimFilter['contracts'] => {
    const chosen: SimFilter['contracts'] = random.subset(
      Array.from({ length: emitters }, (_, i) => i),
      1,
      emitters - 1,
    )
    return random.chance(0.3) ? [...chosen, 'entryPoints'] : chosen
  }
  const events = () => random.subset(TOPIC_EVENTS, 1, 3)
  const kind = random.int(allowEverything ? 0 : 1, 3)
  if (kind === 0) return { contracts: [], events: [] }
  if (kind === 1) return { contracts: contracts(), events: [] }
  if (kind === 2) return { contracts: [], events: events() }
  return { contracts: contracts(), events: events() }
}

function randomBlock(random: Random, emitters: number, withPending: boolean): BlockPlan {
  const txs = Array.from({ length: random.int(0, 5) }, () => ({
    emitter: random.int(0, emitters - 1),
    // Zero logs: a transaction (suffixed or not) that no filter sees.
    logs: random.chance(0.1) ? 0 : random.int(1, 10),
    suffix: random.int(0, SUFFIX_KINDS - 1),
    payload: random.int(0, 14),
  }))
  const block: BlockPlan = { txs, pendingMs: withPending ? random.pick([0, 0, 150, 400]) : 0 }
  if (random.chance(0.3)) {
    const version = random.pick(ENTRY_POINT_VERSIONS)
    block.bundle = { version, ops: Array.from({ length: random.int(1, 2) }, () => randomOp(random, emitters, version)) }
  }
  return block
}

function randomOp(random: Random, emitters: number, version: EntryPointVersion): OpPlan {
  return {
    account: random.int(0, version === '0.8' ? EIP7702_ACCOUNT : ACCOUNTS_PER_VERSION - 1),
    emitter: random.int(0, emitters - 1),
    logs: random.int(1, 4),
    suffix: random.int(0, SUFFIX_KINDS - 1),
  }
}

function randomReorg(random: Random, emitters: number, minDepth = 1): Extract<Action, { type: 'reorg' }> {
  const depth = random.int(Math.min(minDepth, 10), 10)
  const replacements = Array.from({ length: random.int(0, 3) }, () => ({
    offset: random.int(0, depth - 1),
    emitter: random.int(0, emitters - 1),
    logs: random.int(1, 6),
  }))
  return { type: 'reorg', depth, keep: random.pick([0.5, 0.8, 1]), salt: random.int(0, 2 ** 31 - 1), replacements }
}

/**
 * What a seed covers beyond its random draws, by its remainders, so that any ten consecutive seeds cover
 * every feature: the `base` profile on every third seed, the lagging pending window on every third
 * (`op` with a canonical chain 2 blocks behind), `blocks` scope on even seeds, two schedulers (one
 * stalled past its lease) on seeds ≡ 2 or 4 (mod 5), two chains on seeds ≡ 3 (mod 7) (7 is prime to
 * 2, 3 and 5, so over 210 seeds two chains meet every mix of the others).
 */
export function seedFeatures(seed: number): Pick<Schedule, 'chain' | 'scope' | 'twoSchedulers' | 'twoChains'> {
  const chain: ChainPlan = seed % 3 === 0 ? { profile: 'base' } : { profile: 'op', canonicalLag: seed % 3 === 1 ? 2 : 0 }
  return {
    chain,
    scope: seed % 2 === 0 ? 'blocks' : 'logs',
    twoSchedulers: seed % 5 === 2 || seed % 5 === 4,
    twoChains: seed % 7 === 3,
  }
}

/** The plan of `seed`. */
export function createSchedule(seed: number): Schedule {
  const random = createRandom(seed)
  const features = seedFeatures(seed)
  const preconfirmed = features.chain.profile === 'op'
  const emitters = random.int(2, 3)
  const prefix = Array.from({ length: random.int(12, 24) }, () => randomBlock(random, emitters, preconfirmed))
  const daemonFilter = randomFilter(random, emitters, true)
  const backfills: BackfillPlan[] = []
  const taken = new Set([filterKey(daemonFilter)])
  const backfillCount = random.int(1, 2)
  while (backfills.length < backfillCount) {
    const filter = randomFilter(random, emitters, false)
    if (taken.has(filterKey(filter))) continue
    taken.add(filterKey(filter))
    backfills.push({ filter, fromOffset: random.int(0, 6), toBelowHead: random.int(0, 2) })
  }

  const handOffBelowPrefix = random.int(0, 6)
  const actions: Action[] = []
  // A reorg whose fork point lies below the hand-off block, while the follower has stored blocks above it.
  if (random.chance(0.5)) actions.push(randomReorg(random, emitters, handOffBelowPrefix + 1))
  const backfillAt = new Set(backfills.map(() => random.int(0, 8)))
  let started = 0
  let redisRestarted = false
  const length = random.int(14, 24)
  for (let i = 0; i < length; i++) {
    if (started < backfills.length && (backfillAt.has(i) || i >= 8)) {
      // A crash right after storing a range, and a reorg while the backfill runs, are what break it.
      if (random.chance(0.3)) actions.push({ type: 'crash', process: 'worker', point: 'range-stored' })
      const index = started++
      actions.push({ type: 'start-backfill', index })
      if (random.chance(0.7)) {
        const share = random.pick([0.3, 0.6, 1])
        actions.push({ type: 'await-backfill', index, share })
        // The reorg reaches the backfill's stored top: its filter gets a repair, so a scheduler crashing once it has enqueued one crashes.
        if (share === 1 && random.chance(0.5)) actions.push({ type: 'crash', process: 'scheduler', point: 'repairs-enqueued' })
        actions.push(randomReorg(random, emitters, backfills[index]!.toBelowHead + 1))
      }
      continue
    }
    const roll = random.next()
    if (roll < 0.3)
      actions.push({ type: 'blocks', blocks: Array.from({ length: random.int(1, 4) }, () => randomBlock(random, emitters, preconfirmed)) })
    else if (roll < 0.45) actions.push(randomReorg(random, emitters))
    else if (roll < 0.55)
      actions.push({ type: 'kill', process: random.pick(['scheduler', 'worker', 'backfill'] as const), afterMs: random.int(0, 600) })
    else if (roll < 0.65) {
      const point = random.pick(
        preconfirmed
          ? (['reorg-marked', 'reorg-marked', 'tip-stored', 'pending-stored'] as const)
          : (['reorg-marked', 'tip-stored'] as const),
      )
      actions.push({ type: 'crash', process: 'scheduler', point })
      // The point is reached by what comes next: a reorg, a block, a pending transaction.
      if (point === 'reorg-marked') actions.push(randomReorg(random, emitters))
      else if (point === 'tip-stored') actions.push({ type: 'blocks', blocks: [randomBlock(random, emitters, preconfirmed)] })
      else actions.push({ type: 'pending', kind: 'moved', emitter: random.int(0, emitters - 1), logs: random.int(1, 5) })
    } else if (roll < 0.75)
      actions.push({
        type: 'pending',
        kind: random.pick(['dropped', 'moved'] as const),
        emitter: random.int(0, emitters - 1),
        logs: random.int(1, 5),
      })
    else if (roll < 0.85) actions.push({ type: 'faults', kind: random.pick([...FAULT_KINDS, 'none'] as const) })
    else if (roll < 0.9 && !redisRestarted) {
      redisRestarted = true
      actions.push({ type: 'restart-redis', downMs: random.int(0, 1_500) })
    } else actions.push({ type: 'pause', ms: random.int(200, 1_500) })
  }
  // Always blocks at the end, so the last reorg has a successor the follower must find.
  const last: BlockPlan[] = Array.from({ length: random.int(1, 3) }, () => randomBlock(random, emitters, preconfirmed))
  // At least one suffixed user operation of an EIP-7702 account in every seed, where the daemon follows.
  last[0]!.bundle = {
    version: '0.8',
    ops: [
      { account: EIP7702_ACCOUNT, emitter: random.int(0, emitters - 1), logs: random.int(1, 4), suffix: random.int(0, SUFFIX_KINDS - 2) },
    ],
  }
  actions.push({ type: 'blocks', blocks: last })
  // Inserted actions never part a crash point from the action that reaches it.
  const insert = (...inserted: Action[]) => {
    const at = [...actions.keys()].filter((i) => i > 0 && actions[i - 1]!.type !== 'crash')
    actions.splice(random.pick(at), 0, ...inserted)
  }
  if (!redisRestarted) insert({ type: 'restart-redis', downMs: random.int(0, 1_500) })
  // The registry: one code registered, its payout changed and its token transferred, in that order; another registered and undone by a reorg.
  const registryAt = [...actions.keys()].filter((i) => i > 0 && actions[i - 1]!.type !== 'crash')
  const calls = ['register', 'payout', 'transfer'] as const
  const positions = random.subset(registryAt, calls.length, calls.length).sort((a, b) => a - b)
  for (let k = positions.length - 1; k >= 0; k--) actions.splice(positions[k]!, 0, { type: 'registry', call: calls[k]!, code: 0 })
  insert({ type: 'registry', call: 'register', code: 1 }, randomReorg(random, emitters))
  // The stalled leader resumes into blocks it must not write.
  if (features.twoSchedulers)
    insert({ type: 'stall', ms: random.int(6_000, 8_000) }, { type: 'blocks', blocks: [randomBlock(random, emitters, preconfirmed)] })
  insert({ type: 'check' })
  const second = features.twoChains ? addSecondChain(seed, features.chain, emitters, actions, backfills) : undefined

  return {
    seed,
    ...features,
    ...(second ? { second } : {}),
    emitters,
    prefix,
    handOffBelowPrefix,
    daemonFilter,
    backfills,
    chunkBlocks: random.pick([2, 3, 5, 1000]),
    websocket: random.chance(0.4),
    actions,
    gapsMs: actions.map(() => random.pick([0, 100, 300, 800])),
  }
}

/**
 * A two-chain seed's second chain, drawn from a stream of its own (so the first chain's plan is the
 * seed's one-chain plan): the other profile, its traffic, reorgs (one below its hand-off block),
 * pre-confirmed churn on `op`, registry calls (its own code 0, and a code 1 a reorg undoes), crash points
 * that only its actions reach, and some backfills moved to it (with the reorg that follows their progress).
 * The actions are spliced into `actions` and the backfills' `chain` set in place.
 */
function addSecondChain(seed: number, first: ChainPlan, emitters: number, actions: Action[], backfills: BackfillPlan[]): SecondChainPlan {
  const random = createRandom(seed * 7_919 + 104_729)
  const chain: ChainPlan = first.profile === 'op' ? { profile: 'base' } : { profile: 'op', canonicalLag: random.pick([0, 2]) }
  const preconfirmed = chain.profile === 'op'
  const prefix = Array.from({ length: random.int(6, 12) }, () => randomBlock(random, emitters, preconfirmed))
  const daemonFilter = randomFilter(random, emitters, true)
  const handOffBelowPrefix = random.int(0, 4)
  const on = <T extends Action>(action: T): T => ({ ...action, chain: 1 })
  const blocks = (n: number) => on({ type: 'blocks', blocks: Array.from({ length: n }, () => randomBlock(random, emitters, preconfirmed)) })

  // A backfill moved to this chain takes the reorg planned after its progress along (and the crash points around it).
  for (const [index, plan] of backfills.entries()) {
    if (!random.chance(0.5)) continue
    plan.chain = 1
    const at = actions.findIndex((a) => a.type === 'await-backfill' && a.index === index)
    const reorgAt = at < 0 ? -1 : actions.findIndex((a, i) => i > at && a.type === 'reorg')
    if (reorgAt >= 0) actions[reorgAt] = on(actions[reorgAt]!)
  }

  const own: Action[][] = [[blocks(random.int(1, 3))], [blocks(random.int(1, 3))], [on(randomReorg(random, emitters))]]
  for (let i = random.int(2, 4); i > 0; i--) {
    const roll = random.next()
    if (roll < 0.4) own.push([blocks(random.int(1, 4))])
    else if (roll < 0.7) own.push([on(randomReorg(random, emitters))])
    else if (preconfirmed)
      own.push([
        on({
          type: 'pending',
          kind: random.pick(['dropped', 'moved'] as const),
          emitter: random.int(0, emitters - 1),
          logs: random.int(1, 5),
        }),
      ])
    else own.push([blocks(1)])
  }
  // Crash points of the shared processes, reached by this chain alone.
  if (random.chance(0.6)) {
    const point = random.pick(['reorg-marked', 'tip-stored'] as const)
    own.push([{ type: 'crash', process: 'scheduler', point }, point === 'reorg-marked' ? on(randomReorg(random, emitters)) : blocks(1)])
  }
  own.push(
    [on({ type: 'registry', call: 'register', code: 0 })],
    [on({ type: 'registry', call: 'register', code: 1 }), on(randomReorg(random, emitters))],
  )
  // Each group goes in where it parts no pair: a crash point and the action that reaches it, a backfill's
  // progress and the reorg into it, a registration and the reorg that undoes it.
  const keepsNext = (a: Action) => a.type === 'crash' || a.type === 'await-backfill' || (a.type === 'registry' && a.code === 1)
  for (const group of own) {
    const at = [...actions.keys(), actions.length].filter((i) => i > 0 && !keepsNext(actions[i - 1]!))
    actions.splice(random.pick(at), 0, ...group)
  }
  // A reorg reaching below the hand-off block first, and blocks last, so the last reorg has a successor the follower must find.
  if (random.chance(0.5)) actions.unshift(on(randomReorg(random, emitters, handOffBelowPrefix + 1)))
  const last = blocks(random.int(1, 2))
  last.blocks[0]!.bundle = {
    version: '0.8',
    ops: [
      { account: EIP7702_ACCOUNT, emitter: random.int(0, emitters - 1), logs: random.int(1, 4), suffix: random.int(0, SUFFIX_KINDS - 2) },
    ],
  }
  actions.push(last)
  return { chain, prefix, handOffBelowPrefix, daemonFilter }
}

/** The index of the chain an action acts on; undefined for what acts on the shared processes, faults or Redis. */
export function chainOf(action: Action): number | undefined {
  return action.type === 'blocks' || action.type === 'reorg' || action.type === 'pending' || action.type === 'registry'
    ? (action.chain ?? 0)
    : undefined
}

/** The crash points the schedule plans, each of which must fire. */
export function plannedCrashes(schedule: Schedule): CrashPlan[] {
  return schedule.actions.flatMap((action) =>
    action.type === 'crash' ? [{ process: action.process, point: action.point } as CrashPlan] : [],
  )
}

/** The plan as readable lines, printed with a failure. */
export function describeSchedule(schedule: Schedule): string[] {
  const filter = (f: SimFilter) => `contracts [${f.contracts.join(', ') || 'any'}] events [${f.events.join(', ') || 'any'}]`
  const block = (b: BlockPlan) =>
    `${b.txs.map((t) => `e${t.emitter}×${t.logs}${t.suffix < 3 ? `+s${t.suffix}` : ''}`).join(' ') || '∅'}` +
    `${b.bundle ? ` ops@${b.bundle.version}[${b.bundle.ops.map((o) => `${b.bundle!.version === '0.8' && o.account === EIP7702_ACCOUNT ? '7702' : `a${o.account}`}→e${o.emitter}×${o.logs}`).join(' ')}]` : ''}`
  const profile = (chain: ChainPlan) =>
    `${chain.profile} profile${chain.profile === 'op' && chain.canonicalLag > 0 ? ` (canonical chain ${chain.canonicalLag} blocks behind)` : ''}`
  const second = schedule.second
  // With two chains, what acts on one chain says which (`[chain 31338]`).
  const on = (chain: number | undefined) => (second ? ` [chain ${CHAIN_IDS[chain ?? 0]}]` : '')
  const lines = [
    `seed ${schedule.seed}: ${profile(schedule.chain)}, ${schedule.scope} scope${schedule.twoSchedulers ? ', two schedulers' : ''}, ${schedule.emitters} emitters, ${schedule.prefix.length} prefix blocks, hand-off ${schedule.handOffBelowPrefix} below the prefix tip, chunk ${schedule.chunkBlocks} blocks${schedule.websocket ? ', pendingLogs over WebSocket' : ''}`,
    `daemon filter${on(0)}: ${filter(schedule.daemonFilter)}`,
    ...(second
      ? [
          `second chain ${CHAIN_IDS[1]}: ${profile(second.chain)}, ${second.prefix.length} prefix blocks, hand-off ${second.handOffBelowPrefix} below its prefix tip`,
          `daemon filter${on(1)}: ${filter(second.daemonFilter)}`,
        ]
      : []),
    ...schedule.backfills.map(
      (b, i) =>
        `backfill-${i}${on(b.chain)} filter: ${filter(b.filter)}, from first traffic block + ${b.fromOffset} to head − ${b.toBelowHead} at its start`,
    ),
  ]
  schedule.actions.forEach((action, i) => {
    const { type, chain: _, ...rest } = action as Action & OnChain
    const chain = chainOf(action)
    const detail = action.type === 'blocks' ? action.blocks.map(block).join(' | ') : JSON.stringify(rest)
    lines.push(`  ${String(i).padStart(2)} ${type}${chain === undefined ? '' : on(chain)} ${detail} (then ${schedule.gapsMs[i]} ms)`)
  })
  return lines
}
