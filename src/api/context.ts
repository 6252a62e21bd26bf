import type { Logger } from '../internal/logger.js'
import type { EndpointState, RpcClient } from '../rpc/index.js'
import type { Database, ReplicaStatus } from '../store/index.js'
import { ApiError } from './errors.js'
import type { BuilderCodeRegistrar } from './registration.js'

/** What the route plugins need, passed as their options. */
export type ApiContext = {
  /** Where reads go: the read replica while it is current (`DATABASE_READ_URL`), else the primary. */
  db: Database
  /** The primary, for reads that must see writes just made (a registration read right after it). */
  primaryDb: Database
  /** The read replica's lag and whether it serves; absent without `DATABASE_READ_URL`. */
  replica?: () => ReplicaStatus
  /** The chain whose rows the API serves when a request names none. */
  chainId: number
  /** Every chain the API serves (`chainId=` on a request picks one), `chainId` first among them or elsewhere. */
  chainIds: readonly number[]
  logger: Logger
  /** The node, for wallet nonces and readiness; without it those fields are null. */
  rpc?: RpcClient
  /** A chain's RPC endpoints as this process's node client sees them; null where it has one endpoint or runs no client of that chain. */
  endpointsOf?: (chainId: number) => EndpointState[] | null
  registrar: BuilderCodeRegistrar
  /** The registration route's own limit per client (`REGISTRATION_RATE_LIMIT`), below the global one. */
  registrationRateLimit?: { max: number; timeWindow: number }
}

/**
 * The chains a stats read covers: `all` is every chain served, the default one first (a deployment of
 * one chain reads it as that chain, so its answers are the same either way); else as {@link requestedChain}.
 */
export function requestedChains(
  served: Pick<ApiContext, 'chainId' | 'chainIds'>,
  requested: number | 'all' | undefined,
): number | readonly number[] {
  if (requested !== 'all') return requestedChain(served, requested)
  const others = served.chainIds.filter((id) => id !== served.chainId)
  return others.length === 0 ? served.chainId : [served.chainId, ...others]
}

/**
 * The chain a request asks for with `chainId=`, else the default one. Where a value means something only
 * on one chain (a transaction hash) and several are served, `required` makes naming it mandatory.
 */
export function requestedChain(
  { chainId, chainIds }: Pick<ApiContext, 'chainId' | 'chainIds'>,
  requested: number | undefined,
  { required = false } = {},
): number {
  if (requested === undefined) {
    if (required && chainIds.length > 1)
      throw new ApiError(400, 'chain_id_required', `this deployment indexes chains ${chainIds.join(', ')}: name one with chainId`)
    return chainId
  }
  if (!chainIds.includes(requested))
    throw new ApiError(404, 'unknown_chain', `chain ${requested} is not indexed here; chains: ${chainIds.join(', ')}`)
  return requested
}
