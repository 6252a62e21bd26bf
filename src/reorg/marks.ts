import type pg from 'pg'
import {
  lockForkMarks,
  lockTipWrites,
  markRemovedAbove,
  orphanBlocksIn,
  recordReorg,
  recordRepairs,
  takeOutOfIntervals,
  updateChainState,
  withTransaction,
  type BlockId,
  type Fence,
} from '../store/index.js'
import { alignedChunks, intervalDifference, type Interval } from '../utils/interval.js'

/**
 * Handles a reorg at the tip in one database transaction: every canonical row above the fork is marked
 * removed whatever filter stored it; those blocks leave the sync intervals of every filter; filters
 * other than the follower's get a repair (the follower reads its own again as it moves forward from the
 * fork, which is where it now stands). A crash at any point leaves either all of it or none.
 */
export async function applyReorg(
  pool: pg.Pool,
  params: { chainId: number; followerFilterId: string; forkBlock: BlockId; depth: number; oldHash: string; newHash: string; fence?: Fence },
): Promise<{ logsRemoved: number; repairs: Map<string, Interval[]> }> {
  const { chainId, forkBlock } = params
  return withTransaction(pool, async (client) => {
    await lockTipWrites(client, chainId)
    await lockForkMarks(client, chainId, 'mark')
    await params.fence?.(client, 'update')
    const logsRemoved = await markRemovedAbove(client, chainId, forkBlock.number)
    const taken = await takeOutOfIntervals(client, chainId, [[forkBlock.number + 1, Number.MAX_SAFE_INTEGER]])
    taken.delete(params.followerFilterId)
    for (const [filterId, ranges] of taken) await recordRepairs(client, chainId, filterId, ranges, 'reorg')
    await recordReorg(client, chainId, {
      forkBlock: forkBlock.number,
      depth: params.depth,
      oldHash: params.oldHash,
      newHash: params.newHash,
      logsRemoved,
    })
    await updateChainState(client, chainId, { liveBlock: forkBlock.number, liveHash: forkBlock.hash })
    return { logsRemoved, repairs: taken }
  })
}

/**
 * Marks rows of blocks found orphaned below the follower's position (stored by a backfill from a fork
 * the follower never saw) removed, in one transaction with their repair: the blocks leave the sync
 * intervals of every filter that covered them, each of which gets a repair, the follower's included.
 */
export async function orphanBlocks(
  pool: pg.Pool,
  chainId: number,
  orphaned: readonly BlockId[],
  fence?: Fence,
): Promise<{ logsRemoved: number; repairs: Map<string, Interval[]> }> {
  return withTransaction(pool, async (client) => {
    await lockTipWrites(client, chainId)
    await lockForkMarks(client, chainId, 'mark')
    await fence?.(client)
    return orphanBlocksIn(client, chainId, orphaned)
  })
}

/**
 * The range jobs that still have to run for a repair: the parts of its blocks not stored again for its
 * filter, cut into aligned chunks (the same chunks a backfill would plan, so job ids coincide).
 */
export function repairChunks(repair: Interval, stored: readonly Interval[], chunkBlocks: number): Interval[] {
  return alignedChunks(intervalDifference(repair, stored), chunkBlocks)
}
