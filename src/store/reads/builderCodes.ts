import { and, eq, sql, type Placeholder, type SQL } from 'drizzle-orm'
import type { BuilderCodeRecord } from '../builderCodes.js'
import { queryPrepared, type Database } from '../client.js'
import { attributions, builderCodes } from '../schema.js'

const recordColumns = {
  builderCode: builderCodes.builderCode,
  walletAddress: builderCodes.walletAddress,
  source: builderCodes.source,
  createdAt: builderCodes.createdAt,
}

export async function findBuilderCodeByWallet(db: Database, chainId: number, walletAddress: string): Promise<BuilderCodeRecord | null> {
  const [row] = await db
    .select(recordColumns)
    .from(builderCodes)
    .where(and(eq(builderCodes.chainId, chainId), eq(builderCodes.walletAddress, walletAddress)))
  return row ?? null
}

/** The wallet's own attributed transactions and user operations (sender = wallet, its code), not removed. */
export async function countWalletAttributions(
  db: Database,
  { chainId, walletAddress, builderCode }: { chainId: number; walletAddress: string; builderCode: string },
): Promise<{ confirmed: number; pending: number }> {
  const [row] = await db
    .select({
      confirmed: sql<number>`count(*) filter (where ${attributions.status} <> 'pending')::int8`,
      pending: sql<number>`count(*) filter (where ${attributions.status} = 'pending')::int8`,
    })
    .from(attributions)
    .where(
      and(
        eq(attributions.chainId, chainId),
        eq(attributions.sender, walletAddress),
        eq(attributions.builderCode, builderCode),
        eq(attributions.removed, false),
      ),
    )
  return { confirmed: row?.confirmed ?? 0, pending: row?.pending ?? 0 }
}

/** What the BuilderCodes registry's logs that are not removed say about a code (`public.registry_codes`). */
export type RegistryCodeRecord = {
  tokenId: string
  owner: string | null
  payoutAddress: string | null
  registeredBlock: number
  registeredAt: Date
}

/** A row of {@link registryCodeQuery}; `registered_at` is a string when it comes through JSON. */
export type RegistryCodeRow = {
  token_id: string
  owner: string | null
  payout_address: string | null
  registered_block: string | number
  registered_at: Date | string
}

/** The code's row of `public.registry_codes` (columns of {@link RegistryCodeRow}), or no row. */
export function registryCodeQuery(chainId: number | Placeholder | SQL, builderCode: string | Placeholder): SQL {
  return sql`select token_id::text, owner, payout_address, registered_block, registered_at
    from public.registry_codes where chain_id = ${chainId} and builder_code = ${builderCode}
    order by registered_block limit 1`
}

export function toRegistryCodeRecord(row: RegistryCodeRow): RegistryCodeRecord {
  return {
    tokenId: row.token_id,
    owner: row.owner,
    payoutAddress: row.payout_address,
    registeredBlock: Number(row.registered_block),
    registeredAt: new Date(row.registered_at),
  }
}

/**
 * The code as issued here and as the registry knows it, in one statement prepared once per connection:
 * as two statements planned on every request, the route cost twice the round trips and the planning.
 */
const BUILDER_CODE_SOURCES = sql`select c.wallet_address, c.source, c.created_at,
    (select row_to_json(g) from (${registryCodeQuery(sql.placeholder('chainId'), sql.placeholder('builderCode'))}) g) as registry
  from (values (1)) one
  left join builder_codes c on c.chain_id = ${sql.placeholder('chainId')} and c.builder_code = ${sql.placeholder('builderCode')}`

/** Where a code is known from and what the registry says of it, or `null` when no source knows it. */
export async function findBuilderCode(
  db: Database,
  chainId: number,
  builderCode: string,
): Promise<{
  source: 'registry' | 'api' | 'local'
  walletAddress: string | null
  createdAt: Date | null
  registry: RegistryCodeRecord | null
} | null> {
  // Always one row: the code as issued here, if it was, beside the registry's record, if any.
  const [row] = await queryPrepared<{
    wallet_address: string | null
    source: BuilderCodeRecord['source'] | null
    created_at: Date | null
    registry: RegistryCodeRow | null
  }>(db, 'builder-code-sources', () => BUILDER_CODE_SOURCES, { chainId, builderCode })
  const { source, wallet_address: walletAddress, created_at: createdAt, registry: registryRow } = row!
  const registry = registryRow && toRegistryCodeRecord(registryRow)
  if (!source && !registry) return null
  return {
    source: registry ? 'registry' : source === 'upstream' ? 'api' : 'local',
    walletAddress,
    createdAt,
    registry,
  }
}
