import type pg from 'pg'
import type { Interval } from '../utils/interval.js'
import { withTransaction } from './client.js'
import { blocksOfLogs, insertBlocks, insertCanonicalLogs, type BlockRow } from './logs.js'
import type { LogRow } from './logRows.js'
import type { Status } from './schema.js'
import { isCovered, recordInterval } from './sync.js'

export type StoreLogChunkParameters = {
  chainId: number
  filterId: string
  range: Interval
  rows: readonly LogRow[]
  /** Headers fetched for the range (with parent hashes); blocks known only from logs are added anyway. */
  blocks?: readonly BlockRow[]
  /** Blocks at or below this number are stored as `finalized`, the rest as `confirmed`. */
  finalizedBlock: number | null
  /** Store even when the range is recorded as stored (blocks fetched again after an orphaned fork). */
  force?: boolean
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
  const { chainId, filterId, range, rows, finalizedBlock } = params
  const statusOf = (blockNumber: number): Status =>
    finalizedBlock !== null && blockNumber <= finalizedBlock ? 'finalized' : 'confirmed'
  return withTransaction(pool, async (client) => {
    if (!params.force && (await isCovered(client, chainId, filterId, range))) return { stored: false, inserted: 0 }
    const inserted = await insertCanonicalLogs(client, chainId, rows, (row) => statusOf(row.blockNumber))
    const headers = new Map((params.blocks ?? []).map((block) => [block.hash, block]))
    for (const block of blocksOfLogs(rows)) if (!headers.has(block.hash)) headers.set(block.hash, block)
    await insertBlocks(client, chainId, [...headers.values()], statusOf)
    await params.extraWrites?.(client)
    await recordInterval(client, chainId, filterId, range)
    return { stored: true, inserted }
  })
}
