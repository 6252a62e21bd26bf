import {
  getBlock,
  getBlockRequest,
  getLogsRequest,
  parseBlockHeader,
  parseLogs,
  parsePendingBlockNumber,
  type BlockHeader,
  type PendingLogsFilter,
  type RpcClient,
} from '../rpc/index.js'
import { sleep } from '../utils/loop.js'

/** Blocks between the two headers the cadence is measured over: with whole-second timestamps shared by five blocks, 100 blocks are within 1 %. */
const CADENCE_SPAN_BLOCKS = 100
/** Pending-versus-latest samples per probe, spread over about one block time. */
const PENDING_SAMPLES = 4
/** The samples span one block time, but never more than this (a slow chain must not hold up start-up). */
const MAX_SAMPLED_MS = 1_000
/** A measured block time is clamped to this range (a chain mining on demand has no cadence of its own). */
const MIN_BLOCK_TIME_MS = 100
const MAX_BLOCK_TIME_MS = 12_000

export type ChainProbe = {
  /** Milliseconds between blocks, from `timestampMs` where the node serves it, else from whole-second timestamps. */
  blockTimeMs: number
  /** Whether `pending` served anything beyond `latest` in any sample. */
  preconfirms: boolean
  /** Node calls the probe made. */
  calls: number
}

/** Milliseconds of a header: `timestampMs` when served, else its whole seconds. */
const millisOf = (block: BlockHeader) => (block.timestampMs ? block.timestampMs : block.timestamp * 1000)

/** The block cadence over the last `span` blocks (two headers in one batch). */
export async function measureBlockTime(
  rpc: Pick<RpcClient, 'request' | 'batch'>,
  span = CADENCE_SPAN_BLOCKS,
): Promise<{ blockTimeMs: number; calls: number }> {
  const latest = await getBlock(rpc, 'latest')
  if (!latest) throw new Error('node has no latest block')
  const head = latest.number
  // Genesis is left out: its timestamp is when the chain was created, not a block time.
  const back = Math.min(span, head - 1)
  if (back <= 0) return { blockTimeMs: MIN_BLOCK_TIME_MS, calls: 1 }
  const older = await getBlock(rpc, head - back)
  if (!older) throw new Error(`node has no block ${head - back}`)
  const perBlock = (millisOf(latest) - millisOf(older)) / back
  return { blockTimeMs: Math.round(Math.min(MAX_BLOCK_TIME_MS, Math.max(MIN_BLOCK_TIME_MS, perBlock))), calls: 2 }
}

/**
 * One sample: `pending` is asked before `latest` in the same batch, so a block sealed in between can
 * only make `latest` look ahead, never `pending`. Pre-confirmed when the node builds a pending block
 * ahead of its head (a chain whose `pending` answers like `latest` does not), or pending logs come from
 * beyond the head.
 */
async function samplePending(rpc: Pick<RpcClient, 'batch'>, filter: PendingLogsFilter): Promise<boolean> {
  const asked = { fromBlock: 'pending', toBlock: 'pending', ...filter } as const
  let sample: { pending: number | null; logs: { blockNumber: string | number | null }[]; latest: BlockHeader | null }
  try {
    const [pending, logs, latest] = await rpc.batch([getBlockRequest('pending'), getLogsRequest(asked), getBlockRequest('latest')])
    sample = {
      pending: parsePendingBlockNumber(pending),
      logs: logs === null ? [] : parseLogs(logs, asked),
      latest: parseBlockHeader(latest),
    }
  } catch {
    // A node that refuses the `pending` tag (or answers it with nonsense) serves nothing pre-confirmed.
    return false
  }
  if (!sample.latest) return false
  const head = sample.latest.number
  if (sample.pending !== null && sample.pending > head) return true
  return sample.logs.some((log) => log.blockNumber != null && Number(log.blockNumber) > head)
}

/**
 * What the chain is, learned from the node: its block cadence and whether `pending` pre-confirms.
 * Several pending samples, spread over a block time, so an instant right after a seal (an empty
 * pending block) does not hide a pre-confirming chain.
 */
export async function probeChain(
  rpc: Pick<RpcClient, 'request' | 'batch'>,
  { filter = {}, samples = PENDING_SAMPLES, signal }: { filter?: PendingLogsFilter; samples?: number; signal?: AbortSignal } = {},
): Promise<ChainProbe> {
  const { blockTimeMs, calls } = await measureBlockTime(rpc)
  let preconfirms = false
  let sampled = 0
  for (let i = 0; i < samples && !preconfirms && !signal?.aborted; i++) {
    if (i > 0) await sleep(Math.min(blockTimeMs, MAX_SAMPLED_MS) / samples, signal)
    preconfirms = await samplePending(rpc, filter)
    sampled++
  }
  return { blockTimeMs, preconfirms, calls: calls + sampled * 3 }
}
