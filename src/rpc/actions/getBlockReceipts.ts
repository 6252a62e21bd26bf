import type { RpcCall, RpcClient } from '../client.js'
import { isObject, malformed } from './answer.js'
import type { RpcLog } from './getLogs.js'
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

/**
 * The `eth_getBlockReceipts` call for a block by number or `latest`, to batch with other calls (the tip
 * reads a block and its receipts, whose logs and gas used it needs, in one request).
 *
 * @example
 * const [block, receipts] = await client.batch([getBlockRequest('latest', { includeTransactions: true }), getBlockReceiptsRequest('latest')])
 */
export function getBlockReceiptsRequest(block: number | 'latest'): RpcCall {
  return { method: METHOD, params: [typeof block === 'number' ? `0x${block.toString(16)}` : block] }
}

/**
 * A node's answer to {@link getBlockReceiptsRequest}: each receipt checked, with the logs they carry in
 * order; null where the node has no such block. Anything else throws an `InconsistentAnswerError`.
 */
export function parseBlockReceiptsWithLogs(answer: unknown): { receipts: Receipt[]; logs: RpcLog[] } | null {
  if (answer === null) return null
  if (!Array.isArray(answer)) return malformed(METHOD, `${typeof answer}, not a list of receipts`)
  const logs: RpcLog[] = []
  const receipts = answer.map((receipt: unknown) => {
    const parsed = parseReceipt(receipt, METHOD) ?? malformed(METHOD, 'a null receipt')
    const carried = isObject(receipt) ? receipt.logs : undefined
    if (!Array.isArray(carried)) return malformed(METHOD, `the receipt of ${parsed.transactionHash} without its logs`)
    logs.push(...(carried as RpcLog[]))
    return parsed
  })
  return { receipts, logs }
}
