import type pg from 'pg'
import type { Logger } from '../internal/logger.js'
import { createReceiptReader, type AttributionRpc } from '../attribution/nodeReads.js'
import { gasOwed, gasOwedSpan, storeGasUsed, withTransaction } from '../store/index.js'

/** Transactions whose receipts are read and stored per step: a few JSON-RPC batches and one short transaction. */
const GAS_PAGE = 1_000

/** Fill the gas used of the attributed transactions of `[fromBlock, toBlock]` that lack it (PostgreSQL says which). */
export type GasJobData = {
  chainId: number
  fromBlock: number
  toBlock: number
  /** Transactions per block hash where the range job knew them exactly (headers it read): such blocks' receipts may be read whole. */
  blockSizes?: [blockHash: string, transactions: number][]
}
export type GasJobResult = { filled: number; left: number }

export type GasFillContext = { pool: pg.Pool; logger: Logger; rpc: Pick<AttributionRpc, 'batch'> }

/**
 * The follow-up of a range job: gas used of the range's attributed transactions, read from their
 * receipts off the range job's critical path and stored only where the row is still in the block the
 * receipt names (a row a reorg moved or removed meanwhile is the repair path's).
 */
export function createGasFiller({ pool, logger, rpc }: GasFillContext) {
  const gasUsedOf = createReceiptReader(rpc)
  return async function fillGas({ chainId, fromBlock, toBlock, blockSizes = [] }: GasJobData): Promise<GasJobResult> {
    const started = performance.now()
    const sizeOf = new Map(blockSizes)
    let filled = 0
    let left = 0
    let after: { blockNumber: number; hash: string } | undefined
    for (;;) {
      const owed = await gasOwed(pool, chainId, [fromBlock, toBlock], { ...(after ? { after } : {}), limit: GAS_PAGE })
      if (owed.length === 0) break
      after = { blockNumber: owed.at(-1)!.blockNumber, hash: owed.at(-1)!.hash }
      const gasUsed = await gasUsedOf(
        owed.map((row) => ({ hash: row.hash, blockHash: row.blockHash, blockTransactions: sizeOf.get(row.blockHash) })),
      )
      const reads = owed.flatMap((row) => {
        const gas = gasUsed.get(row.hash)
        return gas === undefined ? [] : [{ hash: row.hash, blockHash: row.blockHash, gasUsed: gas }]
      })
      const stored = await withTransaction(pool, (client) => storeGasUsed(client, chainId, reads))
      filled += stored
      left += owed.length - stored
    }
    if (filled > 0 || left > 0) {
      logger.info(
        { chain_id: chainId, from_block: fromBlock, to_block: toBlock, filled, left, duration_ms: Math.round(performance.now() - started) },
        'gas used filled',
      )
    }
    return { filled, left }
  }
}

/**
 * Queues one fill over every attributed row still owed gas used when no fill is waiting or running: a
 * fill lost with Redis, or never queued because its range job died between its commit and the queueing,
 * is not left owed for ever. Returns the blocks queued, or null.
 */
export async function sweepOwedGas({
  pool,
  chainId,
  gasQueue,
  logger,
}: {
  pool: pg.Pool
  chainId: number
  gasQueue: { pending: () => Promise<number>; enqueue: (data: GasJobData) => Promise<void> }
  logger: Logger
}): Promise<readonly [number, number] | null> {
  if ((await gasQueue.pending()) > 0) return null
  const owed = await gasOwedSpan(pool, chainId)
  if (!owed) return null
  await gasQueue.enqueue({ chainId, fromBlock: owed[0], toBlock: owed[1] })
  logger.info({ chain_id: chainId, from_block: owed[0], to_block: owed[1] }, 'gas fill queued for rows that no fill was on its way to')
  return owed
}
