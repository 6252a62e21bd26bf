import type { RpcCall, RpcClient } from '../client.js'
import { isAddress, isData, isHash, isObject, isQuantity, malformed } from './answer.js'

const METHOD = 'eth_getTransactionByHash'

/** What the indexer reads of a transaction; the node's object is kept as it came (other fields unread). */
export type Transaction = { hash: string; from: string; to: string | null; input: string; type?: string }

export function getTransactionRequest(hash: string): RpcCall {
  return { method: METHOD, params: [hash] }
}

/** A node's transaction object, checked field by field; null where the node does not know the transaction. */
export function parseTransaction(answer: unknown, method = METHOD): Transaction | null {
  if (answer === null) return null
  if (!isObject(answer)) return malformed(method, `${typeof answer}, not a transaction`)
  const { hash, from, to, input, type } = answer
  if (!isHash(hash)) return malformed(method, `a transaction without a hash`)
  if (!isAddress(from) || (to !== null && !isAddress(to))) return malformed(method, `transaction ${hash} without a sender or a recipient`)
  if (!isData(input)) return malformed(method, `transaction ${hash} without its input`)
  if (type !== undefined && !isQuantity(type)) return malformed(method, `transaction ${hash} of type ${JSON.stringify(type)}`)
  return answer as Transaction
}

/**
 * Transactions by hash in one batch of the client's (asked once), in order; null where the node does
 * not know one (yet: a node behind a load balancer may lag the others).
 *
 * @example
 * const [transaction] = await getTransactions(client, [hash])
 */
export async function getTransactions(client: Pick<RpcClient, 'batch'>, hashes: readonly string[]): Promise<(Transaction | null)[]> {
  return (await client.batch(hashes.map(getTransactionRequest))).map((answer) => parseTransaction(answer))
}
