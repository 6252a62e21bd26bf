import type pg from 'pg'
import { copyOrMerge } from './copy.js'
import { copyStatement, LOG_COPY_COLUMNS, type CopyData, type LogRow } from './logRows.js'
import type { Status } from './schema.js'

/**
 * Inserts canonical logs inside the caller's transaction; rows already stored (same chain, block hash
 * and log index) are left as they are, except that a row a reorg had removed is canonical again (its
 * block came back, or a repair read it again). The fast path is one `COPY` straight into `logs`; only when it
 * meets an existing row does it fall back to `COPY` into a temporary table and `INSERT … ON CONFLICT`.
 * Returns how many rows were new.
 */
export async function insertCanonicalLogs(client: pg.PoolClient, data: CopyData): Promise<number> {
  if (data.rows === 0) return 0
  const { changed } = await copyOrMerge(client, 'logs', LOG_COPY_COLUMNS, copyStatement(data), {
    rows: data.rows,
    onConflict: `ON CONFLICT (chain_id, block_number, block_hash, log_index, block_timestamp) WHERE status <> 'pending'
      DO UPDATE SET removed = false, status = EXCLUDED.status, updated_at = now() WHERE logs.removed`,
    binary: true,
  })
  return changed
}

export type BlockRow = {
  number: number
  hash: string
  parentHash?: string | null
  timestamp: number
  /** The node's `timestampMs`; null or absent where it serves none. */
  timestampMs?: number | null
}

/**
 * Stores block headers (those known only from logs have no parent hash yet), keeping what is there; a
 * block a reorg had marked removed is canonical again.
 */
export async function insertBlocks(
  client: pg.PoolClient,
  chainId: number,
  rows: readonly BlockRow[],
  statusOf: (number: number) => Status,
) {
  if (rows.length === 0) return
  const sorted = [...rows].sort((a, b) => a.number - b.number)
  await client.query(
    `INSERT INTO blocks (chain_id, number, hash, parent_hash, timestamp, status, block_timestamp_ms)
     SELECT $1, n, h, p, to_timestamp(t), s, ms
     FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::bigint[]) AS u(n, h, p, t, s, ms)
     ON CONFLICT (chain_id, hash) DO UPDATE SET parent_hash = COALESCE(blocks.parent_hash, EXCLUDED.parent_hash), removed = false,
       block_timestamp_ms = COALESCE(blocks.block_timestamp_ms, EXCLUDED.block_timestamp_ms), updated_at = now()
     WHERE (blocks.parent_hash IS NULL AND EXCLUDED.parent_hash IS NOT NULL) OR blocks.removed
       OR (blocks.block_timestamp_ms IS NULL AND EXCLUDED.block_timestamp_ms IS NOT NULL)`,
    [
      chainId,
      sorted.map((b) => b.number),
      sorted.map((b) => b.hash.toLowerCase()),
      sorted.map((b) => b.parentHash?.toLowerCase() ?? null),
      sorted.map((b) => b.timestamp),
      sorted.map((b) => statusOf(b.number)),
      sorted.map((b) => b.timestampMs ?? null),
    ],
  )
}

/** The distinct blocks of log rows sorted by block (as `toLogRows` returns them), in block order. */
export function blocksOfLogs(rows: readonly LogRow[]): BlockRow[] {
  const blocks: BlockRow[] = []
  const seen = new Set<string>()
  let previous: string | undefined
  for (const row of rows) {
    // Rows of one block are adjacent: only a change of block hash needs the set (two forks' logs may interleave).
    if (row.blockHash === previous || seen.has(row.blockHash)) continue
    previous = row.blockHash
    seen.add(row.blockHash)
    blocks.push({ number: row.blockNumber, hash: row.blockHash, timestamp: row.blockTimestamp, timestampMs: row.blockTimestampMs })
  }
  return blocks
}
