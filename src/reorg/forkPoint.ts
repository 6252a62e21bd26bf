import type pg from 'pg'
import { getCanonicalBlock } from '../store/index.js'
import type { Header } from './types.js'
import { CodetrailError } from '../internal/errors.js'

export class DeepReorgError extends CodetrailError {
  override name = 'DeepReorgError'
}

export type FindForkPointParameters = {
  chainId: number
  /** The height to start the walk at (the follower's last stored block). */
  from: number
  /** The node's finalized block, below which nothing may be rewritten; null when unknown. */
  finalizedBlock: number | null
  fetchHeader: (block: number) => Promise<Header | null>
}

/**
 * Walks back from `from` until the stored header equals the node's: that is the fork point. A height
 * with no stored header (stored by a backfill from logs alone, or never) proves nothing, so the walk
 * goes on, down to the finalized block at most.
 */
export async function findForkPoint(
  pool: pg.Pool,
  { chainId, from, finalizedBlock, fetchHeader }: FindForkPointParameters,
): Promise<{ number: number; hash: string }> {
  for (let n = from; n >= 0; n--) {
    const [stored, onNode] = await Promise.all([getCanonicalBlock(pool, chainId, n), fetchHeader(n)])
    if (!onNode) throw new Error(`node has no block ${n}`)
    if (stored?.hash === onNode.hash) return { number: n, hash: onNode.hash }
    const final = finalizedBlock !== null && n <= finalizedBlock
    if (stored && final) {
      throw new DeepReorgError(`reorg reaches block ${n}, at or below the finalized block ${finalizedBlock}; not rewriting finalized data`)
    }
    if (final || n === 0) return { number: n, hash: onNode.hash }
  }
  throw new DeepReorgError('reorg reaches genesis')
}
