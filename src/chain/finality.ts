import type pg from 'pg'
import { advanceFinality, confirmedBlocks, getChainState } from '../store/index.js'
import { crashPoint } from '../utils/crashPoint.js'
import { orphanBlocks } from './repair.js'
import type { Header } from './types.js'

export type FinalityStep =
  | { type: 'orphaned'; blocks: number[]; logsRemoved: number }
  | { type: 'finalize'; from: number; to: number; logs: number }

/**
 * Moves rows to `finalized` up to the node's finalized block (never past the follower's position).
 * Before they become final, the blocks still held as `confirmed` are checked against the node: rows a
 * backfill stored from a fork the follower never saw are marked removed, with their repair.
 */
export async function advanceToFinalized(
  pool: pg.Pool,
  { chainId, finalizedBlock, fetchHeaders }: { chainId: number; finalizedBlock: number | null; fetchHeaders: (numbers: readonly number[]) => Promise<Header[]> },
): Promise<FinalityStep[]> {
  const state = await getChainState(pool, chainId)
  if (finalizedBlock === null || state?.liveBlock == null) return []
  const previous = state.finalizedBlock ?? -1
  const target = Math.min(finalizedBlock, state.liveBlock)
  if (target <= previous) return []
  const steps: FinalityStep[] = []
  const stored = await confirmedBlocks(pool, chainId, [previous, target])
  if (stored.length > 0) {
    const onNode = new Map((await fetchHeaders([...new Set(stored.map((b) => b.number))])).map((h) => [h.number, h.hash]))
    const orphaned = stored.filter((block) => onNode.get(block.number) !== block.hash)
    if (orphaned.length > 0) {
      const { logsRemoved } = await orphanBlocks(pool, chainId, orphaned)
      crashPoint('orphans-marked')
      steps.push({ type: 'orphaned', blocks: orphaned.map((b) => b.number), logsRemoved })
    }
  }
  const logs = await advanceFinality(pool, chainId, [previous, target])
  steps.push({ type: 'finalize', from: previous + 1, to: target, logs })
  return steps
}
