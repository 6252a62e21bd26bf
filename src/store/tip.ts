import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import { withTransaction } from './client.js'
import { insertBlocks, type BlockRow } from './logs.js'
import type { LogRow } from './logRows.js'
import { statusBelow, type Status } from './schema.js'
import { recordInterval, updateChainState } from './sync.js'

const LOG_COLUMNS = `chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index,
  tx_log_ordinal, address, topic0, topic1, topic2, topic3, data, status`

/** The rows as unnest-able parameter arrays, from `$2` on (`$1` is the chain id). */
function logArrays(rows: readonly LogRow[], statusOf: (row: LogRow) => Status) {
  return [
    rows.map((r) => r.blockNumber),
    rows.map((r) => r.blockHash),
    rows.map((r) => r.blockTimestamp),
    rows.map((r) => r.transactionHash),
    rows.map((r) => r.transactionIndex),
    rows.map((r) => r.logIndex),
    rows.map((r) => r.txLogOrdinal),
    rows.map((r) => r.address),
    rows.map((r) => r.topics[0] ?? null),
    rows.map((r) => r.topics[1] ?? null),
    rows.map((r) => r.topics[2] ?? null),
    rows.map((r) => r.topics[3] ?? null),
    rows.map((r) => r.data),
    rows.map((r) => statusOf(r)),
  ]
}

const UNNEST_LOGS = `unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::int[], $7::int[], $8::int[], $9::text[],
  $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[])
  AS u(block_number, block_hash, ts, transaction_hash, transaction_index, log_index, tx_log_ordinal, address,
       topic0, topic1, topic2, topic3, data, status)`

export type StoreTipBlocksParameters = {
  chainId: number
  filterId: string
  /** Consecutive canonical headers, parent hashes checked by the caller. */
  blocks: readonly (BlockRow & { parentHash: string })[]
  rows: readonly LogRow[]
  finalizedBlock: number | null
  extraWrites?: (client: pg.PoolClient) => Promise<void>
}

/**
 * Stores new canonical blocks at the tip in one transaction: headers, logs (pre-confirmed rows of the
 * same transactions become these logs, with the canonical content), pending rows announced for these
 * blocks that did not make it become `removed`, the sync interval and the follower's position.
 */
export async function storeTipBlocks(pool: pg.Pool, params: StoreTipBlocksParameters): Promise<{ confirmed: number; dropped: number }> {
  const { chainId, filterId, blocks, rows, finalizedBlock } = params
  const first = blocks[0]
  const last = blocks[blocks.length - 1]
  if (!first || !last) return { confirmed: 0, dropped: 0 }
  const statusOf = statusBelow(finalizedBlock)
  return withTransaction(pool, async (client) => {
    await insertBlocks(client, chainId, blocks, statusOf)
    await client.query(
      `UPDATE blocks SET removed = false, updated_at = now() WHERE chain_id = $1 AND hash = ANY($2::text[]) AND removed`,
      [chainId, blocks.map((b) => b.hash)],
    )
    const arrays = logArrays(rows, (row) => statusOf(row.blockNumber))
    // Pre-confirmed rows of these transactions become the canonical logs: same row, canonical content.
    const claimed = await client.query(
      `UPDATE logs l SET block_number = u.block_number, block_hash = u.block_hash, block_timestamp = to_timestamp(u.ts),
         transaction_index = u.transaction_index, log_index = u.log_index, address = u.address, topic0 = u.topic0,
         topic1 = u.topic1, topic2 = u.topic2, topic3 = u.topic3, data = u.data, status = u.status, removed = false, updated_at = now()
       FROM ${UNNEST_LOGS}
       WHERE l.chain_id = $1 AND l.status = 'pending' AND l.transaction_hash = u.transaction_hash AND l.tx_log_ordinal = u.tx_log_ordinal
         AND NOT EXISTS (SELECT 1 FROM logs c WHERE c.chain_id = $1 AND c.block_number = u.block_number AND c.block_hash = u.block_hash
           AND c.log_index = u.log_index AND c.status <> 'pending')`,
      [chainId, ...arrays],
    )
    // The rest are new; a row already there for the same block hash (e.g. stored by a backfill) is canonical again.
    await client.query(
      `INSERT INTO logs (${LOG_COLUMNS})
       SELECT $1, block_number, block_hash, to_timestamp(ts), transaction_hash, transaction_index, log_index, tx_log_ordinal,
              address, topic0, topic1, topic2, topic3, data, status
       FROM ${UNNEST_LOGS}
       ON CONFLICT (chain_id, block_number, block_hash, log_index) WHERE status <> 'pending'
       DO UPDATE SET removed = false, status = EXCLUDED.status, updated_at = now() WHERE logs.removed`,
      [chainId, ...arrays],
    )
    // Nothing announces a dropped pre-confirmed log: whatever was announced up to here and not claimed is gone.
    const dropped = await client.query(
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
    await params.extraWrites?.(client)
    await recordInterval(client, chainId, filterId, [first.number, last.number] satisfies Interval)
    await updateChainState(client, chainId, { liveBlock: last.number, liveHash: last.hash })
    return { confirmed: claimed.rowCount ?? 0, dropped: dropped.rowCount ?? 0 }
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

export type ApplyReorgParameters = {
  chainId: number
  /** The last block both chains share. */
  forkBlock: { number: number; hash: string }
  depth: number
  oldHash: string
  newHash: string
}

/**
 * Orphans everything above the fork point: blocks, logs, transactions and attributions are marked
 * `removed` (never deleted) and the follower resumes from the fork block.
 */
export async function applyReorg(pool: pg.Pool, { chainId, forkBlock, depth, oldHash, newHash }: ApplyReorgParameters): Promise<number> {
  return withTransaction(pool, async (client) => {
    await client.query(`UPDATE blocks SET removed = true, updated_at = now() WHERE chain_id = $1 AND number > $2 AND NOT removed`, [
      chainId,
      forkBlock.number,
    ])
    const logs = await client.query(
      `UPDATE logs SET removed = true, updated_at = now() WHERE chain_id = $1 AND block_number > $2 AND status <> 'pending' AND NOT removed`,
      [chainId, forkBlock.number],
    )
    for (const table of ['transactions', 'attributions']) {
      await client.query(
        `UPDATE ${table} SET removed = true, updated_at = now() WHERE chain_id = $1 AND block_number > $2 AND status <> 'pending' AND NOT removed`,
        [chainId, forkBlock.number],
      )
    }
    await client.query(
      `INSERT INTO reorgs (chain_id, fork_block, depth, old_hash, new_hash, logs_removed) VALUES ($1, $2, $3, $4, $5, $6)`,
      [chainId, forkBlock.number, depth, oldHash, newHash, logs.rowCount ?? 0],
    )
    await updateChainState(client, chainId, { liveBlock: forkBlock.number, liveHash: forkBlock.hash })
    return logs.rowCount ?? 0
  })
}

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

/**
 * Stores the node's pre-confirmed logs as `pending` rows keyed by (transaction, ordinal), so a log
 * that moves between flashblocks or blocks updates its row. Logs of blocks the follower has already
 * stored, or of transactions already confirmed (their `transactions` row, written with their canonical
 * logs), are ignored: a stale answer racing the canonical block.
 */
export async function upsertPendingLogs(pool: pg.Pool, chainId: number, rows: readonly LogRow[]): Promise<number> {
  if (rows.length === 0) return 0
  const arrays = logArrays(rows, () => 'pending')
  const result = await pool.query(
    `INSERT INTO logs (${LOG_COLUMNS})
     SELECT $1, block_number, block_hash, to_timestamp(ts), transaction_hash, transaction_index, log_index, tx_log_ordinal,
            address, topic0, topic1, topic2, topic3, data, status
     FROM ${UNNEST_LOGS}
     WHERE block_number > COALESCE((SELECT live_block FROM chain_state WHERE chain_id = $1), -1)
       AND NOT EXISTS (SELECT 1 FROM transactions t WHERE t.chain_id = $1 AND t.hash = u.transaction_hash AND t.status <> 'pending' AND NOT t.removed)
     ON CONFLICT (chain_id, transaction_hash, tx_log_ordinal) WHERE status = 'pending'
     DO UPDATE SET block_number = EXCLUDED.block_number, block_timestamp = EXCLUDED.block_timestamp,
       transaction_index = EXCLUDED.transaction_index, log_index = EXCLUDED.log_index, address = EXCLUDED.address,
       topic0 = EXCLUDED.topic0, topic1 = EXCLUDED.topic1, topic2 = EXCLUDED.topic2, topic3 = EXCLUDED.topic3,
       data = EXCLUDED.data, removed = false, updated_at = now()
     WHERE (logs.block_number, logs.transaction_index, logs.log_index, logs.address, logs.topic0, logs.topic1, logs.topic2,
            logs.topic3, logs.data, logs.removed)
       IS DISTINCT FROM (EXCLUDED.block_number, EXCLUDED.transaction_index, EXCLUDED.log_index, EXCLUDED.address,
            EXCLUDED.topic0, EXCLUDED.topic1, EXCLUDED.topic2, EXCLUDED.topic3, EXCLUDED.data, false)`,
    [chainId, ...arrays],
  )
  return result.rowCount ?? 0
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

/** Marks everything stored from these (orphaned) blocks as removed. */
export async function orphanBlocks(pool: pg.Pool, chainId: number, hashes: readonly string[]): Promise<number> {
  return withTransaction(pool, async (client) => {
    await client.query(`UPDATE blocks SET removed = true, updated_at = now() WHERE chain_id = $1 AND hash = ANY($2::text[])`, [chainId, hashes])
    const logs = await client.query(
      `UPDATE logs SET removed = true, updated_at = now() WHERE chain_id = $1 AND block_hash = ANY($2::text[]) AND NOT removed`,
      [chainId, hashes],
    )
    for (const table of ['transactions', 'attributions']) {
      await client.query(`UPDATE ${table} SET removed = true, updated_at = now() WHERE chain_id = $1 AND block_hash = ANY($2::text[]) AND NOT removed`, [
        chainId,
        hashes,
      ])
    }
    return logs.rowCount ?? 0
  })
}
