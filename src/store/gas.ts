import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import type { Queryable } from './client.js'
import { inKeyMonths } from './transactionKeys.js'

/** An attributed transaction whose gas used is still owed, with the block it is stored under. */
export type GasOwed = { hash: string; blockNumber: number; blockHash: string }

/** Gas used read from a receipt: for the transaction `hash` in the block `blockHash`. */
export type GasRead = { hash: string; blockHash: string; gasUsed: number }

/**
 * Attributed, confirmed and live transactions of `range` that lack gas used, in block order after
 * `after` (a keyset cursor: rows left owed by an earlier page are not asked again), at most `limit`.
 */
export async function gasOwed(
  db: Queryable,
  chainId: number,
  range: Interval,
  { after, limit }: { after?: { blockNumber: number; hash: string }; limit: number },
): Promise<GasOwed[]> {
  const { rows } = await db.query<{ hash: string; block_number: string; block_hash: string }>(
    `SELECT DISTINCT ON (block_number, tx_hash) tx_hash AS hash, block_number, block_hash FROM attributions
     WHERE chain_id = $1 AND block_number BETWEEN $2 AND $3 AND gas_used IS NULL AND status <> 'pending' AND NOT removed
       AND (block_number, tx_hash) > ($4, $5)
     ORDER BY block_number, tx_hash LIMIT $6`,
    [chainId, range[0], range[1], after?.blockNumber ?? -1, after?.hash ?? '', limit],
  )
  return rows.map((row) => ({ hash: row.hash, blockNumber: Number(row.block_number), blockHash: row.block_hash }))
}

/**
 * Stores gas used where the row is still in the block the receipt came from and still lacks it: a row
 * a reorg moved or removed meanwhile is left alone (the repair path reads its range again). Returns the
 * transactions filled.
 */
export async function storeGasUsed(client: pg.PoolClient, chainId: number, reads: readonly GasRead[]): Promise<number> {
  if (reads.length === 0) return 0
  const params = [chainId, reads.map((r) => r.hash), reads.map((r) => r.blockHash), reads.map((r) => r.gasUsed)]
  // `= ANY` on the key keeps each statement to index lookups whatever the statistics say: right after a
  // backfill, before autovacuum analyzes, the planner takes the tables for empty and joins by a scan. The
  // keys' months bound the lookups to the months the page's rows are in.

  const { rowCount } = await client.query(
    `UPDATE transactions t SET gas_used = u.gas_used, updated_at = now()
     FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u(hash, block_hash, gas_used)
     WHERE t.chain_id = $1 AND t.hash = ANY($2::text[]) AND ${inKeyMonths('t.block_timestamp', '$2::text[]')} AND t.hash = u.hash AND t.block_hash = u.block_hash AND t.gas_used IS NULL AND NOT t.removed AND t.status <> 'pending'`,
    params,
  )
  await client.query(
    `UPDATE attributions a SET gas_used = u.gas_used, updated_at = now()
     FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u(hash, block_hash, gas_used)
     WHERE a.chain_id = $1 AND a.tx_hash = ANY($2::text[]) AND ${inKeyMonths('a.block_timestamp', '$2::text[]')} AND a.tx_hash = u.hash AND a.block_hash = u.block_hash AND a.gas_used IS NULL AND NOT a.removed AND a.status <> 'pending'`,
    params,
  )
  return rowCount ?? 0
}

/** Attributed, confirmed, live transactions of the chain (within `range` when given) still lacking gas used: read from the partial index. */
export async function gasUsedMissing(db: Queryable, chainId: number, range: Interval = [0, Number.MAX_SAFE_INTEGER]): Promise<number> {
  const { rows } = await db.query<{ missing: string }>(
    `SELECT count(DISTINCT tx_hash) AS missing FROM attributions
     WHERE chain_id = $1 AND block_number BETWEEN $2 AND $3 AND gas_used IS NULL AND status <> 'pending' AND NOT removed`,
    [chainId, range[0], range[1]],
  )
  return Number(rows[0]!.missing)
}

/**
 * The blocks between the lowest and the highest attributed row that still lacks gas used, or null when
 * none does (read from the partial index of such rows).
 */
export async function gasOwedSpan(db: Queryable, chainId: number): Promise<Interval | null> {
  const { rows } = await db.query<{ low: string | null; high: string | null }>(
    `SELECT min(block_number) AS low, max(block_number) AS high FROM attributions
     WHERE chain_id = $1 AND gas_used IS NULL AND status <> 'pending' AND NOT removed`,
    [chainId],
  )
  const { low, high } = rows[0]!
  return low === null || high === null ? null : [Number(low), Number(high)]
}

/**
 * Fresh statistics for the tables the gas fill reads and writes: after a backfill wrote them in bulk and
 * before autovacuum has looked, the planner takes them for nearly empty and joins by scanning them.
 */
export async function analyzeForGasFill(db: Queryable): Promise<void> {
  await db.query('ANALYZE transactions, attributions')
}
