import type { Logger } from '../logger.js'
import type { RpcClient } from '../rpc/index.js'
import type { Database } from '../store/index.js'
import type { BuilderCodeRegistrar } from './registration.js'

/** What the route plugins need, passed as their options. */
export type ApiContext = {
  db: Database
  /** The chain whose rows the API serves. */
  chainId: number
  logger: Logger
  /** The node, for wallet nonces and readiness; without it those fields are null. */
  rpc?: RpcClient
  registrar: BuilderCodeRegistrar
  /** The registration route's own limit per client (`REGISTRATION_RATE_LIMIT`), below the global one. */
  registrationRateLimit?: { max: number; timeWindow: number }
}
