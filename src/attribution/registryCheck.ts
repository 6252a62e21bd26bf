import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem'
import { call, callRequest, isRevert, parseCallResult } from '../rpc/index.js'
import type { RegistryUnverifiedReason } from '../store/schema.js'
import { BATCH_SIZE, BATCHES_IN_FLIGHT, inSlices, type AttributionRpc } from './nodeReads.js'

const registryAbi = parseAbi(['function isRegistered(string code) view returns (bool)'])

/** A schema-1 code to check against the registry its suffix names. */
export type RegistryCheck = { registry: string; code: string }

/** Whether a code is registered; null (unknown, asked again on a later pass) with the reason. */
export type RegistryAnswer = { registered: boolean; reason: null } | { registered: null; reason: RegistryUnverifiedReason }

/**
 * What an `isRegistered` call answered: a revert means not registered; unknown for anything else, a node
 * error such as -32000 "header not found" included, or an answer that is no boolean (no contract there).
 */
function registryAnswer(answer: PromiseSettledResult<unknown>): RegistryAnswer {
  if (answer.status === 'rejected')
    return isRevert(answer.reason) ? { registered: false, reason: null } : { registered: null, reason: 'node_error' }
  try {
    return {
      registered: decodeFunctionResult({ abi: registryAbi, functionName: 'isRegistered', data: parseCallResult(answer.value) }),
      reason: null,
    }
  } catch {
    return { registered: null, reason: 'invalid_answer' }
  }
}

/**
 * The registries' `isRegistered` answers, in the order of `checks`, in JSON-RPC batches; a batch that
 * fails (one revert fails it whole) is asked again call by call, so a revert answers only its own call.
 */
export async function checkRegistries(rpc: AttributionRpc, checks: readonly RegistryCheck[]): Promise<RegistryAnswer[]> {
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
  return answers.map(registryAnswer)
}
