import type { Hex } from 'viem'
import type { RpcClient } from '../client.js'
import { isData, malformed } from './answer.js'

const METHOD = 'eth_getCode'

/** An account and the block (a hex height or a tag) to read its code at. */
export type CodeRead = readonly [address: string, block: string]

/**
 * The code of each account at its block, in one batch of the client's (asked once), in order; `0x`
 * for an account without code, null where the node answered none.
 *
 * @example
 * const [code] = await getCodes(client, [[sender, '0x1a']])
 */
export async function getCodes(client: Pick<RpcClient, 'batch'>, reads: readonly CodeRead[]): Promise<(Hex | null)[]> {
  const answers = await client.batch(reads.map(([address, block]) => ({ method: METHOD, params: [address, block] })))
  return answers.map((answer) => {
    if (answer == null) return null
    return isData(answer) ? (answer as Hex) : malformed(METHOD, `${JSON.stringify(answer)}, not code`)
  })
}
