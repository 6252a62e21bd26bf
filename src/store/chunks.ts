import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import { lockForkMarks } from './chainLock.js'
import { withTransaction } from './client.js'
import { blocksOfLogs, insertBlocks, insertCanonicalLogs, type BlockRow } from './logs.js'
import { toCopyData, type CopyData, type LogRow, type TransactionRow } from './logRows.js'
import { statusBelow } from './schema.js'
import { finalizeBehindFinality } from './finality.js'
import { blocksInConflict } from './reorgs.js'
import { isCovered, recordInterval } from './syncState.js'
import { inKeyMonths } from './transactionKeys.js'
import { CodetrailError } from '../internal/errors.js'

/**
 * A range's answer is from a fork the index already knows to be orphaned, or disagrees with blocks the
 * index holds as canonical at the same heights: it is read again, never stored. Retryable.
 */
export class StaleForkError extends CodetrailError {
  override name = 'StaleForkError'
}

/**
 * The first of the range's unfinalized transactions that the index holds canonical (confirmed, not
 * removed) in another block than the one the range read it in. Both cannot be canonical: if the range
 * read the old fork and moved the transaction there, orphaning that block later would remove the
 * transaction and its attributions while its logs stay live in its real block, and the repair of the
 * orphaned height would not find it again. The range is read again instead; if it is the stored block
 * that is orphaned, the marks that find it out take the row off it (removed) and the retry goes through.
 */
export async function transactionsStoredElsewhere(
  client: Pick<pg.PoolClient, 'query'>,
  chainId: number,
  transactions: readonly TransactionRow[],
  finalizedBlock: number | null,
): Promise<{ hash: string; readIn: number; storedIn: number } | undefined> {
  const unfinalized = transactions.filter((tx) => finalizedBlock === null || tx.blockNumber > finalizedBlock)
  if (unfinalized.length === 0) return undefined
  // One key lookup per transaction read, whatever the planner believes of `transactions`: as a plain
  // join, a backfill's first chunks near the head (the table just filled, never analyzed) were planned
  // as a walk of the chain's whole table per transaction read (3.8 s for 320 against 72,000 rows).
  // The LIMIT keeps PostgreSQL from flattening the lateral subquery back into that join. The keys' months
  // bound the lookups to the months the range's transactions are stored in.
  const { rows } = await client.query<{ hash: string; readIn: string; storedIn: string }>(
    `SELECT u.hash, u.block_number AS "readIn", t.block_number AS "storedIn"
     FROM unnest($2::text[], $3::bigint[], $4::text[]) AS u(hash, block_number, block_hash)
     CROSS JOIN LATERAL (
       SELECT t.block_number FROM transactions t
       WHERE t.chain_id = $1 AND t.hash = u.hash AND ${inKeyMonths('t.block_timestamp', '$2::text[]')}
         AND t.status <> 'pending' AND NOT t.removed AND t.block_hash <> u.block_hash
       LIMIT 1
     ) t
     LIMIT 1`,
    [chainId, unfinalized.map((tx) => tx.transactionHash), unfinalized.map((tx) => tx.blockNumber), unfinalized.map((tx) => tx.blockHash)],
  )
  const row = rows[0]
  return row && { hash: row.hash, readIn: Number(row.readIn), storedIn: Number(row.storedIn) }
}

/**
 * A range's logs made ready to store right after they are converted: their `COPY` data, the blocks
 * they name, and the first row of each transaction (all attribution needs). The log rows need not
 * live on while the range's transactions are fetched, so they die young instead of being copied
 * through the garbage collector's generations.
 */
export type PreparedLogs = { copy: CopyData; blocks: BlockRow[]; transactions: TransactionRow[] }

/** Prepares `rows` (sorted, as `toLogRows` returns them) for {@link storeLogChunk}. */
export function prepareLogs(rows: readonly LogRow[], chainId: number, finalizedBlock: number | null): PreparedLogs {
  const statusOf = statusBelow(finalizedBlock)
  const transactions: TransactionRow[] = []
  for (const row of rows) {
    if (row.txLogOrdinal !== 0) continue
    const { transactionHash, blockNumber, blockHash, blockTimestamp, blockTimestampMs, transactionIndex } = row
    transactions.push({ transactionHash, blockNumber, blockHash, blockTimestamp, blockTimestampMs, transactionIndex })
  }
  return { copy: toCopyData(rows, chainId, (row) => statusOf(row.blockNumber)), blocks: blocksOfLogs(rows), transactions }
}

/** Prepared logs of consecutive parts of one range, as one. */
export function joinPrepared(parts: readonly PreparedLogs[]): PreparedLogs {
  if (parts.length === 1) return parts[0]!
  return {
    copy: { rows: parts.reduce((rows, part) => rows + part.copy.rows, 0), pieces: parts.flatMap((part) => part.copy.pieces) },
    blocks: parts.flatMap((part) => part.blocks),
    transactions: parts.flatMap((part) => part.transactions),
  }
}

export type StoreLogChunkParameters = {
  chainId: number
  filterId: string
  range: Interval
  logs: PreparedLogs
  /** Headers fetched for the range (with parent hashes); blocks known only from logs are added anyway. */
  blocks?: readonly BlockRow[]
  /** Blocks at or below this number are stored as `finalized`, the rest as `confirmed`. */
  finalizedBlock: number | null
  /** Further writes that must commit with the logs (transactions, attributions). */
  extraWrites?: (client: pg.PoolClient) => Promise<void>
}

export type StoreLogChunkReturnType = { stored: boolean; inserted: number }

/**
 * Stores one range of canonical logs, their blocks and the range's sync progress in one transaction.
 * A range already recorded for the filter is left untouched (`stored: false`), so a retried or
 * duplicated job changes nothing.
 */
export async function storeLogChunk(pool: pg.Pool, params: StoreLogChunkParameters): Promise<StoreLogChunkReturnType> {
  const { chainId, filterId, range, logs, finalizedBlock } = params
  const headers = new Map((params.blocks ?? []).map((block) => [block.hash, block]))
  for (const block of logs.blocks) if (!headers.has(block.hash)) headers.set(block.hash, block)
  const unfinalized = [...headers.values()].filter((block) => finalizedBlock === null || block.number > finalizedBlock)
  return withTransaction(pool, async (client) => {
    await lockForkMarks(client, chainId, 'store')
    if (await isCovered(client, chainId, filterId, range)) return { stored: false, inserted: 0 }
    const stale = await blocksInConflict(client, chainId, unfinalized)
    if (stale.length > 0) {
      throw new StaleForkError(
        `blocks ${range[0]}–${range[1]} were read from another fork than the one stored (block ${stale[0]}): reading them again`,
      )
    }
    const moved = await transactionsStoredElsewhere(client, chainId, logs.transactions, finalizedBlock)
    if (moved) {
      throw new StaleForkError(
        `blocks ${range[0]}–${range[1]} put transaction ${moved.hash} in block ${moved.readIn}, the index holds it canonical in block ${moved.storedIn}: reading them again`,
      )
    }
    const inserted = await insertCanonicalLogs(client, logs.copy)
    await insertBlocks(client, chainId, [...headers.values()], statusBelow(finalizedBlock))
    await params.extraWrites?.(client)
    await finalizeBehindFinality(client, chainId, range, finalizedBlock)
    await recordInterval(client, chainId, filterId, range)
    return { stored: true, inserted }
  })
}
