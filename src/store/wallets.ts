import type pg from 'pg'

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>

export type WalletNonces = { walletAddress: string; latestNonce: number; pendingNonce: number }

/** The wallets registered on this chain, in a stable order. */
export async function registeredWallets(db: Queryable, chainId: number): Promise<string[]> {
  const { rows } = await db.query<{ wallet_address: string }>(
    `SELECT wallet_address FROM builder_codes WHERE chain_id = $1 ORDER BY wallet_address`,
    [chainId],
  )
  return rows.map((row) => row.wallet_address)
}

/** Records the nonces the node reported for registered wallets. */
export async function saveWalletNonces(db: Queryable, chainId: number, nonces: readonly WalletNonces[]): Promise<void> {
  if (nonces.length === 0) return
  await db.query(
    `INSERT INTO wallet_nonces (chain_id, wallet_address, latest_nonce, pending_nonce)
     SELECT $1, w, l, p FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(w, l, p)
     ON CONFLICT (chain_id, wallet_address) DO UPDATE SET latest_nonce = EXCLUDED.latest_nonce,
       pending_nonce = EXCLUDED.pending_nonce, checked_at = now()`,
    [chainId, nonces.map((n) => n.walletAddress), nonces.map((n) => n.latestNonce), nonces.map((n) => n.pendingNonce)],
  )
}
