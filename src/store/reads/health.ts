import { eq, sql } from 'drizzle-orm'
import type { Database } from '../client.js'
import { blocks, chainState } from '../schema.js'

/** The live follower's position: its last stored block and that block's time, or nulls before the first. */
export async function getIndexedHead(
  db: Database,
  chainId: number,
): Promise<{ block: number | null; timestamp: Date | null; chain: ChainFacts }> {
  const [row] = await db
    .select({
      block: chainState.liveBlock,
      timestamp: blocks.timestamp,
      blockTimeMs: chainState.blockTimeMs,
      preconfirmations: chainState.preconfirmations,
      preconfirmationsSource: chainState.preconfirmationsSource,
    })
    .from(chainState)
    .leftJoin(blocks, sql`${blocks.chainId} = ${chainState.chainId} and ${blocks.hash} = ${chainState.liveHash}`)
    .where(eq(chainState.chainId, chainId))
  return { block: row?.block ?? null, timestamp: row?.timestamp ?? null, chain: chainFacts(row ?? null) }
}

/** The chain's profile as the scheduler last probed it: its block time and whether it pre-confirms (null before the first probe). */
export type ChainFacts = { blockTimeMs: number | null; preconfirmations: { enabled: boolean; source: 'probe' | 'config' } | null }

export function chainFacts(
  row: { blockTimeMs: number | null; preconfirmations: boolean | null; preconfirmationsSource: 'probe' | 'config' | null } | null,
): ChainFacts {
  return {
    blockTimeMs: row?.blockTimeMs ?? null,
    preconfirmations:
      row?.preconfirmations == null ? null : { enabled: row.preconfirmations, source: row.preconfirmationsSource ?? 'probe' },
  }
}
