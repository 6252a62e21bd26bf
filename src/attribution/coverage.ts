import type pg from 'pg'
import { getTransactionCountRequest, parseTransactionCount, type RpcClient } from '../rpc/index.js'
import { saveWalletNonces, walletsToRefresh } from '../store/wallets.js'

/** Wallets per JSON-RPC batch (two calls each). */
const WALLETS_PER_BATCH = 50
/** Most wallets whose nonces are read per minute: 240 node calls, on the indexing quota. */
export const NONCE_WALLETS_PER_MINUTE = 120
/** A wallet's nonces are read while it was registered or sent a transaction with its code within this. */
export const NONCE_ACTIVE_WITHIN_MS = 24 * 3_600_000

export type CoverageContext = {
  pool: pg.Pool
  chainId: number
  /** Should already retry transient errors (see `withRetry`). */
  batch: RpcClient['batch']
}

/**
 * Reads the nonces at `latest` and `pending` of at most `maxWallets` recently active registered wallets,
 * least recently checked first, and stores them, so `analytics.wallet_coverage` can set them beside the
 * wallet's attributed transactions.
 */
export async function refreshWalletNonces({ pool, chainId, batch }: CoverageContext, maxWallets: number): Promise<number> {
  const wallets = await walletsToRefresh(pool, chainId, { activeWithinMs: NONCE_ACTIVE_WITHIN_MS, limit: maxWallets })
  for (let i = 0; i < wallets.length; i += WALLETS_PER_BATCH) {
    const slice = wallets.slice(i, i + WALLETS_PER_BATCH)
    const answers = await batch(
      slice.flatMap((wallet) => [getTransactionCountRequest(wallet, 'latest'), getTransactionCountRequest(wallet, 'pending')]),
    )
    await saveWalletNonces(
      pool,
      chainId,
      slice.map((walletAddress, j) => ({
        walletAddress,
        latestNonce: parseTransactionCount(answers[2 * j]),
        pendingNonce: parseTransactionCount(answers[2 * j + 1]),
      })),
    )
  }
  return wallets.length
}
