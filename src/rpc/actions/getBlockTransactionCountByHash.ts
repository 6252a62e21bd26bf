import type { RpcClient } from '../client.js'
import { quantity } from './answer.js'

const METHOD = 'eth_getBlockTransactionCountByHash'

/**
 * How many transactions each block (by hash) holds, in one batch of the client's (asked once), in
 * order; null where the node does not know the block under that hash.
 *
 * @example
 * const [count] = await getBlockTransactionCounts(client, [blockHash])
 */
export async function getBlockTransactionCounts(
  client: Pick<RpcClient, 'batch'>,
  blockHashes: readonly string[],
): Promise<(number | null)[]> {
  const answers = await client.batch(blockHashes.map((blockHash) => ({ method: METHOD, params: [blockHash] })))
  return answers.map((answer) => (answer == null ? null : quantity(METHOD, 'count', answer)))
}
