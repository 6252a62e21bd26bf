import type { Queryable } from './client.js'

/** Keeps the chain's probed profile in `chain_state`, where the API (another process) reads it. */
export async function saveChainProfile(
  db: Queryable,
  chainId: number,
  profile: { blockTimeMs: number; preconfirmations: { enabled: boolean; source: 'probe' | 'config' } },
): Promise<void> {
  await db.query(
    `INSERT INTO chain_state (chain_id, block_time_ms, preconfirmations, preconfirmations_source) VALUES ($1, $2, $3, $4)
     ON CONFLICT (chain_id) DO UPDATE SET block_time_ms = EXCLUDED.block_time_ms, preconfirmations = EXCLUDED.preconfirmations,
       preconfirmations_source = EXCLUDED.preconfirmations_source, updated_at = now()`,
    [chainId, profile.blockTimeMs, profile.preconfirmations.enabled, profile.preconfirmations.source],
  )
}

/** Names the chain in `chain_state` (for `analytics.chains`, the status and the dashboard). */
export async function saveChainName(db: Queryable, chainId: number, name: string | null): Promise<void> {
  await db.query(
    `INSERT INTO chain_state (chain_id, name) VALUES ($1, $2)
     ON CONFLICT (chain_id) DO UPDATE SET name = EXCLUDED.name, updated_at = now() WHERE chain_state.name IS DISTINCT FROM EXCLUDED.name`,
    [chainId, name],
  )
}
