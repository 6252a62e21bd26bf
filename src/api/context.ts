import type { Logger } from '../internal/logger.js'
import type { RpcClient } from '../rpc/index.js'
import type { Database, ReplicaStatus } from '../store/index.js'
import type { BuilderCodeRegistrar } from './registration.js'

/** What the route plugins need, passed as their options. */
export type ApiContext = {
  /** Where reads go: the read replica while it is current (`DATABASE_READ_URL`), else the primary. */
  db: Database
  /** The primary, for reads that must see writes just made (a registration read right after it). */
  primaryDb: Database
  /** The read replica's lag and whether it serves; absent without `DATABASE_READ_URL`. */
  replica?: () => ReplicaStatus
  /** The chain whose rows the API serves. */
  chainId: number
  logger: Logger
  /** The node, for wallet nonces and readiness; without it those fields are null. */
  rpc?: RpcClient
  registrar: BuilderCodeRegistrar
  /** The registration route's own limit per client (`REGISTRATION_RATE_LIMIT`), below the global one. */
  registrationRateLimit?: { max: number; timeWindow: number }
}
