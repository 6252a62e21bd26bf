import { eq, sql } from 'drizzle-orm'
import type { Database } from '../../store/index.js'
import { blocks, chainState } from '../../store/schema.js'

/** The live follower's position: its last stored block and that block's time, or nulls before the first. */
export async function getIndexedHead(db: Database, chainId: number): Promise<{ block: number | null; timestamp: Date | null }> {
  const [row] = await db
    .select({ block: chainState.liveBlock, timestamp: blocks.timestamp })
    .from(chainState)
    .leftJoin(blocks, sql`${blocks.chainId} = ${chainState.chainId} and ${blocks.hash} = ${chainState.liveHash}`)
    .where(eq(chainState.chainId, chainId))
  return { block: row?.block ?? null, timestamp: row?.timestamp ?? null }
}
