import type { RpcClient } from '../client.js'
import { malformed } from './answer.js'
import { parseReceipt, type Receipt } from './getTransactionReceipt.js'

const METHOD = 'eth_getBlockReceipts'

/**
 * Every receipt of each block (by hash) in one batch of the client's (asked once), in order; null where
 * the node does not know the block under that hash. A node without the method rejects with an
 * `invalid-request` error (see `classifyRpcError`).
 *
 * @example
 * const [receipts] = await getBlockReceipts(client, [blockHash])
 */
export async function getBlockReceipts(client: Pick<RpcClient, 'batch'>, blockHashes: readonly string[]): Promise<(Receipt[] | null)[]> {
  const answers = await client.batch(blockHashes.map((blockHash) => ({ method: METHOD, params: [blockHash] })))
  return answers.map((answer) => {
    if (answer === null) return null
    if (!Array.isArray(answer)) return malformed(METHOD, `${typeof answer}, not a list of receipts`)
    return answer.map((receipt) => parseReceipt(receipt, METHOD) ?? malformed(METHOD, 'a null receipt'))
  })
}
