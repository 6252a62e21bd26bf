import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import { withTransaction } from './client.js'
import { insertBlocks, type BlockRow } from './logs.js'
import { lockForkMarks, lockTipWrites } from './chainLock.js'
import { blocksOffCanonical, orphanBlocksIn, type BlockId } from './reorgs.js'
import type { Fence } from './fence.js'
import { logArrays, LOG_COLUMNS, UNNEST_LOGS } from './logParams.js'
import type { LogRow } from './logRows.js'
import { statusBelow } from './schema.js'
import { recordInterval, updateChainState } from './syncState.js'

export type StoreTipBlocksParameters = {
  chainId: number
  filterId: string
  /** Further filters whose logs of these blocks are among `rows` (the BuilderCodes registry's). */
  alsoFilterIds?: readonly string[]
  /** Consecutive canonical headers, parent hashes checked by the caller. */
  blocks: readonly (BlockRow & { parentHash: string })[]
  rows: readonly LogRow[]
  finalizedBlock: number | null
  /** The node's head as the step saw it, recorded with the follower's position. */
  headBlock?: number
  extraWrites?: (client: pg.PoolClient) => Promise<void>
  /** Refuses the write when a newer scheduler lease generation was claimed. */
  fence?: Fence
}

export type StoreTipBlocksReturnType = {
  /** Pending rows that became canonical logs. */
  confirmed: number
  /** Of those, the rows whose pre-confirmed content (address, topics, data, block, position) was not what was sealed. */
  diverged: number
  /** Pending rows announced up to these blocks that were not confirmed. */
  dropped: number
  /** Blocks of another fork stored at these heights (by a range job ahead of the follower), marked removed with their repairs. */
  orphaned: BlockId[]
  /** Logs of those blocks marked removed. */
  orphanLogsRemoved: number
}

/**
 * Stores new canonical blocks at the tip in one transaction: headers, logs (pre-confirmed rows of the
 * same transactions become these logs, with the canonical content), pending rows announced for these
 * blocks that did not make it become `removed`, the sync interval and the follower's position. Rows
 * announced for later blocks (the node's pending window runs ahead of its canonical head) stay pending.
 */
export async function storeTipBlocks(pool: pg.Pool, params: StoreTipBlocksParameters): Promise<StoreTipBlocksReturnType> {
  const { chainId, filterId, blocks, rows, finalizedBlock } = params
  const first = blocks[0]
  const last = blocks[blocks.length - 1]
  if (!first || !last) return { confirmed: 0, diverged: 0, dropped: 0, orphaned: [], orphanLogsRemoved: 0 }
  const statusOf = statusBelow(finalizedBlock)
  return withTransaction(pool, async (client) => {
    await lockTipWrites(client, chainId)
    // Exclusive: a range job of another fork at these heights commits before (and is orphaned below) or sees these blocks.
    await lockForkMarks(client, chainId, 'mark')
    await params.fence?.(client, 'update')
    await insertBlocks(client, chainId, blocks, statusOf)
    await client.query(`UPDATE blocks SET removed = false, updated_at = now() WHERE chain_id = $1 AND hash = ANY($2::text[]) AND removed`, [
      chainId,
      blocks.map((b) => b.hash),
    ])
    const arrays = logArrays(rows, (row) => statusOf(row.blockNumber))
    // Where no pre-confirmed row exists (a chain that does not pre-confirm), one look spares the claim and drop statements.
    const {
      rows: [pending],
    } = await client.query<{ any: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM logs WHERE chain_id = $1 AND status = 'pending')
           OR EXISTS (SELECT 1 FROM transactions WHERE chain_id = $1 AND status = 'pending' AND NOT removed)
           OR EXISTS (SELECT 1 FROM attributions WHERE chain_id = $1 AND status = 'pending' AND NOT removed) AS any`,
      [chainId],
    )
    let claimed: { rowCount: number | null; rows: { diverged: boolean }[] } = { rowCount: 0, rows: [] }
    if (pending?.any) {
      // Pre-confirmed rows of these transactions become the canonical logs: same row, canonical content.
      // `o` is the same row as `l` (the pending key is unique), read as it was before the update.
      claimed = await client.query<{ diverged: boolean }>(
        `UPDATE logs l SET block_number = u.block_number, block_hash = u.block_hash, block_timestamp = to_timestamp(u.ts),
           block_timestamp_ms = u.ts_ms, transaction_index = u.transaction_index, log_index = u.log_index, address = u.address, topic0 = u.topic0,
           topic1 = u.topic1, topic2 = u.topic2, topic3 = u.topic3, data = u.data, status = u.status, removed = false, updated_at = now()
         FROM ${UNNEST_LOGS}
           JOIN logs o ON o.chain_id = $1 AND o.status = 'pending' AND o.transaction_hash = u.transaction_hash AND o.tx_log_ordinal = u.tx_log_ordinal
         WHERE l.chain_id = $1 AND l.status = 'pending' AND l.transaction_hash = u.transaction_hash AND l.tx_log_ordinal = u.tx_log_ordinal
           AND NOT EXISTS (SELECT 1 FROM logs c WHERE c.chain_id = $1 AND c.block_number = u.block_number AND c.block_hash = u.block_hash
             AND c.log_index = u.log_index AND c.status <> 'pending')
         RETURNING (o.block_number, o.transaction_index, o.log_index, o.address, o.topic0, o.topic1, o.topic2, o.topic3, o.data)
           IS DISTINCT FROM (u.block_number, u.transaction_index, u.log_index, u.address, u.topic0, u.topic1, u.topic2, u.topic3, u.data)
           AS diverged`,
        [chainId, ...arrays],
      )
    }
    // The rest are new; a row already there for the same block hash (e.g. stored by a backfill) is canonical again.
    await client.query(
      `INSERT INTO logs (${LOG_COLUMNS})
       SELECT $1, block_number, block_hash, to_timestamp(ts), transaction_hash, transaction_index, log_index, tx_log_ordinal,
              address, topic0, topic1, topic2, topic3, data, status, ts_ms
       FROM ${UNNEST_LOGS}
       ON CONFLICT (chain_id, block_number, block_hash, log_index, block_timestamp) WHERE status <> 'pending'
       DO UPDATE SET removed = false, status = EXCLUDED.status, updated_at = now() WHERE logs.removed`,
      [chainId, ...arrays],
    )
    let dropped: { rowCount: number | null } = { rowCount: 0 }
    if (pending?.any) {
      // Nothing announces a dropped pre-confirmed log: whatever was announced up to here and not claimed is gone.
      dropped = await client.query(
        `UPDATE logs SET removed = true, updated_at = now()
         WHERE chain_id = $1 AND status = 'pending' AND NOT removed AND block_number <= $2`,
        [chainId, last.number],
      )
      for (const table of ['transactions', 'attributions']) {
        await client.query(
          `UPDATE ${table} SET removed = true, updated_at = now() WHERE chain_id = $1 AND status = 'pending' AND NOT removed AND block_number <= $2`,
          [chainId, last.number],
        )
      }
    }
    await params.extraWrites?.(client)
    // In this transaction: no moment (nor a crash) when both forks are served at one height.
    const orphaned = await blocksOffCanonical(client, chainId, blocks)
    const { logsRemoved } =
      orphaned.length > 0
        ? await orphanBlocksIn(client, chainId, orphaned, [filterId, ...(params.alsoFilterIds ?? [])])
        : { logsRemoved: 0 }
    for (const id of [filterId, ...(params.alsoFilterIds ?? [])])
      await recordInterval(client, chainId, id, [first.number, last.number] satisfies Interval)
    await updateChainState(client, chainId, {
      liveBlock: last.number,
      liveHash: last.hash,
      ...(params.headBlock !== undefined ? { headBlock: params.headBlock } : {}),
    })
    return {
      confirmed: claimed.rowCount ?? 0,
      diverged: claimed.rows.filter((row) => row.diverged).length,
      dropped: dropped.rowCount ?? 0,
      orphaned,
      orphanLogsRemoved: logsRemoved,
    }
  })
}

export type StoredBlock = { number: number; hash: string; parentHash: string | null }

/** The canonical (not removed) stored header at a height, as the follower last saw it. */
export async function getCanonicalBlock(db: Pick<pg.Pool, 'query'>, chainId: number, number: number): Promise<StoredBlock | null> {
  const { rows } = await db.query(
    `SELECT number, hash, parent_hash AS "parentHash" FROM blocks WHERE chain_id = $1 AND number = $2 AND NOT removed
     ORDER BY updated_at DESC LIMIT 1`,
    [chainId, number],
  )
  return (rows[0] as StoredBlock | undefined) ?? null
}
