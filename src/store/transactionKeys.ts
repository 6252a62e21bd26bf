/**
 * `transaction_keys` holds one row per stored transaction, keyed by `(chain_id, hash)`, with the block time of
 * the transaction's row, and so of its attributions, which move with it: the month partition a write by hash
 * has to look into. Every writer of a transaction keeps its key's time equal to its row's
 * (src/store/attributions.ts).
 */

/**
 * A condition that keeps `column` (the `block_timestamp` of `transactions` or `attributions` in a write by
 * hash) between the least and the greatest time the keys of `hashes` name: an SQL `text[]` of transaction
 * hashes of the chain `$1`. The bounds are subqueries of the statement itself, read in its own snapshot, so
 * PostgreSQL leaves out every other month as it runs (each month is a probe of its primary key per hash
 * asked, and a year has thirteen). A hash without a key has no stored row; when none has one, no month is
 * read.
 */
export const inKeyMonths = (column: string, hashes: string) =>
  `${column} BETWEEN (SELECT min(k.block_timestamp) FROM transaction_keys k WHERE k.chain_id = $1 AND k.hash = ANY(${hashes}))
     AND (SELECT max(k.block_timestamp) FROM transaction_keys k WHERE k.chain_id = $1 AND k.hash = ANY(${hashes}))`
