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
