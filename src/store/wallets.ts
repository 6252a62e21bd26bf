import type { Queryable } from './client.js'

export type WalletNonces = { walletAddress: string; latestNonce: number; pendingNonce: number }

/**
 * Registered wallets active recently (registered, or a sender of attributions with their own code,
 * within `activeWithinMs`), least recently checked first, at most `limit`: a public registration costs
 * node calls only while its wallet is in use, and a refresh never more than the budget.
 */
export async function walletsToRefresh(
  db: Queryable,
  chainId: number,
  { activeWithinMs, limit }: { activeWithinMs: number; limit: number },
): Promise<string[]> {
  const { rows } = await db.query<{ wallet_address: string }>(
    `SELECT bc.wallet_address FROM builder_codes bc
     LEFT JOIN wallet_nonces wn ON wn.chain_id = bc.chain_id AND wn.wallet_address = bc.wallet_address
     WHERE bc.chain_id = $1
       AND (bc.created_at >= now() - make_interval(secs => $2 / 1000.0)
         OR EXISTS (SELECT 1 FROM builder_code_senders s WHERE s.chain_id = bc.chain_id AND s.builder_code = bc.builder_code
           AND s.sender = bc.wallet_address AND s.last_seen >= now() - make_interval(secs => $2 / 1000.0)))
     ORDER BY wn.checked_at ASC NULLS FIRST, bc.wallet_address
     LIMIT $3`,
    [chainId, activeWithinMs, limit],
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
