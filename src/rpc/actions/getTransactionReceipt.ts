import type { RpcCall, RpcClient } from '../client.js'
import { isHash, isObject, malformed, quantity } from './answer.js'

const METHOD = 'eth_getTransactionReceipt'

/** What the indexer reads of a receipt: hashes lowercase, gas used as a number. */
export type Receipt = { transactionHash: string; blockHash: string; gasUsed: number }

export function getTransactionReceiptRequest(hash: string): RpcCall {
  return { method: METHOD, params: [hash] }
}

/** A node's receipt object, checked; null where the node has no receipt (yet). */
export function parseReceipt(answer: unknown, method = METHOD): Receipt | null {
  if (answer === null) return null
  if (!isObject(answer)) return malformed(method, `${typeof answer}, not a receipt`)
  const { transactionHash, blockHash } = answer
  if (!isHash(transactionHash) || !isHash(blockHash)) return malformed(method, `a receipt without its transaction or block hash`)
  return {
    transactionHash: transactionHash.toLowerCase(),
    blockHash: blockHash.toLowerCase(),
    gasUsed: quantity(method, 'gasUsed', answer.gasUsed),
  }
}

/**
 * Receipts by transaction hash in one batch of the client's (asked once), in order; null where the node has none.
 *
 * @example
 * const [receipt] = await getTransactionReceipts(client, [hash])
 */
export async function getTransactionReceipts(client: Pick<RpcClient, 'batch'>, hashes: readonly string[]): Promise<(Receipt | null)[]> {
  return (await client.batch(hashes.map(getTransactionReceiptRequest))).map((answer) => parseReceipt(answer))
}
