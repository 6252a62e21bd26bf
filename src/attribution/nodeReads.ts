import type { RpcCall } from '../rpc/index.js'

/** Calls per JSON-RPC batch and batches in flight: FACTS measured ~5–6 k tx/s at 100 × 4. */
export const BATCH_SIZE = 100
export const BATCHES_IN_FLIGHT = 4

/** The node as attribution reads it; calls here should already retry transient errors (see `withRetry`). */
export type AttributionRpc = { request<T>(method: string, params: unknown[]): Promise<T>; batch<T>(calls: RpcCall[]): Promise<T[]> }

type RpcReceipt = { gasUsed: string }

/** Runs `fn` over `items` in slices of `size`, at most `parallel` slices at once, results in order. */
export async function inSlices<T, R>(items: readonly T[], size: number, parallel: number, fn: (slice: T[]) => Promise<R[]>): Promise<R[]> {
  const slices: T[][] = []
  for (let i = 0; i < items.length; i += size) slices.push(items.slice(i, i + size))
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

/** Gas used by `hashes`, from their receipts in JSON-RPC batches. */
export async function fetchGasUsed(rpc: Pick<AttributionRpc, 'batch'>, hashes: readonly string[]): Promise<Map<string, number>> {
  const receipts = await inSlices(hashes, BATCH_SIZE, BATCHES_IN_FLIGHT, (slice) =>
    rpc.batch<RpcReceipt | null>(slice.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] }))),
  )
  const gasUsed = new Map<string, number>()
  // A node that has no receipt yet leaves gas used unknown; it is filled when the transaction is seen again.
  receipts.forEach((receipt, i) => receipt && gasUsed.set(hashes[i]!, Number(receipt.gasUsed)))
  return gasUsed
}

