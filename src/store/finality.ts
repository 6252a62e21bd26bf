import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import { withTransaction } from './client.js'
import { updateChainState } from './sync.js'

/**
 * Moves rows of `(from, to]` from `confirmed` to `finalized` as the node's finalized block advances,
 * and records the new finalized block.
 */
export async function advanceFinality(pool: pg.Pool, chainId: number, [from, to]: Interval): Promise<number> {
  return withTransaction(pool, async (client) => {
    const logs = await client.query(
      `UPDATE logs SET status = 'finalized', updated_at = now()
       WHERE chain_id = $1 AND block_number > $2 AND block_number <= $3 AND status = 'confirmed' AND NOT removed`,
      [chainId, from, to],
    )
    for (const table of ['blocks', 'transactions', 'attributions']) {
      const column = table === 'blocks' ? 'number' : 'block_number'
      await client.query(
        `UPDATE ${table} SET status = 'finalized', updated_at = now()
         WHERE chain_id = $1 AND ${column} > $2 AND ${column} <= $3 AND status = 'confirmed' AND NOT removed`,
        [chainId, from, to],
      )
    }
    await updateChainState(client, chainId, { finalizedBlock: to })
    return logs.rowCount ?? 0
  })
}

/** Distinct blocks of `(from, to]` stored as confirmed (not yet final) and not removed: headers, and blocks holding such logs. */
export async function confirmedBlocks(db: Pick<pg.Pool, 'query'>, chainId: number, [from, to]: Interval): Promise<{ number: number; hash: string }[]> {
  const { rows } = await db.query(
    `SELECT block_number AS number, block_hash AS hash FROM logs
     WHERE chain_id = $1 AND block_number > $2 AND block_number <= $3 AND status = 'confirmed' AND NOT removed
     UNION
     SELECT number, hash FROM blocks WHERE chain_id = $1 AND number > $2 AND number <= $3 AND status = 'confirmed' AND NOT removed`,
    [chainId, from, to],
  )
  return rows as { number: number; hash: string }[]
}

