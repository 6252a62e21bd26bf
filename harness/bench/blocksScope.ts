/**
 * `ATTRIBUTION_SCOPE=blocks` at Base mainnet's density (the `blocks` fixture: 200 transactions per
 * block, 2 % with a suffix): codetrail's backfill in transactions per second beside the block-body
 * fetch limit of the same node, `eth_getBlockByNumber(n, true)` for every block of the range with the
 * plainest client, measured before and after each backfill. The measured backfills cut the range into
 * `BLOCKS_SCOPE_CHUNK_BLOCKS`-block jobs, several per worker as in a long backfill; one more runs it
 * as a single job (the default `CHUNK_BLOCKS` exceeds the fixture). Node calls come from the backfill's
 * own summary line.
 */
import { startAnvil } from '../devnet/anvil.js'
import { ensureFixture, type Fixture, type FixtureSize } from './fixture.js'
import { runBackfill, runProfiledBackfill, type BackfillRun, type BackfillRunParameters } from './backfill.js'
import { CPUS_BESIDE_THE_NODE, startCpuCount, withNodeOnOwnCore } from './processStats.js'
import type { ProfileSummary } from './profile.js'
import { blockChunks, createRawRpc, hex, inParallel } from './rawRpc.js'
import { count } from './report.js'

/** Batch sizes the limit tries; the fastest is the limit. */
export const BLOCK_BODY_BATCH_SIZES = [1, 10, 25] as const
/** Batches in flight, as codetrail's attributor (`BATCHES_IN_FLIGHT`). */
export const BLOCK_BODY_IN_FLIGHT = 4
/**
 * `CHUNK_BLOCKS` of the measured backfills: 4,000 transactions per job at this density, so the
 * fixture makes several jobs per worker and their fetches and writes overlap as in a long backfill.
 */
export const BLOCKS_SCOPE_CHUNK_BLOCKS = 20

// Functions whose inclusive share of the blocks-scope backfill's CPU the profile summary reports.
const PROFILED_FUNCTIONS = [
  'processRange',
  'getLogs',
  'fetchBlocks',
  'forBlocks',
  'prepare',
  'JSON.parse',
  'attributeTransaction',
  'decodeAttribution',
  'knownTransactions',
  'upsertTransactions',
  'upsertAttributions',
  'gasUsedOf',
]

export type BlockBodyPass = {
  batchSize: number
  ms: number
  blocks: number
  transactions: number
  txPerSec: number
  httpRequests: number
  /** CPU seconds the node spent answering. */
  nodeCpuSec: number | undefined
  /** CPU seconds of this client (receiving and parsing). */
  clientCpuSec: number
}

export type BlockBodyLimit = { passes: BlockBodyPass[]; fastest: BlockBodyPass }

export type BlocksScopePart = {
  fixture: Fixture
  transactions: number
  chunkBlocks: number
  oneJobChunkBlocks: number
  concurrency: number
  /** Limit, backfill, limit, …, one-job backfill, limit: run i sits between limits i and i + 1, the one-job run last. */
  limits: BlockBodyLimit[]
  runs: BackfillRun[]
  /** The same backfill as one job. */
  oneJob: BackfillRun
  /**
   * The node on a core of its own, as a node on another machine would be: the limit, a backfill and
   * the limit again with anvil pinned to CPU 0 and the backfill (and the limit's client) to the other
   * CPUs; PostgreSQL is not pinned. Absent on a machine of one CPU or without `taskset`.
   */
  nodeOwnCore?: { limits: [BlockBodyLimit, BlockBodyLimit]; run: BackfillRun }
  profile?: ProfileSummary & { path: string }
}

export type BlocksScopeParameters = {
  size: FixtureSize
  adminDatabaseUrl: string
  redisUrl: string
  /** `CHUNK_BLOCKS` of the one-job backfill: at least the fixture's blocks. */
  oneJobChunkBlocks: number
  /** `WORKER_CONCURRENCY` of the backfill. */
  concurrency: number
  rounds: number
  /** Also a CPU-profiled backfill, summarised. */
  profile: boolean
  say: (message: string) => void
}

/**
 * Every block of `range` with its transactions, `batchSize` blocks per JSON-RPC batch (a plain call
 * when 1), `inFlight` at once, each body parsed once: what any client reading whole blocks must do.
 */
export async function fetchBlockBodies({
  rpcUrl,
  range,
  batchSize,
  inFlight,
  nodePid,
}: {
  rpcUrl: string
  range: [number, number]
  batchSize: number
  inFlight: number
  nodePid?: number | undefined
}): Promise<BlockBodyPass> {
  const rpc = createRawRpc(rpcUrl, inFlight)
  type Block = { transactions: unknown[] } | null
  const cpuSpent = startCpuCount(nodePid)
  try {
    const batches = blockChunks(range[0], range[1], batchSize)
    let transactions = 0
    let blocks = 0
    const started = performance.now()
    await inParallel(batches, inFlight, async ([from, to]) => {
      const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i)
      const answers =
        numbers.length === 1
          ? [await rpc.call<Block>('eth_getBlockByNumber', [hex(from), true])]
          : await rpc.batch<Block>(numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [hex(n), true] })))
      answers.forEach((block, i) => {
        if (!block) throw new Error(`the node has no block ${numbers[i]}`)
        transactions += block.transactions.length
        blocks++
      })
    })
    const ms = performance.now() - started
    return {
      batchSize,
      ms,
      blocks,
      transactions,
      txPerSec: (transactions / ms) * 1000,
      httpRequests: batches.length,
      ...cpuSpent(),
    }
  } finally {
    rpc.close()
  }
}

/** The block-body fetch limit: the range fetched once per batch size, the fastest taken. */
export async function measureBlockBodyLimit(parameters: {
  rpcUrl: string
  range: [number, number]
  nodePid?: number | undefined
}): Promise<BlockBodyLimit> {
  const passes: BlockBodyPass[] = []
  for (const batchSize of BLOCK_BODY_BATCH_SIZES)
    passes.push(await fetchBlockBodies({ ...parameters, batchSize, inFlight: BLOCK_BODY_IN_FLIGHT }))
  const fastest = passes.reduce((best, pass) => (pass.txPerSec > best.txPerSec ? pass : best))
  return { passes, fastest }
}

/** The `blocks` part: fixture, anvil, limit and backfill in turn, then the one-job backfill and the node on a core of its own. */
export async function runBlocksScope({
  size,
  adminDatabaseUrl,
  redisUrl,
  oneJobChunkBlocks,
  concurrency,
  rounds,
  profile,
  say,
}: BlocksScopeParameters): Promise<BlocksScopePart> {
  const chunkBlocks = BLOCKS_SCOPE_CHUNK_BLOCKS
  const fixture = await ensureFixture({ size, kind: 'blocks', say })
  if (fixture.blockTransactions === undefined)
    throw new Error(`${fixture.name}.meta.json does not say how many transactions its blocks hold: regenerate it (--force)`)
  const transactions = fixture.blockTransactions
  const range: [number, number] = [0, fixture.toBlock]
  say(
    `fixture ${fixture.name}: ${count(transactions)} transactions in blocks ${range[0]}–${range[1]} (${count(fixture.suffixed)} with a suffix), ${count(fixture.logs)} logs`,
  )
  const anvil = await startAnvil({ loadState: fixture.statePath, readyTimeoutMs: 300_000 })
  try {
    const nodePid = anvil.process.pid!
    const client = createRawRpc(anvil.url, 1)
    const finalized = await client
      .call<{ number: string } | null>('eth_getBlockByNumber', ['finalized', false])
      .finally(() => client.close())
    // Blocks above it would be read with their headers first and stored as confirmed: not a backfill of history.
    if (!finalized || Number(finalized.number) < fixture.toBlock) {
      throw new Error(
        `anvil's finalized block is ${finalized ? Number(finalized.number) : 'unknown'}, below the fixture's last block ${fixture.toBlock}`,
      )
    }
    if (oneJobChunkBlocks < range[1] - range[0] + 1)
      throw new Error(`CHUNK_BLOCKS=${oneJobChunkBlocks} cuts the fixture's ${range[1] - range[0] + 1} blocks into several jobs`)
    const limit = async () => {
      say(
        `block-body limit: eth_getBlockByNumber(n, true), batches of ${BLOCK_BODY_BATCH_SIZES.join(' / ')}, ${BLOCK_BODY_IN_FLIGHT} in flight…`,
      )
      const measured = await measureBlockBodyLimit({ rpcUrl: anvil.url, range, nodePid })
      if (measured.fastest.transactions !== transactions)
        throw new Error(`the blocks hold ${measured.fastest.transactions} transactions, the fixture ${transactions}`)
      return measured
    }
    const backfillParameters: BackfillRunParameters = {
      rpcUrl: anvil.url,
      nodePid,
      adminDatabaseUrl,
      redisUrl,
      range,
      chunkBlocks,
      concurrency,
      expected: { logs: fixture.logs, transactions, attributions: fixture.suffixed },
      env: { ATTRIBUTION_SCOPE: 'blocks' },
    }
    const limits = [await limit()]
    const runs: BackfillRun[] = []
    for (let round = 1; round <= rounds; round++) {
      say(`codetrail backfill, ATTRIBUTION_SCOPE=blocks, CHUNK_BLOCKS=${chunkBlocks} (${round} of ${rounds})…`)
      runs.push(await runBackfill(backfillParameters))
      limits.push(await limit())
    }
    say(`codetrail backfill, ATTRIBUTION_SCOPE=blocks, CHUNK_BLOCKS=${oneJobChunkBlocks}: one job…`)
    const oneJob = await runBackfill({ ...backfillParameters, chunkBlocks: oneJobChunkBlocks })
    limits.push(await limit())
    const nodeOwnCore = await withNodeOnOwnCore(nodePid, async () => {
      say(`the node on a core of its own: anvil on CPU 0, the backfill and the limit's client on CPUs ${CPUS_BESIDE_THE_NODE}…`)
      const before = await limit()
      const run = await runBackfill({ ...backfillParameters, cpus: CPUS_BESIDE_THE_NODE })
      return { limits: [before, await limit()] as [BlockBodyLimit, BlockBodyLimit], run }
    })
    let summary: (ProfileSummary & { path: string }) | undefined
    if (profile) {
      say('codetrail backfill, ATTRIBUTION_SCOPE=blocks, with a CPU profile…')
      summary = await runProfiledBackfill(backfillParameters, PROFILED_FUNCTIONS)
    }
    return {
      fixture,
      transactions,
      chunkBlocks,
      oneJobChunkBlocks,
      concurrency,
      limits,
      runs,
      oneJob,
      ...(nodeOwnCore ? { nodeOwnCore } : {}),
      ...(summary ? { profile: summary } : {}),
    }
  } finally {
    await anvil.stop()
  }
}
