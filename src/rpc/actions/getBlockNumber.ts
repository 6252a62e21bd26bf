import type { RpcCall, RpcClient } from '../client.js'
import { quantity } from './answer.js'

const METHOD = 'eth_blockNumber'

/** The node's head height call, to send alone or in a batch (beside pending logs, to date them). */
export function getBlockNumberRequest(): RpcCall {
  return { method: METHOD, params: [] }
}

export function parseBlockNumber(answer: unknown): number {
  return quantity(METHOD, 'head', answer)
}

/**
 * The node's head height, asked once.
 *
 * @example
 * const head = await getBlockNumber(client)
 */
export async function getBlockNumber(client: Pick<RpcClient, 'request'>): Promise<number> {
  return parseBlockNumber(await client.request(METHOD, []))
}
