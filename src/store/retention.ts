import type pg from 'pg'
import type { Queryable } from './client.js'
import { dropExpiredMonths, type ExpiryRules } from './partitions.js'

/** Rows looked at per delete statement: each is a short transaction that holds few locks. */
export const RETENTION_BATCH = 5_000

/**
 * The rows retention may delete, besides being older than the cutoff: finalized (no reorg or finality
 * step reads them again), outside every open repair, and (for logs) not the registry's, whose live logs
 * `registry_tokens` is recomputed from.
 */
const PRUNABLE_LOG = `l.status = 'finalized' AND l.block_timestamp < $2
  AND NOT EXISTS (SELECT 1 FROM builder_code_registries g WHERE g.chain_id = l.chain_id AND g.address = l.address)
  AND NOT EXISTS (SELECT 1 FROM sync_repairs r WHERE r.chain_id = l.chain_id AND l.block_number BETWEEN r.from_block AND r.to_block)`
/**
 * A month partition of `logs` or `transactions` may be dropped whatever its chain (partitions are shared by
 * chains) when every row is finalized, or a pre-confirmed row that was dropped (`pending` and removed) at a
 * height at or below its chain's finalized block, which nothing claims again: counts the partition's rows
 * and those open, its rows named `r`.
 */
const checkMonth = (p: string) =>
  `SELECT count(*) AS rows, count(*) FILTER (WHERE NOT (r.status = 'finalized'
     OR r.status = 'pending' AND r.removed AND r.block_number <= (SELECT s.finalized_block FROM chain_state s WHERE s.chain_id = r.chain_id))) AS open
   FROM ${p} r`
/**
 * A month of `logs`: the rows kept even so, the registry's logs and rows under an open repair, move into
 * `logs_default` (a deployment that follows the BuilderCodes registry has some in most months). See
 * dropExpiredMonths.
 */
const LOG_MONTH_EXPIRY: ExpiryRules = {
  check: checkMonth,
  // Through the partition's indexes: the registries' addresses, and the canonical key for the repairs' blocks (a
  // dropped pre-confirmation at a finalized height is nothing a repair reads).
  kept: (p) =>
    `SELECT l.* FROM ${p} l JOIN builder_code_registries g ON g.chain_id = l.chain_id AND g.address = l.address
     UNION
     SELECT l.* FROM sync_repairs r JOIN ${p} l ON l.chain_id = r.chain_id AND l.status <> 'pending'
       AND l.block_number BETWEEN r.from_block AND r.to_block`,
}
/** Transactions: also never one that has attributions (the transaction route and the attribution's details read it). */
const PRUNABLE_TRANSACTION = `t.status = 'finalized' AND t.block_timestamp < $2
  AND NOT EXISTS (SELECT 1 FROM attributions a WHERE a.chain_id = t.chain_id AND a.tx_hash = t.hash)
  AND NOT EXISTS (SELECT 1 FROM sync_repairs r WHERE r.chain_id = t.chain_id AND t.block_number BETWEEN r.from_block AND r.to_block)`
/**
 * A month of `transactions`: the transactions kept even so, those with attributions and those under an open
 * repair, move into `transactions_default`; the keys of the others (`transaction_keys`) are deleted with them.
 */
const TRANSACTION_MONTH_EXPIRY: ExpiryRules = {
  check: checkMonth,
  kept: (p) =>
    `SELECT t.* FROM ${p} t WHERE EXISTS (SELECT 1 FROM attributions a WHERE a.chain_id = t.chain_id AND a.tx_hash = t.hash)
     UNION
     SELECT t.* FROM sync_repairs r JOIN ${p} t ON t.chain_id = r.chain_id AND t.block_number BETWEEN r.from_block AND r.to_block`,
  alsoDelete: (p) =>
    `DELETE FROM transaction_keys k USING ${p} t WHERE k.chain_id = t.chain_id AND k.hash = t.hash
       AND NOT EXISTS (SELECT 1 FROM kept_rows r WHERE r.chain_id = t.chain_id AND r.hash = t.hash)`,
}

/**
 * Lets go of what retention may. First whole month partitions of `logs` and `transactions` older than `cutoff`
 * whose rows may go (every chain's: partitions are shared) are detached and dropped, the few rows kept moved into
 * the default partitions (`moved`; see LOG_MONTH_EXPIRY, TRANSACTION_MONTH_EXPIRY). Then the rest is deleted,
 * oldest blocks first, in statements of `batch` rows walked in block order from the oldest (an index
 * range scan each), until the oldest rows walked are younger than `cutoff`. Rows kept for a reason above
 * are stepped over, never walked again in this pass. `logs` and `transactions` count the rows of dropped
 * partitions too.
 */
export async function pruneRawHistory(
  db: pg.Pool,
  chainId: number,
  cutoff: Date,
  batch = RETENTION_BATCH,
): Promise<{ logs: number; transactions: number; partitions: string[]; moved: number }> {
  const dropped = await dropExpiredMonths(db, 'logs', cutoff, LOG_MONTH_EXPIRY)
  const droppedTransactions = await dropExpiredMonths(db, 'transactions', cutoff, TRANSACTION_MONTH_EXPIRY)
  const deleted = await pruneWalk(db, chainId, cutoff, batch, {
    // The canonical key (status <> 'pending') orders them by block.
    walk: `SELECT l.block_number, l.block_timestamp FROM logs l WHERE l.chain_id = $1 AND l.status <> 'pending' AND l.block_number >= $2
           ORDER BY l.block_number LIMIT $3`,
    prune: `DELETE FROM logs l WHERE l.chain_id = $1 AND l.status <> 'pending' AND l.block_number BETWEEN $3 AND $4 AND ${PRUNABLE_LOG}`,
  })
  const transactions = await pruneWalk(db, chainId, cutoff, batch, {
    walk: `SELECT t.block_number, t.block_timestamp FROM transactions t WHERE t.chain_id = $1 AND t.block_number >= $2
           ORDER BY t.block_number LIMIT $3`,
    // Each transaction's key goes with it; a row per transaction deleted comes back, for the count.
    prune: `WITH gone AS (
              DELETE FROM transactions t WHERE t.chain_id = $1 AND t.block_number BETWEEN $3 AND $4 AND ${PRUNABLE_TRANSACTION}
              RETURNING t.chain_id, t.hash),
            keys AS (DELETE FROM transaction_keys k USING gone WHERE k.chain_id = gone.chain_id AND k.hash = gone.hash)
            SELECT 1 FROM gone`,
  })
  return {
    logs: dropped.rows + deleted,
    transactions: droppedTransactions.rows + transactions,
    partitions: [...dropped.partitions, ...droppedTransactions.partitions],
    moved: dropped.moved + droppedTransactions.moved,
  }
}

async function pruneWalk(
  db: Queryable,
  chainId: number,
  cutoff: Date,
  batch: number,
  sql: { walk: string; prune: string },
): Promise<number> {
  let deleted = 0
  let from = 0
  for (;;) {
    const { rows } = await db.query<{ block_number: string; block_timestamp: Date }>(sql.walk, [chainId, from, batch])
    if (rows.length === 0 || rows[0]!.block_timestamp >= cutoff) break
    const first = Number(rows[0]!.block_number)
    // Whole blocks only: the last block of a full page may go on in the next one.
    const last = rows.length < batch ? Number(rows.at(-1)!.block_number) : Math.max(first, Number(rows.at(-1)!.block_number) - 1)
    const result = await db.query(sql.prune, [chainId, cutoff, first, last])
    deleted += result.rowCount ?? 0
    from = last + 1
  }
  return deleted
}
