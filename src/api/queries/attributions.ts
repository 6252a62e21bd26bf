import { and, asc, desc, eq, gte, inArray, lt, lte, sql, type SQL } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import { queryPrepared, type Database } from '../../store/index.js'
import { registryCodeQuery, toRegistryCodeRecord, type RegistryCodeRecord, type RegistryCodeRow } from './builderCodes.js'
import { attributions, builderCodeBuckets, builderCodeRoleBuckets, builderCodes, type CodeRole, type Status } from '../../store/schema.js'

/** Keyset of the attribution list, newest first: (block number, tx hash, user op hash, builder code, role ('' for none)), all descending. */
export type AttributionKey = readonly [blockNumber: number, txHash: string, userOpHash: string, builderCode: string, role: string]

export type ListAttributionsParameters = {
  chainId: number
  builderCode?: string
  /** The wallet that registered the code here. */
  walletAddress?: string
  fromBlock?: number
  toBlock?: number
  since?: Date
  until?: Date
  statuses?: readonly Status[]
  /** Schema 2's role of the code. */
  role?: CodeRole
  includeRemoved: boolean
  /** Rows strictly after this key in list order. */
  after?: AttributionKey
  limit: number
}

export type AttributionRow = {
  chainId: number
  txHash: string
  userOpHash: string
  blockNumber: number
  blockHash: string
  blockTimestamp: Date
  fromAddress: string
  toAddress: string | null
  sender: string
  builderCode: string
  /** '' for a code without a role (schemas 0 and 1). */
  role: string
  registryAddress: string | null
  registryChainId: string | null
  walletAddress: string | null
  schemaId: number
  codes: string[]
  gasUsed: number | null
  status: Status
  removed: boolean
}

const attributionColumns = {
  chainId: attributions.chainId,
  txHash: attributions.txHash,
  userOpHash: attributions.userOpHash,
  blockNumber: attributions.blockNumber,
  blockHash: attributions.blockHash,
  blockTimestamp: attributions.blockTimestamp,
  fromAddress: attributions.fromAddress,
  toAddress: attributions.toAddress,
  sender: attributions.sender,
  builderCode: attributions.builderCode,
  role: attributions.role,
  registryAddress: attributions.registryAddress,
  registryChainId: attributions.registryChainId,
  walletAddress: builderCodes.walletAddress,
  schemaId: attributions.schemaId,
  codes: attributions.codes,
  gasUsed: attributions.gasUsed,
  status: attributions.status,
  removed: attributions.removed,
}

/**
 * One page of attributions, newest block first, plus whether more follow. The keyset is unique and
 * rows are compared to the last one seen, so rows inserted while a client pages never shift a page:
 * nothing is skipped or repeated.
 */
export async function listAttributions(
  db: Database,
  { chainId, builderCode, walletAddress, fromBlock, toBlock, since, until, statuses, role, includeRemoved, after, limit }: ListAttributionsParameters,
): Promise<{ rows: AttributionRow[]; more: boolean }> {
  const where: SQL[] = [eq(attributions.chainId, chainId)]
  if (builderCode !== undefined) where.push(eq(attributions.builderCode, builderCode))
  if (walletAddress !== undefined)
    where.push(
      sql`${attributions.builderCode} = (select ${builderCodes.builderCode} from ${builderCodes} where ${builderCodes.chainId} = ${chainId} and ${builderCodes.walletAddress} = ${walletAddress})`,
    )
  if (fromBlock !== undefined) where.push(gte(attributions.blockNumber, fromBlock))
  if (toBlock !== undefined) where.push(lte(attributions.blockNumber, toBlock))
  // Block time never decreases with block number, so a time bound is also a block bound the list's
  // index can seek to (the first row at or after `since`, the last before `until`; ties to the lower
  // block at `since`, the higher at `until`); the time condition itself still decides.
  const hinted = alias(attributions, 'hint')
  const boundary = (condition: SQL, order: SQL[]) =>
    db.select({ blockNumber: hinted.blockNumber }).from(hinted).where(and(eq(hinted.chainId, chainId), condition)).orderBy(...order).limit(1)
  if (since !== undefined)
    where.push(
      gte(attributions.blockTimestamp, since),
      sql`${attributions.blockNumber} >= (${boundary(gte(hinted.blockTimestamp, since), [asc(hinted.blockTimestamp), asc(hinted.blockNumber)])})`,
    )
  if (until !== undefined)
    where.push(
      lt(attributions.blockTimestamp, until),
      sql`${attributions.blockNumber} <= (${boundary(lt(hinted.blockTimestamp, until), [desc(hinted.blockTimestamp), desc(hinted.blockNumber)])})`,
    )
  if (statuses !== undefined) where.push(inArray(attributions.status, [...statuses]))
  if (role !== undefined) where.push(eq(attributions.role, role))
  if (!includeRemoved) where.push(eq(attributions.removed, false))
  if (after !== undefined)
    where.push(
      sql`(${attributions.blockNumber}, ${attributions.txHash}, ${attributions.userOpHash}, ${attributions.builderCode}, ${attributions.role}) < (${after[0]}, ${after[1]}, ${after[2]}, ${after[3]}, ${after[4]})`,
    )

  const query = db
    .select(attributionColumns)
    .from(attributions)
    .leftJoin(builderCodes, and(eq(builderCodes.chainId, attributions.chainId), eq(builderCodes.builderCode, attributions.builderCode)))
    .where(and(...where))
    .orderBy(desc(attributions.blockNumber), desc(attributions.txHash), desc(attributions.userOpHash), desc(attributions.builderCode), desc(attributions.role))
    .limit(limit + 1)
  // Prepared, the list's text is parsed and planned once per connection and filter combination; its
  // rows arrive keyed by column name, as the driver parses each type.
  const rows = await queryPrepared<AttributionColumnRow>(db, query)
  return { rows: rows.slice(0, limit).map(toAttributionRow), more: rows.length > limit }
}

type AttributionColumnRow = {
  chain_id: number
  tx_hash: string
  user_op_hash: string
  block_number: number
  block_hash: string
  block_timestamp: Date
  from_address: string
  to_address: string | null
  sender: string
  builder_code: string
  role: string
  registry_address: string | null
  registry_chain_id: string | null
  wallet_address: string | null
  schema_id: number
  codes: string[]
  gas_used: number | null
  status: Status
  removed: boolean
}

function toAttributionRow(row: AttributionColumnRow): AttributionRow {
  return {
    chainId: row.chain_id,
    txHash: row.tx_hash,
    userOpHash: row.user_op_hash,
    blockNumber: row.block_number,
    blockHash: row.block_hash,
    blockTimestamp: row.block_timestamp,
    fromAddress: row.from_address,
    toAddress: row.to_address,
    sender: row.sender,
    builderCode: row.builder_code,
    role: row.role,
    registryAddress: row.registry_address,
    registryChainId: row.registry_chain_id,
    walletAddress: row.wallet_address,
    schemaId: row.schema_id,
    codes: row.codes,
    gasUsed: row.gas_used,
    status: row.status,
    removed: row.removed,
  }
}

export function attributionKey(row: Pick<AttributionRow, 'blockNumber' | 'txHash' | 'userOpHash' | 'builderCode' | 'role'>): AttributionKey {
  return [row.blockNumber, row.txHash, row.userOpHash, row.builderCode, row.role]
}

export type StatsInterval = 'hour' | 'day'

export const INTERVAL_MS: Record<StatsInterval, number> = { hour: 3_600_000, day: 86_400_000 }
/** `since`/`until` are bucket boundaries (see {@link roundToBuckets}). */
export type BuilderCodeStatsParameters = { chainId: number; builderCode: string; interval: StatsInterval; since: Date; until: Date }

export type StatsBucket = {
  start: Date
  attributions: number
  confirmed: number
  pending: number
  distinctSenders: number
  gasUsed: string
}

/** `[since, until)` widened to whole buckets: `since` down and `until` up to a UTC hour or day boundary. */
export function roundToBuckets(interval: StatsInterval, since: Date, until: Date): { since: Date; until: Date } {
  const step = INTERVAL_MS[interval]
  return { since: new Date(Math.floor(since.getTime() / step) * step), until: new Date(Math.ceil(until.getTime() / step) * step) }
}

type StatsRow = { start: number | null; attributions: number; pending: number; distinct_senders: number; gas_used: string }
type StatsTotals = { buckets: StatsBucket[]; total: Omit<StatsBucket, 'start'> }

/**
 * Per UTC hour or day of `[since, until)`: the code's attributions that are not removed (all, confirmed
 * or finalized, pending), distinct senders and gas used, plus a grand total, read from the rollup the
 * triggers on `attributions` keep (migration 0007) rather than from the rows themselves.
 * Every bucket of the range comes back, empty ones as zeros.
 */
export async function builderCodeStats(db: Database, parameters: BuilderCodeStatsParameters): Promise<StatsTotals> {
  const result = await db.execute<StatsRow>(statsQuery(parameters))
  return toStats(parameters, result.rows)
}

/** Rows of {@link builderCodeStats}: one per bucket with rows, and the total with `start` null. */
function statsQuery({ chainId, builderCode, interval, since, until }: BuilderCodeStatsParameters): SQL {
  return sql`
    select extract(epoch from ${builderCodeBuckets.start})::int8 * 1000 as start,
      coalesce(sum(${builderCodeBuckets.attributions}), 0)::int8 as attributions,
      coalesce(sum(${builderCodeBuckets.pending}), 0)::int8 as pending,
      coalesce(sum(${builderCodeBuckets.gasUsed}), 0)::text as gas_used,
      case when grouping(${builderCodeBuckets.start}) = 0 then sum(${builderCodeBuckets.senders})
        else (${distinctSenders(chainId, builderCode, interval, since, until)}) end::int8 as distinct_senders
    from ${builderCodeBuckets}
    where ${builderCodeBuckets.chainId} = ${chainId}
      and ${builderCodeBuckets.builderCode} = ${builderCode}
      and ${builderCodeBuckets.bucket} = ${interval}
      and ${builderCodeBuckets.start} >= ${since}
      and ${builderCodeBuckets.start} < ${until}
    group by grouping sets ((${builderCodeBuckets.start}), ())`
}

function toStats({ interval, since, until }: BuilderCodeStatsParameters, statsRows: readonly StatsRow[]): StatsTotals {
  const counts = (row: StatsRow) => ({
    attributions: row.attributions,
    confirmed: row.attributions - row.pending,
    pending: row.pending,
    distinctSenders: row.distinct_senders,
    gasUsed: row.gas_used,
  })
  // The empty grouping set always yields the total row, rows or not.
  const total = counts(statsRows.find((row) => row.start === null)!)
  const byStart = new Map(statsRows.filter((row) => row.start !== null).map((row) => [row.start!, counts(row)]))
  const empty = { attributions: 0, confirmed: 0, pending: 0, distinctSenders: 0, gasUsed: '0' }
  return {
    buckets: bucketStarts(interval, since, until).map((start) => ({ start: new Date(start), ...(byStart.get(start) ?? empty) })),
    total,
  }
}

export type BuilderCodeStatsReport = {
  stats: StatsTotals
  roles: RoleStats
  /** The wallet that registered the code here, or `null`. */
  walletAddress: string | null
  registry: RegistryCodeRecord | null
}

/**
 * What the stats route answers with, in one prepared statement and so one round trip: {@link builderCodeStats},
 * {@link builderCodeRoleStats}, the wallet that registered the code here and the code's registry record.
 */
export async function builderCodeStatsReport(db: Database, parameters: BuilderCodeStatsParameters): Promise<BuilderCodeStatsReport> {
  const { chainId, builderCode } = parameters
  const [row] = await queryPrepared<{ stats: StatsRow[]; roles: RoleRow[]; wallet_address: string | null; registry: RegistryCodeRow | null }>(db, sql`
    select (select json_agg(s) from (${statsQuery(parameters)}) s) as stats,
      (select coalesce(json_agg(r order by r.start nulls first, ${roleRank(sql`r.role`)}), '[]') from (${roleStatsQuery(parameters)}) r) as roles,
      (select ${builderCodes.walletAddress} from ${builderCodes}
        where ${builderCodes.chainId} = ${chainId} and ${builderCodes.builderCode} = ${builderCode}) as wallet_address,
      (select row_to_json(g) from (${registryCodeQuery(chainId, builderCode)}) g) as registry`)
  return {
    stats: toStats(parameters, row!.stats),
    roles: toRoleStats(row!.roles),
    walletAddress: row!.wallet_address,
    registry: row!.registry && toRegistryCodeRecord(row!.registry),
  }
}

/**
 * The code's distinct senders in `[since, until)`. When no sender's latest attribution is at or after
 * `until` (the usual case: the range ends now), they are the senders whose latest attribution is at or
 * after `since`: the rollup's `latest_senders` of those buckets, summed. A range that ends earlier
 * counts the attributions themselves.
 */
function distinctSenders(chainId: number, builderCode: string | SQL, interval: StatsInterval, since: Date, until: Date): SQL {
  const b = builderCodeBuckets
  return sql`select case when count(*) filter (where ${b.start} >= ${until} and ${b.latestSenders} <> 0) = 0
      then coalesce(sum(${b.latestSenders}), 0)
      else (select count(distinct ${attributions.sender}) from ${attributions}
        where ${attributions.chainId} = ${chainId} and ${attributions.builderCode} = ${builderCode}
          and ${attributions.blockTimestamp} >= ${since} and ${attributions.blockTimestamp} < ${until} and not ${attributions.removed})
    end
    from ${b} where ${b.chainId} = ${chainId} and ${b.builderCode} = ${builderCode} and ${b.bucket} = ${interval} and ${b.start} >= ${since}`
}

export type LeaderboardParameters = { chainId: number; since: Date; until: Date; limit: number }

export type LeaderboardRow = Omit<StatsBucket, 'start'> & { builderCode: string; walletAddress: string | null; roles: RoleCounts[] }

/**
 * The codes with the most attributions (not removed) in `[since, until)` (whole UTC hours, see
 * {@link roundToBuckets}), most first, with the same counts as {@link builderCodeStats} gives each
 * code over that range with `interval: 'hour'`, and its roles; one prepared statement.
 */
export async function leaderboard(db: Database, { chainId, since, until, limit }: LeaderboardParameters): Promise<LeaderboardRow[]> {
  const b = builderCodeBuckets
  const r = builderCodeRoleBuckets
  const rows = await queryPrepared<{
    builder_code: string
    wallet_address: string | null
    attributions: number
    pending: number
    gas_used: string
    distinct_senders: number
    roles: RoleRow[]
  }>(db, sql`
    select top.builder_code, top.attributions, totals.pending, totals.gas_used, ${builderCodes.walletAddress} as wallet_address,
      (${distinctSenders(chainId, sql`top.builder_code`, 'hour', since, until)})::int8 as distinct_senders,
      (select coalesce(json_agg(roles order by ${roleRank(sql`roles.role`)}), '[]') from (
        select null::int8 as start, ${r.role} as role, sum(${r.attributions})::int8 as attributions, sum(${r.pending})::int8 as pending
        from ${r}
        where ${r.chainId} = ${chainId} and ${r.builderCode} = top.builder_code and ${r.bucket} = 'hour'
          and ${r.start} >= ${since} and ${r.start} < ${until}
        group by ${r.role}
        having sum(${r.attributions}) <> 0) roles) as roles
    from (
      -- Every code's buckets of the range are summed, so only what ranks them; the rest only for the top
      -- codes. Grouped in byte order, which sorts much faster than a locale's and groups the same codes;
      -- ordered in the database's collation as everywhere else.
      select (${b.builderCode} collate "C") collate "default" as builder_code, sum(${b.attributions})::int8 as attributions
      from ${b}
      where ${b.chainId} = ${chainId} and ${b.bucket} = 'hour' and ${b.start} >= ${since} and ${b.start} < ${until}
      group by ${b.builderCode} collate "C"
      having sum(${b.attributions}) > 0
      order by attributions desc, builder_code
      limit ${limit}
    ) top
    cross join lateral (
      select sum(${b.pending})::int8 as pending, sum(${b.gasUsed})::text as gas_used
      from ${b}
      where ${b.chainId} = ${chainId} and ${b.builderCode} = top.builder_code and ${b.bucket} = 'hour' and ${b.start} >= ${since} and ${b.start} < ${until}
    ) totals
    left join ${builderCodes} on ${builderCodes.chainId} = ${chainId} and ${builderCodes.builderCode} = top.builder_code
    order by top.attributions desc, top.builder_code`)
  return rows.map((row) => ({
    builderCode: row.builder_code,
    walletAddress: row.wallet_address,
    attributions: row.attributions,
    confirmed: row.attributions - row.pending,
    pending: row.pending,
    distinctSenders: row.distinct_senders,
    gasUsed: row.gas_used,
    roles: toRoleStats(row.roles).total,
  }))
}

/** Start times (epoch ms) of the UTC hours or days that overlap `[since, until)`; UTC days are all 24 h. */
export function bucketStarts(interval: StatsInterval, since: Date, until: Date): number[] {
  const step = INTERVAL_MS[interval]
  const starts: number[] = []
  for (let start = Math.floor(since.getTime() / step) * step; start < until.getTime(); start += step) starts.push(start)
  return starts
}

/** One role's share of a code's attributions: `role` null for codes without one (schemas 0 and 1). */
export type RoleCounts = { role: CodeRole | null; attributions: number; confirmed: number; pending: number }

type RoleRow = { start: number | null; role: string; attributions: number; pending: number }
type RoleStats = { buckets: Map<number, RoleCounts[]>; total: RoleCounts[] }

/** Roles in the order answers list them: app, wallet, service, none. */
const roleRank = (role: SQL) => sql`array_position(array['app', 'wallet', 'service', '']::text[], ${role})`

/**
 * Per UTC hour or day of `[since, until)` and in total: the code's attributions that are not removed,
 * per role it held, read from the rollup the triggers on `attributions` keep (migration 0012).
 * Only roles with rows appear, in the order app, wallet, service, none.
 */
export async function builderCodeRoleStats(db: Database, parameters: BuilderCodeStatsParameters): Promise<RoleStats> {
  const result = await db.execute<RoleRow>(sql`${roleStatsQuery(parameters)} order by start nulls first, ${roleRank(sql`role`)}`)
  return toRoleStats(result.rows)
}

/** Rows of {@link builderCodeRoleStats}, unordered: one per bucket and role with rows, and per role with `start` null. */
function roleStatsQuery({ chainId, builderCode, interval, since, until }: BuilderCodeStatsParameters): SQL {
  const b = builderCodeRoleBuckets
  return sql`
    select extract(epoch from ${b.start})::int8 * 1000 as start, ${b.role} as role,
      sum(${b.attributions})::int8 as attributions, sum(${b.pending})::int8 as pending
    from ${b}
    where ${b.chainId} = ${chainId} and ${b.builderCode} = ${builderCode} and ${b.bucket} = ${interval}
      and ${b.start} >= ${since} and ${b.start} < ${until}
    group by grouping sets ((${b.start}, ${b.role}), (${b.role}))
    having sum(${b.attributions}) <> 0`
}

/** {@link roleStatsQuery}'s rows, in answer order (by start, total first, then by role), grouped by bucket. */
function toRoleStats(rows: readonly RoleRow[]): RoleStats {
  const buckets = new Map<number, RoleCounts[]>()
  const total: RoleCounts[] = []
  for (const row of rows) {
    const counts: RoleCounts = {
      role: row.role === '' ? null : (row.role as CodeRole),
      attributions: row.attributions,
      confirmed: row.attributions - row.pending,
      pending: row.pending,
    }
    if (row.start === null) total.push(counts)
    else buckets.set(row.start, [...(buckets.get(row.start) ?? []), counts])
  }
  return { buckets, total }
}
