import { encodeAbiParameters, type Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import type { RpcCall, RpcRequestOptions } from '../rpc/client.js'
import type { AttributionRpc } from './nodeReads.js'
import { createRegistryResolver, questionKey, type RegistryQuestion } from './registryResolver.js'

const REGISTRY = '0x00000000000000000000000000000000000000aa'
const TRUE = encodeAbiParameters([{ type: 'bool' }], [true])

/** A node that answers every `eth_call` with `answer` (or fails with it), recording what it was asked. */
function fakeNode(answer: Hex | Error) {
  const asked: { calls: number; timeoutMs: number | undefined }[] = []
  const reply = async <T>(calls: number, options?: RpcRequestOptions): Promise<T> => {
    asked.push({ calls, timeoutMs: options?.timeoutMs })
    if (answer instanceof Error) throw answer
    return answer as T
  }
  const rpc: AttributionRpc = {
    request: <T>(_method: string, _params?: readonly unknown[], options?: RpcRequestOptions) => reply<T>(1, options),
    batch: async <T>(calls: readonly RpcCall[], options?: RpcRequestOptions) =>
      (await Promise.all(calls.map(() => reply<T>(calls.length, options)))) as T[],
  }
  return { rpc, asked }
}

const question = (chainId: string, code: string): RegistryQuestion => ({ chainId, registry: REGISTRY, code, asOf: 0 })
// Never read: none of these chains indexes the registry asked about.
const noDatabase = { query: () => Promise.reject(new Error('no database in this test')) } as never

describe('createRegistryResolver', () => {
  it('leaves a registry on a chain it does not serve unknown with the reason, whatever the spelling of the chain id', async () => {
    const resolver = createRegistryResolver()
    const own = fakeNode(TRUE)
    resolver.serve({ chainId: 1, rpc: own.rpc, node: own.rpc, pool: noDatabase })
    const questions = ['8453', '01', String(2n ** 256n - 1n)].map((chainId) => question(chainId, 'code'))
    const answers = await resolver.resolve(1, questions)
    for (const q of questions) expect(answers.get(questionKey(q))).toEqual({ registered: null, reason: 'chain_not_configured' })
    expect(own.asked).toEqual([])
  })

  it("asks another chain's node once under a short timeout, rests it after a failure, and keeps definite answers", async () => {
    const resolver = createRegistryResolver()
    const down = fakeNode(new Error('connect ECONNREFUSED'))
    const up = fakeNode(TRUE)
    resolver.serve({ chainId: 2, rpc: down.rpc, node: down.rpc, pool: noDatabase })
    resolver.serve({ chainId: 3, rpc: up.rpc, node: up.rpc, pool: noDatabase })

    const failed = await resolver.resolve(1, [question('2', 'code')])
    expect(failed.get(questionKey(question('2', 'code')))).toEqual({ registered: null, reason: 'node_error' })
    // The batch, then the call alone; both bounded.
    expect(down.asked.map((a) => a.timeoutMs)).toEqual([2_000, 2_000])
    // Resting: answered unknown without asking.
    await resolver.resolve(1, [question('2', 'other')])
    expect(down.asked).toHaveLength(2)

    const answered = await resolver.resolve(1, [question('3', 'code')])
    expect(answered.get(questionKey(question('3', 'code')))).toEqual({ registered: true, reason: null })
    await resolver.resolve(1, [question('3', 'code')])
    expect(up.asked).toHaveLength(1)
    // Asked again after a reorg: never from the cache.
    await resolver.resolve(1, [{ ...question('3', 'code'), fresh: true }])
    expect(up.asked).toHaveLength(2)
  })

  it("asks the asking chain's own registries through its retrying client, without a timeout of its own", async () => {
    const resolver = createRegistryResolver()
    const retrying = fakeNode(TRUE)
    const once = fakeNode(TRUE)
    resolver.serve({ chainId: 1, rpc: retrying.rpc, node: once.rpc, pool: noDatabase })
    await resolver.resolve(1, [question('1', 'code')])
    expect(retrying.asked).toEqual([{ calls: 1, timeoutMs: undefined }])
    expect(once.asked).toEqual([])
  })
})
