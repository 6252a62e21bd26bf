import type { RpcClient } from '../client.js'
import { quantity } from './answer.js'

/**
 * The node's chain id (`eth_chainId`), asked once.
 *
 * @example
 * const chainId = await getChainId(client)
 */
export async function getChainId(client: Pick<RpcClient, 'request'>): Promise<number> {
  return quantity('eth_chainId', 'chain id', await client.request('eth_chainId', []))
}
