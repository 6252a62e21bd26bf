import type { Hex } from 'viem'
import type { RpcCall, RpcClient } from '../client.js'
import { isData, malformed } from './answer.js'

const METHOD = 'eth_call'

export type CallParameters = { to: string; data: Hex; block?: 'latest' | 'pending' | Hex }

/** The `eth_call` of `data` on `to`, to send alone or in a batch. */
export function callRequest({ to, data, block = 'latest' }: CallParameters): RpcCall {
  return { method: METHOD, params: [{ to, data }, block] }
}

/** What the call returned, as hex data; a revert comes as the request's error, never here. */
export function parseCallResult(answer: unknown): Hex {
  return isData(answer) ? (answer as Hex) : malformed(METHOD, `${JSON.stringify(answer)}, not return data`)
}

/**
 * One `eth_call`, asked once; rejects with the node's error on a revert (see `isRevert`).
 *
 * @example
 * const data = await call(client, { to: registry, data: encodeFunctionData({ abi, functionName: 'isRegistered', args: [code] }) })
 */
export async function call(client: Pick<RpcClient, 'request'>, parameters: CallParameters): Promise<Hex> {
  const { method, params } = callRequest(parameters)
  return parseCallResult(await client.request(method, params))
}
