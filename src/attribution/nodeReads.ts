import { classifyRpcError, getBlockReceipts, getTransactionReceipts, type RpcClient } from '../rpc/index.js'

/** Calls per JSON-RPC batch and batches in flight: 100 × 4 reads ~5–6 k transactions a second from a provider. */
export const BATCH_SIZE = 100
export const BATCHES_IN_FLIGHT = 4
/** Whole blocks (transactions or receipts included) per batch where their sizes are not known: a busy block is about a megabyte of JSON. */
export const BLOCKS_PER_BATCH = 10
/**
 * A block's whole list (its transactions, its receipts) is read in one call once the ones needed are at
 * least this share of it; below it, one call each by hash carries fewer bytes. Anvil serves both ways
 * at the same transactions per second (harness/bench/README.md), so the share decides calls, not speed.
 */
export const WHOLE_BLOCK_SHARE = 0.5

/** The node as attribution reads it; calls here should already retry transient errors (see `withRetry`). */
export type AttributionRpc = Pick<RpcClient, 'request' | 'batch'>

/** `items` in order, cut into slices of at most `size` (each item weighing `weight(item)`, 1 unless given; a heavier item gets a slice of its own). */
export function slicesOf<T>(items: readonly T[], size: number, weight: (item: T) => number = () => 1): T[][] {
  const slices: T[][] = []
  let current: T[] = []
  let currentWeight = 0
  for (const item of items) {
    const w = weight(item)
    if (current.length > 0 && currentWeight + w > size) {
      slices.push(current)
      current = []
      currentWeight = 0
    }
    current.push(item)
    currentWeight += w
  }
  if (current.length > 0) slices.push(current)
  return slices
}

/** Runs `fn` over `items` in slices (`slicesOf`), at most `parallel` slices at once, results in order. */
export async function inSlices<T, R>(
  items: readonly T[],
  size: number,
  parallel: number,
  fn: (slice: T[]) => Promise<R[]>,
  weight: (item: T) => number = () => 1,
): Promise<R[]> {
  const slices = slicesOf(items, size, weight)
  const results: R[][] = new Array(slices.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(parallel, slices.length) }, async () => {
      while (next < slices.length) {
        const index = next++
        results[index] = await fn(slices[index]!)
      }
    }),
  )
  return results.flat()
}

/**
 * A block's weight in a batch of whole blocks: its transactions, so a batch carries about `BATCH_SIZE`
 * of them; a block of unknown size counts as a `BLOCKS_PER_BATCH`th of a batch.
 */
export function blockWeight(transactions: number | undefined): number {
  return Math.max(1, transactions ?? BATCH_SIZE / BLOCKS_PER_BATCH)
}

/**
 * Whether `needed` of a block's `size` transactions are enough to read the block's whole list in one
 * call. `size` must be the block's real count (undefined when unknown): sized by a lower bound, two
 * transactions at indexes 0–1 of a 300-transaction block would read all 300.
 */
export function readsWholeBlock(needed: number, size: number | undefined): boolean {
  return size !== undefined && needed >= 2 && needed >= size * WHOLE_BLOCK_SHARE
}

/** A transaction whose gas used is wanted, with its block and how many transactions that block holds, where known. */
export type ReceiptRead = { hash: string; blockHash: string; blockTransactions: number | undefined }

/**
 * Gas used of transactions from their receipts: `eth_getBlockReceipts` for blocks where the wanted
 * ones are a large share, `eth_getTransactionReceipt` by hash for the rest, in JSON-RPC batches. A node
 * that does not serve `eth_getBlockReceipts` is asked per transaction from then on.
 */
export function createReceiptReader(rpc: Pick<AttributionRpc, 'batch'>) {
  let blockReceipts = true

  async function byHash(reads: readonly ReceiptRead[], gasUsed: Map<string, number>): Promise<void> {
    const receipts = await inSlices(reads, BATCH_SIZE, BATCHES_IN_FLIGHT, (slice) =>
      getTransactionReceipts(
        rpc,
        slice.map((read) => read.hash),
      ),
    )
    // A node that has no receipt yet, or one from another block (the transaction moved in a reorg), leaves gas used unknown: it is filled when the transaction is seen again.
    receipts.forEach((receipt, i) => {
      if (receipt && receipt.blockHash === reads[i]!.blockHash) gasUsed.set(reads[i]!.hash, receipt.gasUsed)
    })
  }

  /** Reads whole blocks' receipts; returns the hashes still to read by hash (all of them when the node lacks the method). */
  async function byBlock(
    blocks: ReadonlyMap<string, { size: number; hashes: readonly string[] }>,
    gasUsed: Map<string, number>,
  ): Promise<ReceiptRead[]> {
    const blockHashes = [...blocks.keys()]
    try {
      const lists = await inSlices(
        blockHashes,
        BATCH_SIZE,
        BATCHES_IN_FLIGHT,
        (slice) => getBlockReceipts(rpc, slice),
        (blockHash) => blockWeight(blocks.get(blockHash)!.size),
      )
      const left: ReceiptRead[] = []
      lists.forEach((receipts, i) => {
        const wanted = blocks.get(blockHashes[i]!)!.hashes
        const found = new Map((receipts ?? []).filter((r) => r.blockHash === blockHashes[i]).map((r) => [r.transactionHash, r]))
        for (const hash of wanted) {
          const receipt = found.get(hash)
          if (receipt) gasUsed.set(hash, receipt.gasUsed)
          // A block the node no longer has under that hash (reorged) or not yet: asked by hash, as the others.
          else left.push({ hash, blockHash: blockHashes[i]!, blockTransactions: undefined })
        }
      })
      return left
    } catch (error) {
      if (classifyRpcError(error).pattern !== 'invalid-request') throw error
      blockReceipts = false
      return [...blocks].flatMap(([blockHash, block]) => block.hashes.map((hash) => ({ hash, blockHash, blockTransactions: undefined })))
    }
  }

  return async function gasUsedOf(reads: readonly ReceiptRead[]): Promise<Map<string, number>> {
    const gasUsed = new Map<string, number>()
    const perBlock = Map.groupBy(reads, (read) => read.blockHash)
    const wholeBlocks = new Map<string, { size: number; hashes: string[] }>()
    const single: ReceiptRead[] = []
    for (const [blockHash, wanted] of perBlock) {
      const size = wanted.find((r) => r.blockTransactions !== undefined)?.blockTransactions
      if (blockReceipts && size !== undefined && readsWholeBlock(wanted.length, size))
        wholeBlocks.set(blockHash, { size, hashes: wanted.map((r) => r.hash) })
      else single.push(...wanted)
    }
    const [left] = await Promise.all([wholeBlocks.size > 0 ? byBlock(wholeBlocks, gasUsed) : [], byHash(single, gasUsed)])
    if (left.length > 0) await byHash(left, gasUsed)
    return gasUsed
  }
}
