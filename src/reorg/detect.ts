import type pg from 'pg'
import type { Fence } from '../store/index.js'
import { crashPoint } from '../internal/crashPoint.js'
import { findForkPoint } from './forkPoint.js'
import { applyReorg } from './marks.js'
import type { Header } from './types.js'

/** What the node's next headers say about the stored tip. */
export type TipCheck =
  /** They continue it: the first one's parent is the stored tip, each next one's parent the one before. */
  | { type: 'extends' }
  /** The first one's parent is not the stored tip: the chain reorganized below it. */
  | { type: 'reorg'; newHash: string }
  /** The headers do not link to each other: the node changed its chain while answering; ask again. */
  | { type: 'changed'; block: number }

/**
 * Checks headers read just above the stored tip (`tip.hash` at `tip.number`) against it and against each
 * other, so a reorg is seen from the parent hashes alone.
 */
export function checkTip(tip: { hash: string }, headers: readonly Pick<Header, 'number' | 'hash' | 'parentHash'>[]): TipCheck {
  if (headers.length === 0) return { type: 'extends' }
  if (headers[0]!.parentHash !== tip.hash) return { type: 'reorg', newHash: headers[0]!.parentHash }
  for (let i = 1; i < headers.length; i++) {
    if (headers[i]!.parentHash !== headers[i - 1]!.hash) return { type: 'changed', block: headers[i]!.number }
  }
  return { type: 'extends' }
}

export type RewindToForkParameters = {
  chainId: number
  /** The follower's filter: it reads its blocks again itself from the fork; every other filter gets a repair. */
  followerFilterId: string
  /** The follower's last stored block and its hash, now off the node's chain. */
  liveBlock: number
  oldHash: string
  /** The hash the node has where the stored chain diverged. */
  newHash: string
  finalizedBlock: number | null
  fetchHeader: (block: number) => Promise<Header | null>
  fence?: Fence
}

/**
 * Handles a reorg seen at the tip: walks back to the fork point, then marks every row above it removed
 * with its repairs, in one transaction. The follower then stands at the fork block.
 */
export async function rewindToFork(
  pool: pg.Pool,
  { chainId, followerFilterId, liveBlock, oldHash, newHash, finalizedBlock, fetchHeader, fence }: RewindToForkParameters,
): Promise<{ forkBlock: number; depth: number; logsRemoved: number; filtersRepaired: number }> {
  const forkBlock = await findForkPoint(pool, { chainId, from: liveBlock, finalizedBlock, fetchHeader })
  const depth = liveBlock - forkBlock.number
  const { logsRemoved, repairs } = await applyReorg(pool, {
    chainId,
    followerFilterId,
    forkBlock,
    depth,
    oldHash,
    newHash,
    ...(fence ? { fence } : {}),
  })
  crashPoint('reorg-marked')
  return { forkBlock: forkBlock.number, depth, logsRemoved, filtersRepaired: repairs.size }
}
