import { LRUCache } from 'lru-cache'
import type { Queryable } from '../store/client.js'
import { indexedRegistryState } from '../store/registry.js'
import type { AttributionRpc } from './nodeReads.js'
import { checkRegistries, type RegistryAnswer, type RegistryCheck } from './registryCheck.js'

/** Node answers of registries that are not indexed, kept this long (at most this many). */
const CACHE_TTL_MS = 60_000
const CACHE_MAX = 10_000
/** Another chain's node is asked once, within this long: its outage must not hold up the asking chain. */
const OTHER_CHAIN_TIMEOUT_MS = 2_000
/** After another chain's node failed to answer, its registries are not asked again for this long (answered unknown). */
const OTHER_CHAIN_REST_MS = 10_000

/** A chain whose registries can be asked: its node and where its rows are stored. */
export type RegistryChain = {
  chainId: number
  /** The node as the chain's own attribution reads it (retrying transient errors). */
  rpc: AttributionRpc
  /** The node asked once per call: what another chain's questions go through. */
  node: AttributionRpc
  /** The database holding the chain's rows (its indexed registry is read there). */
  pool: Queryable
  /** The chain's BuilderCodes registry, indexed through a filter of its own from `startBlock`. */
  builderCodes?: { address: string; filterId: string; startBlock: number } | undefined
}

/** A schema-1 suffix's code, to check against the registry it names. */
export type RegistryQuestion = {
  /** Decimal, as the suffix gives it (up to 32 bytes). */
  chainId: string
  registry: string
  code: string
  /** The asking transaction's block time (seconds): an indexed registry says "not registered" only once stored through a later block. */
  asOf: number
  /** Asked again after a reorg of the registry's chain: never answered from the cache. */
  fresh?: boolean
}

/** The key of a question's answer in what `resolve` returns. */
export const questionKey = ({ chainId, registry, code }: Pick<RegistryQuestion, 'chainId' | 'registry' | 'code'>) =>
  `${chainId}:${registry.toLowerCase()}:${code}`

const UNKNOWN_CHAIN: RegistryAnswer = { registered: null, reason: 'chain_not_configured' }
const NODE_ERROR: RegistryAnswer = { registered: null, reason: 'node_error' }

/** Whether `chain` indexes the registry at `address` itself (its BuilderCodes registry). */
const indexesRegistry = (chain: RegistryChain, address: string) => chain.builderCodes?.address.toLowerCase() === address.toLowerCase()

/**
 * Answers schema-1 registry questions for every chain it serves (the chains this deployment indexes):
 * from the registry's indexed events where the chain indexes that very registry (BuilderCodes) and has
 * stored it far enough (a code it holds is registered; one it lacks is not, once its events are stored
 * through a block later than the asking transaction), else with `isRegistered` on that chain's node
 * (another chain's node asked once under a short timeout; answers of registries not indexed cached for a
 * minute). A registry on a chain it does not serve is unknown (`chain_not_configured`), never false.
 * Answers from indexed state are not cached: a reorg of the registry's chain changes them at once, and
 * the rows verified against a registration a reorg removed are marked in the database for asking again.
 */
export function createRegistryResolver() {
  const chains = new Map<number, RegistryChain>()
  const cache = new LRUCache<string, boolean>({ max: CACHE_MAX, ttl: CACHE_TTL_MS })
  const restingUntil = new Map<number, number>()

  /** The served chain a suffix's decimal chain id names, if any. */
  const chainOf = (chainId: string): RegistryChain | undefined => {
    const id = Number(chainId)
    return Number.isSafeInteger(id) && String(id) === chainId ? chains.get(id) : undefined
  }

  /** Answers from the chain's indexed BuilderCodes registry; the questions it cannot settle are left out. */
  async function fromIndex(chain: RegistryChain, questions: readonly RegistryQuestion[]): Promise<Map<string, RegistryAnswer>> {
    const answers = new Map<string, RegistryAnswer>()
    const indexed = chain.builderCodes
    const asked = questions.filter((q) => indexesRegistry(chain, q.registry))
    if (!indexed || asked.length === 0) return answers
    const state = await indexedRegistryState(chain.pool, {
      chainId: chain.chainId,
      address: indexed.address,
      filterId: indexed.filterId,
      startBlock: indexed.startBlock,
      codes: asked.map((q) => q.code),
    })
    if (!state) return answers
    for (const q of asked) {
      if (state.registered.has(q.code)) answers.set(questionKey(q), { registered: true, reason: null })
      else if (state.indexedThrough !== null && state.indexedThrough > q.asOf)
        answers.set(questionKey(q), { registered: false, reason: null })
    }
    return answers
  }

  /** `isRegistered` on the chain's node; `askingChainId`'s own node retries, another chain's is asked once. */
  async function fromNode(askingChainId: number, chain: RegistryChain, questions: readonly RegistryQuestion[]): Promise<RegistryAnswer[]> {
    const own = chain.chainId === askingChainId
    if (!own && (restingUntil.get(chain.chainId) ?? 0) > Date.now()) return questions.map(() => NODE_ERROR)
    const rpc: AttributionRpc = own
      ? chain.rpc
      : {
          request: (method, params, options) => chain.node.request(method, params, { timeoutMs: OTHER_CHAIN_TIMEOUT_MS, ...options }),
          batch: (calls, options) => chain.node.batch(calls, { timeoutMs: OTHER_CHAIN_TIMEOUT_MS, ...options }),
        }
    const answers = await checkRegistries(
      rpc,
      questions.map((q): RegistryCheck => ({ registry: q.registry, code: q.code })),
    )
    if (!own && answers.some((answer) => answer.reason === 'node_error')) restingUntil.set(chain.chainId, Date.now() + OTHER_CHAIN_REST_MS)
    return answers
  }

  return {
    /** Lets `chain`'s registries be asked (its own attribution's and every other served chain's). */
    serve(chain: RegistryChain): void {
      chains.set(chain.chainId, chain)
    },

    /** The chains served: rows naming a registry on one of them are worth asking again. */
    chainIds: (): number[] => [...chains.keys()],

    /**
     * The answers to `questions` asked by attribution of `askingChainId`, by `questionKey`. A question
     * asked several times is asked once, as of the latest `asOf` among them.
     */
    async resolve(askingChainId: number, questions: readonly RegistryQuestion[]): Promise<Map<string, RegistryAnswer>> {
      const unique = new Map<string, RegistryQuestion>()
      for (const q of questions) {
        const key = questionKey(q)
        const seen = unique.get(key)
        unique.set(key, seen ? { ...seen, asOf: Math.max(seen.asOf, q.asOf), fresh: seen.fresh || q.fresh } : q)
      }
      const byChain = Map.groupBy(unique.values(), (q) => q.chainId)
      const answers = new Map<string, RegistryAnswer>()
      await Promise.all(
        [...byChain].map(async ([chainId, asked]) => {
          const chain = chainOf(chainId)
          if (!chain) {
            for (const q of asked) answers.set(questionKey(q), UNKNOWN_CHAIN)
            return
          }
          const indexed = await fromIndex(chain, asked)
          for (const [key, answer] of indexed) answers.set(key, answer)
          const cached = (q: RegistryQuestion) => (q.fresh || indexesRegistry(chain, q.registry) ? undefined : cache.get(questionKey(q)))
          const ask: RegistryQuestion[] = []
          for (const q of asked) {
            if (indexed.has(questionKey(q))) continue
            const known = cached(q)
            if (known === undefined) ask.push(q)
            else answers.set(questionKey(q), { registered: known, reason: null })
          }
          if (ask.length === 0) return
          const fromNodes = await fromNode(askingChainId, chain, ask)
          ask.forEach((q, i) => {
            const answer = fromNodes[i]!
            answers.set(questionKey(q), answer)
            if (answer.registered !== null && !indexesRegistry(chain, q.registry)) cache.set(questionKey(q), answer.registered)
          })
        }),
      )
      return answers
    },
  }
}

export type RegistryResolver = ReturnType<typeof createRegistryResolver>
