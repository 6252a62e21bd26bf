import type { RpcCall, RpcClient, RpcRequestOptions } from '../client.js'
import { quantity } from './answer.js'

const METHOD = 'eth_getTransactionCount'

/** An account's nonce at `latest` (mined) or `pending` (with what the node holds in its pool or pre-confirmed). */
export function getTransactionCountRequest(address: string, block: 'latest' | 'pending'): RpcCall {
  return { method: METHOD, params: [address, block] }
}

export function parseTransactionCount(answer: unknown): number {
  return quantity(METHOD, 'count', answer)
}

/**
 * One account's nonce at `block`, asked once.
 *
 * @example
 * const sent = await getTransactionCount(client, wallet, 'latest', { timeoutMs: 1_000 })
 */
export async function getTransactionCount(
  client: Pick<RpcClient, 'request'>,
  address: string,
  block: 'latest' | 'pending',
  options?: RpcRequestOptions,
): Promise<number> {
  const { method, params } = getTransactionCountRequest(address, block)
  return parseTransactionCount(await client.request(method, params, options))
}
