import type pg from 'pg'
import {
  advanceFinalityIn,
  blocksBetween,
  blocksOtherThan,
  getChainState,
  lockForkMarks,
  lockTipWrites,
  orphanBlocksIn,
  unfinalizedLogBlocks,
  withTransaction,
  type Fence,
} from '../store/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import type { Header } from './types.js'

/** Most blocks one finality step moves to `finalized`, so its transaction and its reads stay the same size however far finality trails. */
export const FINALITY_STEP_BLOCKS = 1_000

export type FinalityStep =
  | { type: 'orphaned'; blocks: number[]; logsRemoved: number }
  | { type: 'finalize'; from: number; to: number; logs: number }

export type AdvanceToFinalizedParameters = {
  chainId: number
  /** The node's finalized block, with its hash where the node said it; null while unknown. */
  finalized: { number: number; hash?: string } | null
  fetchHeader: (block: number) => Promise<Header | null>
  fetchHeaders: (numbers: readonly number[]) => Promise<Header[]>
  /** @default FINALITY_STEP_BLOCKS */
  maxBlocks?: number
  /** Refuses the orphan marks and the finality step when a newer scheduler lease generation was claimed. */
  fence?: Fence
}

/**
 * Moves rows to `finalized` up to the node's finalized block (never past the follower's position), at
 * most `maxBlocks` blocks per call. Before they become final, the rows still held as `confirmed` are
 * checked against the canonical chain: walking down from the step's top block (whose hash the node
 * gives) through the parent hashes of the headers already stored, so only heights without a stored
 * header of that chain (rows a backfill wrote from logs, or from a fork the follower never saw) are read
 * from the node. Rows of any other block are marked removed, with their repair.
 */
export async function advanceToFinalized(
  pool: pg.Pool,
  { chainId, finalized, fetchHeader, fetchHeaders, maxBlocks = FINALITY_STEP_BLOCKS, fence }: AdvanceToFinalizedParameters,
): Promise<FinalityStep[]> {
  const state = await getChainState(pool, chainId)
  if (finalized === null || state?.liveBlock == null) return []
  const previous = state.finalizedBlock ?? -1
  const target = Math.min(finalized.number, state.liveBlock, previous + maxBlocks)
  if (target <= previous) return []
  const steps: FinalityStep[] = []
  const [headers, logBlocks] = await Promise.all([
    blocksBetween(pool, chainId, [previous, target]),
    unfinalizedLogBlocks(pool, chainId, [previous, target]),
  ])
  const canonical = await canonicalHashes(headers, [...headers, ...logBlocks], [previous, target], finalized, { fetchHeader, fetchHeaders })
  const read = new Set([...headers, ...logBlocks].map((block) => `${block.number}:${block.hash}`))
  // One transaction under the fork-mark lock: rows a range job committed after the reads above are checked too, never finalized unseen.
  const { orphaned, logsRemoved, top, logs } = await withTransaction(pool, async (client) => {
    await lockTipWrites(client, chainId)
    await lockForkMarks(client, chainId, 'mark')
    await fence?.(client, 'update')
    const other = await blocksOtherThan(client, chainId, [previous, target], canonical)
    // A row that arrived at a height whose canonical hash was not read waits for the next step.
    const unknown = other.filter((block) => !canonical.has(block.number) && !read.has(`${block.number}:${block.hash}`))
    const orphaned = other.filter((block) => !unknown.includes(block))
    const top = Math.min(target, ...unknown.map((block) => block.number - 1))
    const { logsRemoved } = orphaned.length > 0 ? await orphanBlocksIn(client, chainId, orphaned) : { logsRemoved: 0 }
    const logs = top > previous ? await advanceFinalityIn(client, chainId, [previous, top]) : 0
    return { orphaned, logsRemoved, top, logs }
  })
  if (orphaned.length > 0) {
    crashPoint('orphans-marked')
    steps.push({ type: 'orphaned', blocks: orphaned.map((b) => b.number).sort((a, b) => a - b), logsRemoved })
  }
  if (top > previous) steps.push({ type: 'finalize', from: previous + 1, to: top, logs })
  return steps
}

/**
 * The canonical hash of each height of `(from, to]` that holds rows: the top one from the node (the
 * finalized header's own hash when `to` is the finalized block), the rest by following stored parent
 * hashes down. Heights with rows below a break in the stored chain are read from the node, all in one batch.
 */
async function canonicalHashes(
  headers: readonly { number: number; hash: string; parentHash: string | null }[],
  rows: readonly { number: number }[],
  [from, to]: [number, number],
  finalized: { number: number; hash?: string },
  { fetchHeader, fetchHeaders }: Pick<AdvanceToFinalizedParameters, 'fetchHeader' | 'fetchHeaders'>,
): Promise<Map<number, string>> {
  const top = to === finalized.number && finalized.hash ? { hash: finalized.hash } : await fetchHeader(to)
  if (!top) throw new Error(`node has no block ${to}`)
  const stored = new Map(headers.map((block) => [block.hash, block]))
  const withRows = new Set(rows.map((row) => row.number))
  const canonical = new Map<number, string>()
  let fromNode: Map<number, Header> | undefined
  let expected: string | null = top.hash
  for (let n = to; n > from; n--) {
    if (expected === null && withRows.has(n)) {
      fromNode ??= new Map(
        (await fetchHeaders([...withRows].filter((h) => h > from && h <= n).sort((a, b) => b - a))).map((h) => [h.number, h]),
      )
      expected = fromNode.get(n)?.hash ?? null
    }
    if (expected === null) continue
    canonical.set(n, expected)
    const block = stored.get(expected)
    expected = block?.number === n && block.parentHash ? block.parentHash : (fromNode?.get(n)?.parentHash ?? null)
  }
  return canonical
}
