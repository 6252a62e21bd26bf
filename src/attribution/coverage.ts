import type pg from 'pg'
import type { RpcCall } from '../rpc/index.js'
import { registeredWallets, saveWalletNonces } from '../store/wallets.js'

/** Wallets per JSON-RPC batch (two calls each). */
const WALLETS_PER_BATCH = 50

export type CoverageContext = {
  pool: pg.Pool
  chainId: number
  /** Should already retry transient errors (see `withRetry`). */
  batch: <T>(calls: RpcCall[]) => Promise<T[]>
}

/**
 * Reads every registered wallet's nonce at `latest` and `pending` from the node and stores them, so
 * `analytics.wallet_coverage` can set them beside the wallet's attributed transactions.
 */
export async function refreshWalletNonces({ pool, chainId, batch }: CoverageContext): Promise<number> {
  const wallets = await registeredWallets(pool, chainId)
  for (let i = 0; i < wallets.length; i += WALLETS_PER_BATCH) {
    const slice = wallets.slice(i, i + WALLETS_PER_BATCH)
    const answers = await batch<string>(
      slice.flatMap((wallet) => [
        { method: 'eth_getTransactionCount', params: [wallet, 'latest'] },
        { method: 'eth_getTransactionCount', params: [wallet, 'pending'] },
      ]),
    )
    await saveWalletNonces(
      pool,
      chainId,
      slice.map((walletAddress, j) => ({ walletAddress, latestNonce: Number(answers[2 * j]), pendingNonce: Number(answers[2 * j + 1]) })),
    )
  }
  return wallets.length
}
