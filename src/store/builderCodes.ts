import type { Queryable } from './client.js'

type BuilderCodeSource = 'local' | 'upstream'
export type BuilderCodeRecord = { builderCode: string; walletAddress: string; source: BuilderCodeSource; createdAt: Date }

/**
 * Inserts the pair unless the wallet or the code is already taken (both are unique per chain).
 * @returns the new record, or `null` when either was taken.
 */
export async function insertBuilderCode(
  db: Queryable,
  {
    chainId,
    builderCode,
    walletAddress,
    source,
  }: { chainId: number; builderCode: string; walletAddress: string; source: BuilderCodeSource },
): Promise<BuilderCodeRecord | null> {
  const { rows } = await db.query<BuilderCodeRecord>(
    `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING
     RETURNING builder_code AS "builderCode", wallet_address AS "walletAddress", source, created_at AS "createdAt"`,
    [chainId, builderCode, walletAddress, source],
  )
  return rows[0] ?? null
}
