import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem'
import { call, callRequest, isRevert, parseCallResult } from '../rpc/index.js'
import { BATCH_SIZE, BATCHES_IN_FLIGHT, inSlices, type AttributionRpc } from './nodeReads.js'

const registryAbi = parseAbi(['function isRegistered(string code) view returns (bool)'])

/** A schema-1 code to check against the registry its suffix names. */
export type RegistryCheck = { registry: string; code: string }

export const checkKey = ({ registry, code }: RegistryCheck) => `${registry}:${code}`

/**
 * What an `isRegistered` call answered: a revert means not registered; null (unknown, asked again on a
 * later pass) for anything else, a node error such as -32000 "header not found" included.
 */
function registryAnswer(answer: PromiseSettledResult<unknown>): boolean | null {
  if (answer.status === 'rejected') return isRevert(answer.reason) ? false : null
  try {
    return decodeFunctionResult({ abi: registryAbi, functionName: 'isRegistered', data: parseCallResult(answer.value) })
  } catch {
    return null
  }
}

/**
 * The registries' `isRegistered` answers by `registry:code`, in JSON-RPC batches; a batch that fails
 * (one revert fails it whole) is asked again call by call, so a revert answers only its own call.
 */
export async function checkRegistries(rpc: AttributionRpc, checks: readonly RegistryCheck[]): Promise<Map<string, boolean | null>> {
  const calls = checks.map(({ registry, code }) => ({
    to: registry,
    data: encodeFunctionData({ abi: registryAbi, functionName: 'isRegistered', args: [code] }),
  }))
  const answers = await inSlices(calls, BATCH_SIZE, BATCHES_IN_FLIGHT, async (slice): Promise<PromiseSettledResult<unknown>[]> => {
    try {
      return (await rpc.batch(slice.map((parameters) => callRequest(parameters)))).map((value) => ({ status: 'fulfilled', value }))
    } catch {
      return Promise.allSettled(slice.map((parameters) => call(rpc, parameters)))
    }
  })
  return new Map(checks.map((check, i) => [checkKey(check), registryAnswer(answers[i]!)]))
}
