import type { Queryable } from './client.js'

/** Records the BuilderCodes registry whose logs `public.registry_codes` decodes; idempotent. */
export async function saveBuilderCodeRegistry(
  db: Queryable,
  registry: { chainId: number; address: string; startBlock: number },
): Promise<void> {
  await db.query(
    `INSERT INTO builder_code_registries (chain_id, address, start_block) VALUES ($1, $2, $3)
     ON CONFLICT (chain_id, address) DO UPDATE SET start_block = LEAST(builder_code_registries.start_block, EXCLUDED.start_block)`,
    [registry.chainId, registry.address.toLowerCase(), registry.startBlock],
  )
}

/** What a chain's indexed BuilderCodes registry says of some codes. */
export type IndexedRegistryState = {
  /** Those of the codes the registry holds (from its logs that are not removed). */
  registered: Set<string>
  /**
   * The time (seconds since the epoch) of the last block its events are stored through without a gap
   * from its start block; null where that block's header is not stored (or nothing is).
   */
  indexedThrough: number | null
}

/**
 * The indexed state of the BuilderCodes registry `address` of `chainId` for `codes`, read through the
 * sync intervals of its filter (`filterId`, from `startBlock`); null where the chain records another
 * registry beside it (`registry_tokens` then mixes their codes).
 */
export async function indexedRegistryState(
  db: Queryable,
  {
    chainId,
    address,
    filterId,
    startBlock,
    codes,
  }: { chainId: number; address: string; filterId: string; startBlock: number; codes: readonly string[] },
): Promise<IndexedRegistryState | null> {
  const { rows } = await db.query<{ alone: boolean; registered: string[]; through: number | null }>(
    `SELECT NOT EXISTS (SELECT 1 FROM builder_code_registries WHERE chain_id = $1 AND address <> $2) AS alone,
       ARRAY(SELECT builder_code FROM registry_tokens WHERE chain_id = $1 AND builder_code = ANY($5::text[])) AS registered,
       (SELECT extract(epoch FROM b.timestamp)::float8 FROM sync_intervals i
          JOIN blocks b ON b.chain_id = i.chain_id AND b.number = i.to_block AND NOT b.removed
        WHERE i.chain_id = $1 AND i.filter_id = $3 AND i.from_block <= $4 AND i.to_block >= $4
        ORDER BY b.timestamp LIMIT 1) AS through`,
    [chainId, address.toLowerCase(), filterId, startBlock, codes],
  )
  const row = rows[0]!
  return row.alone ? { registered: new Set(row.registered), indexedThrough: row.through } : null
}
