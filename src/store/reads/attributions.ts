import { and, asc, desc, eq, gte, lt, lte, sql, type Placeholder, type SQL, type SQLWrapper } from 'drizzle-orm'
import { alias, type AnyPgColumn } from 'drizzle-orm/pg-core'
import { queryPrepared, type Database } from '../client.js'
import { monthSpan, type MonthSpan } from '../partitions.js'
import { jsonIsoTime, jsonObject, jsonPlainString, jsonScalar, jsonValue } from './jsonText.js'
import { openRepairsColumn, pageOpenRepairs, pageValues, type OpenRepair } from './status.js'
import { registryCodeJson, toRegistryCodeRecord, type RegistryCodeRecord, type RegistryCodeRow } from './builderCodes.js'
import { attributions, builderCodeBuckets, builderCodeRoleBuckets, builderCodes, type CodeRole, type Status } from '../schema.js'

/**
 * An attribution's place in the list, less its block time: (block number, tx hash, user op hash, builder
 * code, role ('' for none)), all descending. After the block time it is the list's order; alone, the order
 * of a list by block range (see {@link listAttributions}).
 */
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
  /** The block time of `after`'s row (ISO 8601), which cursors carry since the list is ordered by it; without it `after` continues in block number order. */
  afterTime?: string
  limit: number
}

/**
 * An attribution of the list as `GET /v1/attributions` answers it, as JSON text written by PostgreSQL
 * ({@link ITEM_JSON}): the API sends it on as it is.
 */
export type AttributionItemJson = string

/** The fields of an item the list's cursor is made of (its order: block time, then {@link AttributionKey}). */
type ItemKeyFields = {
  blockTimestamp: string
  blockNumber: number
  txHash: string
  userOpHash: string | null
  builderCode: string
  role: string | null
}

/** Where a page ends: its last item's block time (ISO 8601, to the millisecond) and key. */
type PageEnd = { time: string; key: AttributionKey }

const attributionColumns = {
  chainId: attributions.chainId,
  txHash: attributions.txHash,
  userOpHash: attributions.userOpHash,
  blockNumber: attributions.blockNumber,
  blockHash: attributions.blockHash,
  blockTimestamp: attributions.blockTimestamp,
  blockTimestampMs: attributions.blockTimestampMs,
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

/** A column of the page (a part's output, named as in the table). */
const pageColumn = (column: AnyPgColumn) => sql`${sql.identifier('page')}.${sql.identifier(column.name)}`

/**
 * An item of the page as the API writes it (`attributionItem` of `src/api/routes/attributions.ts`, in its
 * field order): '' for no user operation or no role as null, the registry only when the suffix names one.
 * Codes are decoded only if they match `ATTRIBUTION_CODE_PATTERN`, roles and statuses are the schema's
 * words and a registry's chain a number, so those are written as they are; hashes and addresses, which
 * come from the node, are escaped.
 */
const ITEM_JSON = jsonObject({
  chainId: jsonScalar(pageColumn(attributions.chainId)),
  txHash: jsonValue(pageColumn(attributions.txHash)),
  userOpHash: jsonValue(sql`nullif(${pageColumn(attributions.userOpHash)}, '')`),
  blockNumber: jsonScalar(pageColumn(attributions.blockNumber)),
  blockHash: jsonValue(pageColumn(attributions.blockHash)),
  blockTimestamp: jsonIsoTime(pageColumn(attributions.blockTimestamp)),
  blockTimestampMs: jsonScalar(pageColumn(attributions.blockTimestampMs)),
  from: jsonValue(pageColumn(attributions.fromAddress)),
  to: jsonValue(pageColumn(attributions.toAddress)),
  sender: jsonValue(pageColumn(attributions.sender)),
  builderCode: jsonPlainString(pageColumn(attributions.builderCode)),
  role: jsonPlainString(sql`nullif(${pageColumn(attributions.role)}, '')`),
  registry: sql<string>`case when ${pageColumn(attributions.registryAddress)} is null or ${pageColumn(attributions.registryChainId)} is null then 'null'
    else ${jsonObject({ address: jsonValue(pageColumn(attributions.registryAddress)), chainId: jsonPlainString(sql`${pageColumn(attributions.registryChainId)}::text`) })} end`,
  walletAddress: jsonValue(pageColumn(builderCodes.walletAddress)),
  schemaId: jsonScalar(pageColumn(attributions.schemaId)),
  codes: jsonValue(pageColumn(attributions.codes)),
  gasUsed: jsonScalar(pageColumn(attributions.gasUsed)),
  status: jsonPlainString(pageColumn(attributions.status)),
  removed: jsonScalar(pageColumn(attributions.removed)),
})

/**
 * How long a process trusts the month partitions it read for the list's time order. A month attached
 * meanwhile is still read (by the part of the list outside the span, see {@link timeOrderedQuery}), only
 * merged rather than in order, until the span is read again.
 */
const MONTH_SPAN_TTL_MS = 60_000
const monthSpans = new WeakMap<Database, { span: Promise<MonthSpan | null>; readAt: number }>()

function attributionMonths(db: Database): Promise<MonthSpan | null> {
  const known = monthSpans.get(db)
  if (known && Date.now() - known.readAt < MONTH_SPAN_TTL_MS) return known.span
  const span = monthSpan(db.$client, 'attributions')
  monthSpans.set(db, { span, readAt: Date.now() })
  span.catch(() => monthSpans.delete(db))
  return span
}

/**
 * One page of attributions, newest first, each as the JSON the API sends ({@link ITEM_JSON}), plus where
 * the page ends, whether more follow and the open repairs over its block range (read by the page's own
 * statement; alone only when the page is empty). Newest is by block time,
 * then block number, tx hash, user op hash, code and role, all descending: with the month partitions
 * read newest first, a page reads the months that fill it and no other. A block range (`fromBlock`,
 * `toBlock`), and a cursor without a time (written before the list was ordered by it), read in block
 * number order instead, through the block indexes; both orders agree wherever block time grows with
 * block number, so everywhere but rows of orphaned forks. The keyset is unique and rows are compared to
 * the last one seen, so rows inserted while a client pages never shift a page: nothing is skipped or
 * repeated. The query is built once per combination of filters, its values filled in per request.
 */
export async function listAttributions(
  db: Database,
  parameters: ListAttributionsParameters,
): Promise<{ items: AttributionItemJson[]; end: PageEnd | undefined; more: boolean; openRepairs: OpenRepair[] }> {
  const { chainId, builderCode, walletAddress, fromBlock, toBlock, since, until, statuses, role, includeRemoved, after, afterTime, limit } =
    parameters
  const given = { builderCode, walletAddress, fromBlock, toBlock, since, until, statuses, role, after }
  const byBlockNumber = fromBlock !== undefined || toBlock !== undefined || (after !== undefined && afterTime === undefined)
  const span = byBlockNumber ? null : await attributionMonths(db)
  const order = byBlockNumber ? 'block' : `time ${span?.from.toISOString()}–${span?.to.toISOString()}`
  const shape = `attributions:${Object.entries(given)
    .filter(([, value]) => value !== undefined)
    .map(([name]) => name)
    .join(',')}:${includeRemoved ? 'all' : 'live'}:${order}`
  const rows = await queryPrepared<{ item: AttributionItemJson; open_repairs: string | null }>(
    db,
    shape,
    () => (byBlockNumber ? blockOrderedQuery(db, parameters) : timeOrderedQuery(db, parameters, span)),
    {
      chainId,
      builderCode,
      walletAddress,
      fromBlock,
      toBlock,
      since: since?.toISOString(),
      until: until?.toISOString(),
      statuses,
      role,
      afterTime,
      ...pageValues(after, limit, fromBlock, toBlock),
    },
  )
  const openRepairs = await pageOpenRepairs(db, rows[0]?.open_repairs, chainId, fromBlock, toBlock)
  const items = rows.slice(0, limit).map((row) => row.item)
  return { items, end: pageEnd(items.at(-1)), more: rows.length > limit, openRepairs }
}

/** The block time and key of a page's last item, read back from its JSON (one item a page). */
function pageEnd(last: AttributionItemJson | undefined): PageEnd | undefined {
  if (last === undefined) return undefined
  const item = JSON.parse(last) as ItemKeyFields
  return { time: item.blockTimestamp, key: [item.blockNumber, item.txHash, item.userOpHash ?? '', item.builderCode, item.role ?? ''] }
}

const value = (name: string) => sql.placeholder(name)

/** The conditions of the filters both orders share: chain, code or wallet, status, role, removed. */
function sharedFilters({ builderCode, walletAddress, statuses, role, includeRemoved }: ListAttributionsParameters): SQL[] {
  const where: SQL[] = [eq(attributions.chainId, value('chainId'))]
  if (builderCode !== undefined) where.push(eq(attributions.builderCode, value('builderCode')))
  if (walletAddress !== undefined)
    where.push(
      sql`${attributions.builderCode} = (select ${builderCodes.builderCode} from ${builderCodes} where ${builderCodes.chainId} = ${value('chainId')} and ${builderCodes.walletAddress} = ${value('walletAddress')})`,
    )
  if (statuses !== undefined) where.push(sql`${attributions.status} = any(${value('statuses')}::text[])`)
  if (role !== undefined) where.push(eq(attributions.role, value('role')))
  if (!includeRemoved) where.push(sql`not ${attributions.removed}`)
  return where
}

/** A page of rows meeting `where` in `order`, with the registering wallet and the open repairs. */
function pageQuery(db: Database, where: SQL[], order: SQL[]) {
  return db
    .select({
      ...attributionColumns,
      openRepairs: openRepairsColumn(value('chainId'), value('from'), value('to')).as('open_repairs'),
    })
    .from(attributions)
    .leftJoin(builderCodes, and(eq(builderCodes.chainId, attributions.chainId), eq(builderCodes.builderCode, attributions.builderCode)))
    .where(and(...where))
    .orderBy(...order)
    .limit(value('limit'))
}

/** The columns of {@link AttributionKey}, and the values of a cursor's key cast to their types. */
const KEY_COLUMNS = [attributions.blockNumber, attributions.txHash, attributions.userOpHash, attributions.builderCode, attributions.role]
const KEY_VALUES = sql`${value('after0')}::int8, ${value('after1')}::text, ${value('after2')}::text, ${value('after3')}::text, ${value('after4')}::text`
const KEY_ORDER = KEY_COLUMNS.map((column) => desc(column))
const TIME_COLUMNS = [attributions.blockTimestamp, ...KEY_COLUMNS]
const TIME_ORDER = TIME_COLUMNS.map((column) => desc(column))

/**
 * The list in block time order (see {@link listAttributions}). The month partitions of `span` are read as
 * one part whose time bounds are literals, so its plan holds no default partition and reads the months in
 * order, newest first, stopping at the page's end; the rest of the table (the default partition, and any
 * month made after `span` was read) as a second part. Each part is a page long; the page is the newest of
 * both.
 */
function timeOrderedQuery(db: Database, parameters: ListAttributionsParameters, span: MonthSpan | null) {
  const where = sharedFilters(parameters)
  if (parameters.since !== undefined) where.push(gte(attributions.blockTimestamp, value('since')))
  if (parameters.until !== undefined) where.push(lt(attributions.blockTimestamp, value('until')))
  if (parameters.after !== undefined)
    where.push(
      lte(attributions.blockTimestamp, sql`${value('afterTime')}::timestamptz`),
      sql`(${sql.join(TIME_COLUMNS, sql`, `)}) < (${value('afterTime')}::timestamptz, ${KEY_VALUES})`,
    )
  if (span === null) return pageItems(pageQuery(db, where, TIME_ORDER), TIME_COLUMNS)
  // Literals, not placeholders: the planner drops the default partition only for bounds it can see.
  const from = sql.raw(`'${span.from.toISOString()}'::timestamptz`)
  const to = sql.raw(`'${span.to.toISOString()}'::timestamptz`)
  const inSpan = pageQuery(
    db,
    [...where, sql`${attributions.blockTimestamp} >= ${from}`, sql`${attributions.blockTimestamp} < ${to}`],
    TIME_ORDER,
  )
  const outside = pageQuery(
    db,
    [...where, sql`(${attributions.blockTimestamp} < ${from} or ${attributions.blockTimestamp} >= ${to})`],
    TIME_ORDER,
  )
  return pageItems(sql`(${inSpan}) union all (${outside})`, TIME_COLUMNS)
}

/**
 * The page's items ({@link ITEM_JSON}) from `parts`, each already a page long in the order of `columns`
 * (all descending): the page is the first of them in that order. Each item is written once its row is in
 * the page (after the sort, under the limit).
 */
function pageItems(parts: SQLWrapper, columns: AnyPgColumn[]): SQL {
  return sql`select ${ITEM_JSON} as item, ${sql.identifier('page')}.open_repairs from (${parts}) page
    order by ${sql.join(
      columns.map((column) => sql`${pageColumn(column)} desc`),
      sql`, `,
    )}
    limit ${value('limit')}`
}

/** The list in block number order, for a block range or a cursor without a time (see {@link listAttributions}). */
function blockOrderedQuery(db: Database, parameters: ListAttributionsParameters) {
  const { fromBlock, toBlock, since, until, after } = parameters
  const where = sharedFilters(parameters)
  if (fromBlock !== undefined) where.push(gte(attributions.blockNumber, value('fromBlock')))
  if (toBlock !== undefined) where.push(lte(attributions.blockNumber, value('toBlock')))
  // Block time never decreases with block number, so a time bound is also a block bound the list's
  // index can seek to (the first row at or after `since`, the last before `until`; ties to the lower
  // block at `since`, the higher at `until`); the time condition itself still decides.
  const hinted = alias(attributions, 'hint')
  const boundary = (condition: SQL, order: SQL[]) =>
    db
      .select({ blockNumber: hinted.blockNumber })
      .from(hinted)
      .where(and(eq(hinted.chainId, value('chainId')), condition))
      .orderBy(...order)
      .limit(1)
  if (since !== undefined)
    where.push(
      gte(attributions.blockTimestamp, value('since')),
      sql`${attributions.blockNumber} >= (${boundary(gte(hinted.blockTimestamp, value('since')), [asc(hinted.blockTimestamp), asc(hinted.blockNumber)])})`,
    )
  if (until !== undefined)
    where.push(
      lt(attributions.blockTimestamp, value('until')),
      sql`${attributions.blockNumber} <= (${boundary(lt(hinted.blockTimestamp, value('until')), [desc(hinted.blockTimestamp), desc(hinted.blockNumber)])})`,
    )
  if (after !== undefined) where.push(sql`(${sql.join(KEY_COLUMNS, sql`, `)}) < (${KEY_VALUES})`)
  return pageItems(pageQuery(db, where, KEY_ORDER), KEY_COLUMNS)
}

export type StatsInterval = 'hour' | 'day'

export const INTERVAL_MS: Record<StatsInterval, number> = { hour: 3_600_000, day: 86_400_000 }
/** `since`/`until` are bucket boundaries (see {@link roundToBuckets}). */
/**
 * `chainId`: one chain, or several whose counts are summed (each chain's distinct senders counted apart);
 * the first of several is the one whose registered wallet and registry record the answer names.
 */
export type BuilderCodeStatsParameters = { chainId: Chains; builderCode: string; interval: StatsInterval; since: Date; until: Date }

/** The chain a stats read covers, or the chains it sums. */
export type Chains = number | readonly number[]

/** `column` is the chain, or one of the chains when the read spans several (`chainId` is then an array). */
const chainIs = (column: SQL.Aliased | SQL | AnyPgColumn, chainId: Value<Chains>, several: boolean) =>
  several ? sql`${column} = any(${chainId}::int[])` : sql`${column} = ${chainId}`
/** The chain whose wallet and registry record a read names: the only one, or the first of several. */
const homeChain = (chainId: Value<Chains>, several: boolean): Value<number> | SQL =>
  several ? sql`(${chainId}::int[])[1]` : (chainId as Value<number>)

/** A query's value, or the placeholder a statement built once is filled with per execution. */
type Value<T> = T | Placeholder
type StatsQueryParameters = { [K in keyof BuilderCodeStatsParameters]: Value<BuilderCodeStatsParameters[K]> }

export type StatsBucket = {
  /** Epoch milliseconds: the roles' buckets are keyed by it, and the route writes it. */
  start: number
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

/** {@link statsQuery}'s rows as columns (see {@link jsonColumns}): the total's `start` is null. */
type StatsColumns = { start: (number | null)[]; attributions: number[]; pending: number[]; distinct_senders: number[]; gas_used: string[] }
type StatsTotals = { buckets: StatsBucket[]; total: Omit<StatsBucket, 'start'> }

/**
 * Per UTC hour or day of `[since, until)`: the code's attributions that are not removed (all, confirmed
 * or finalized, pending), distinct senders and gas used, read from the rollup the triggers on
 * `attributions` keep (store/sql/02-stats-rollup.sql) rather than from the rows themselves: one row per bucket with rows, and the total
 * with `start` null.
 */
function statsQuery({ chainId, builderCode, interval, since, until }: StatsQueryParameters, several: boolean): SQL {
  return sql`
    select extract(epoch from ${builderCodeBuckets.start})::int8 * 1000 as start,
      coalesce(sum(${builderCodeBuckets.attributions}), 0)::int8 as attributions,
      coalesce(sum(${builderCodeBuckets.pending}), 0)::int8 as pending,
      coalesce(sum(${builderCodeBuckets.gasUsed}), 0)::text as gas_used,
      case when grouping(${builderCodeBuckets.start}) = 0 then sum(${builderCodeBuckets.senders})
        else (${distinctSenders(chainId, builderCode, interval, since, until, several)}) end::int8 as distinct_senders
    from ${builderCodeBuckets}
    where ${chainIs(builderCodeBuckets.chainId, chainId, several)}
      and ${builderCodeBuckets.builderCode} = ${builderCode}
      and ${builderCodeBuckets.bucket} = ${interval}
      and ${builderCodeBuckets.start} >= ${since}
      and ${builderCodeBuckets.start} < ${until}
    group by grouping sets ((${builderCodeBuckets.start}), ())`
}

function toStats({ interval, since, until }: BuilderCodeStatsParameters, columns: StatsColumns): StatsTotals {
  const counts = (i: number) => ({
    attributions: columns.attributions[i]!,
    confirmed: columns.attributions[i]! - columns.pending[i]!,
    pending: columns.pending[i]!,
    distinctSenders: columns.distinct_senders[i]!,
    gasUsed: columns.gas_used[i]!,
  })
  // The empty grouping set always yields the total row, rows or not.
  const total = counts(columns.start.indexOf(null))
  const byStart = new Map<number, ReturnType<typeof counts>>()
  for (const [i, start] of columns.start.entries()) if (start !== null) byStart.set(start, counts(i))
  const empty = { attributions: 0, confirmed: 0, pending: 0, distinctSenders: 0, gasUsed: '0' }
  return {
    buckets: bucketStarts(interval, since, until).map((start) => ({ start, ...(byStart.get(start) ?? empty) })),
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
 * What the stats route answers with, in one prepared statement and so one round trip: the code's
 * buckets and total (every bucket of the range, empty ones as zeros), the same per role, the wallet that registered the code here and the code's registry record.
 */
export async function builderCodeStatsReport(db: Database, parameters: BuilderCodeStatsParameters): Promise<BuilderCodeStatsReport> {
  const { chainId, builderCode, interval, since, until } = parameters
  const several = typeof chainId !== 'number'
  const [row] = await queryPrepared<{
    stats: StatsColumns
    roles: RoleColumns
    wallet_address: string | null
    registry: RegistryCodeRow | null
  }>(db, several ? 'builder-code-stats-chains' : 'builder-code-stats', () => statsReportQuery(several), {
    chainId,
    builderCode,
    interval,
    since: since.toISOString(),
    until: until.toISOString(),
  })
  return {
    stats: toStats(parameters, row!.stats),
    roles: toRoleStats(row!.roles),
    walletAddress: row!.wallet_address,
    registry: row!.registry && toRegistryCodeRecord(row!.registry),
  }
}

/**
 * A JSON object of the named columns of the rows of `alias`, an array each, the rows in one order (one
 * aggregation feeds every array); an array is null when there are no rows. PostgreSQL 15 writes this in
 * a fraction of what `json_agg` of the rows costs, which works out how to write each column anew for every
 * row: a week's stats by hour at 10 M attributions took 1.0–1.1 against 1.6–1.8 ms (pgbench, one client).
 */
function jsonColumns(alias: string, names: readonly string[]): SQL {
  return sql.raw(`json_build_object(${names.map((name) => `'${name}', array_agg(${alias}.${name})`).join(', ')})`)
}

/** {@link builderCodeStatsReport}'s query, with a placeholder for each of its parameters. */
function statsReportQuery(several: boolean): SQL {
  const parameters = {
    chainId: sql.placeholder('chainId'),
    builderCode: sql.placeholder('builderCode'),
    interval: sql.placeholder('interval'),
    since: sql.placeholder('since'),
    until: sql.placeholder('until'),
  }
  const { chainId, builderCode } = parameters
  const home = homeChain(chainId, several)
  return sql`
    select (select ${jsonColumns('s', ['start', 'attributions', 'pending', 'gas_used', 'distinct_senders'])} from (${statsQuery(parameters, several)}) s) as stats,
      (select ${jsonColumns('r', ['start', 'role', 'attributions', 'pending'])} from (${roleStatsQuery(parameters, several)}) r) as roles,
      (select ${builderCodes.walletAddress} from ${builderCodes}
        where ${builderCodes.chainId} = ${home} and ${builderCodes.builderCode} = ${builderCode}) as wallet_address,
      ${registryCodeJson(home, builderCode)} as registry`
}

/**
 * The code's distinct senders in `[since, until)`. When no sender's latest attribution is at or after
 * `until` (the usual case: the range ends now), they are the senders whose latest attribution is at or
 * after `since`: the rollup's `latest_senders` of those buckets, summed. A range that ends earlier
 * counts the attributions themselves.
 */
function distinctSenders(
  chainId: Value<Chains>,
  builderCode: Value<string> | SQL,
  interval: Value<StatsInterval>,
  since: Value<Date>,
  until: Value<Date>,
  several: boolean,
): SQL {
  const b = builderCodeBuckets
  // Across several chains a sender counts once per chain, as the rollup's per-chain sums do.
  const sender = several ? sql`(${attributions.chainId}, ${attributions.sender})` : sql`${attributions.sender}`
  return sql`select case when count(*) filter (where ${b.start} >= ${until} and ${b.latestSenders} <> 0) = 0
      then coalesce(sum(${b.latestSenders}), 0)
      else (select count(distinct ${sender}) from ${attributions}
        where ${chainIs(attributions.chainId, chainId, several)} and ${attributions.builderCode} = ${builderCode}
          and ${attributions.blockTimestamp} >= ${since} and ${attributions.blockTimestamp} < ${until} and not ${attributions.removed})
    end
    from ${b} where ${chainIs(b.chainId, chainId, several)} and ${b.builderCode} = ${builderCode} and ${b.bucket} = ${interval} and ${b.start} >= ${since}`
}

/** `chainId`: one chain, or several summed (each chain's distinct senders counted apart; the first's registered wallets named). */
export type LeaderboardParameters = { chainId: Chains; since: Date; until: Date; limit: number }

export type LeaderboardRow = Omit<StatsBucket, 'start'> & { builderCode: string; walletAddress: string | null; roles: RoleCounts[] }

/**
 * The codes with the most attributions (not removed) in `[since, until)` (whole UTC hours, see
 * {@link roundToBuckets}), most first, with the same counts as {@link builderCodeStatsReport} gives each
 * code over that range with `interval: 'hour'`, and its roles; one prepared statement.
 */
export async function leaderboard(db: Database, { chainId, since, until, limit }: LeaderboardParameters): Promise<LeaderboardRow[]> {
  const several = typeof chainId !== 'number'
  const ranked = rankedCodes(limit)
  const rows = await queryPrepared<{
    builder_code: string
    wallet_address: string | null
    attributions: number
    pending: number
    gas_used: string
    distinct_senders: number
    roles: RoleColumns
  }>(db, `leaderboard:${several ? 'chains' : 'chain'}:${ranked}`, () => leaderboardQuery(several, ranked), {
    chainId,
    since: since.toISOString(),
    until: until.toISOString(),
    limit,
  })
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

/**
 * The codes a leaderboard statement ranks, written into it: `limit` rounded up to a power of two, so a
 * connection prepares at most 11 of them (limits 1 to 1,000). With a placeholder there, the generic plan
 * of the ranking took 28–29 ms at 20 M attributions against 6.5–8.5 ms with the number written in (the
 * same plan, top-N sort included; `EXPLAIN ANALYZE` put the difference in its Limit node).
 */
const rankedCodes = (limit: number) => 2 ** Math.ceil(Math.log2(limit))

/**
 * {@link leaderboard}'s query: the top `ranked` codes, then the first `limit` of them (a placeholder, like
 * the chains and the range) read in full; only those are counted beyond their attributions.
 */
function leaderboardQuery(several: boolean, ranked: number): SQL {
  const b = builderCodeBuckets
  const r = builderCodeRoleBuckets
  const [chainId, since, until, limit] = [
    sql.placeholder('chainId'),
    sql.placeholder('since'),
    sql.placeholder('until'),
    sql.placeholder('limit'),
  ]
  return sql`
    select top.builder_code, top.attributions, totals.pending, totals.gas_used, ${builderCodes.walletAddress} as wallet_address,
      (${distinctSenders(chainId, sql`top.builder_code`, 'hour', since, until, several)})::int8 as distinct_senders,
      (select ${jsonColumns('roles', ['start', 'role', 'attributions', 'pending'])} from (
        select null::int8 as start, ${r.role} as role, sum(${r.attributions})::int8 as attributions, sum(${r.pending})::int8 as pending
        from ${r}
        where ${chainIs(r.chainId, chainId, several)} and ${r.builderCode} = top.builder_code and ${r.bucket} = 'hour'
          and ${r.start} >= ${since} and ${r.start} < ${until}
        group by ${r.role}
        having sum(${r.attributions}) <> 0) roles) as roles
    from (
      -- Every code's buckets of the range are summed, so only what ranks them; the rest only for the top
      -- codes. Grouped in byte order, which sorts much faster than a locale's and groups the same codes;
      -- ordered in the database's collation as everywhere else.
      select (${b.builderCode} collate "C") collate "default" as builder_code, sum(${b.attributions})::int8 as attributions
      from ${b}
      where ${chainIs(b.chainId, chainId, several)} and ${b.bucket} = 'hour' and ${b.start} >= ${since} and ${b.start} < ${until}
      group by ${b.builderCode} collate "C"
      having sum(${b.attributions}) > 0
      order by attributions desc, builder_code
      limit ${sql.raw(String(ranked))}
    ) top
    cross join lateral (
      select sum(${b.pending})::int8 as pending, sum(${b.gasUsed})::text as gas_used
      from ${b}
      where ${chainIs(b.chainId, chainId, several)} and ${b.builderCode} = top.builder_code and ${b.bucket} = 'hour' and ${b.start} >= ${since} and ${b.start} < ${until}
    ) totals
    left join ${builderCodes} on ${builderCodes.chainId} = ${homeChain(chainId, several)} and ${builderCodes.builderCode} = top.builder_code
    order by top.attributions desc, top.builder_code
    limit ${limit}`
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

/** {@link roleStatsQuery}'s rows as columns (see {@link jsonColumns}); with no rows, each is null. */
type RoleColumns = {
  start: (number | null)[] | null
  role: string[] | null
  attributions: number[] | null
  pending: number[] | null
}
type RoleStats = { buckets: Map<number, RoleCounts[]>; total: RoleCounts[] }

/** Roles in the order answers list them: app, wallet, service, none (''). */
const ROLE_ORDER = ['app', 'wallet', 'service', ''] as const

/**
 * Per UTC hour or day of `[since, until)` and in total: the code's attributions that are not removed, per
 * role it held, read from the rollup the triggers on `attributions` keep (store/sql/02-stats-rollup.sql). Unordered rows: one per bucket
 * and role with rows, and per role with `start` null.
 */
function roleStatsQuery({ chainId, builderCode, interval, since, until }: StatsQueryParameters, several: boolean): SQL {
  const b = builderCodeRoleBuckets
  return sql`
    select extract(epoch from ${b.start})::int8 * 1000 as start, ${b.role} as role,
      sum(${b.attributions})::int8 as attributions, sum(${b.pending})::int8 as pending
    from ${b}
    where ${chainIs(b.chainId, chainId, several)} and ${b.builderCode} = ${builderCode} and ${b.bucket} = ${interval}
      and ${b.start} >= ${since} and ${b.start} < ${until}
    group by grouping sets ((${b.start}, ${b.role}), (${b.role}))
    having sum(${b.attributions}) <> 0`
}

/** {@link roleStatsQuery}'s rows in answer order (by start, the total first, then by role), grouped by bucket. */
function toRoleStats(columns: RoleColumns): RoleStats {
  const buckets = new Map<number, RoleCounts[]>()
  const total: RoleCounts[] = []
  const { start, role, attributions, pending } = columns
  if (!start || !role || !attributions || !pending) return { buckets, total }
  const rank = (i: number) => ROLE_ORDER.indexOf(role[i] as (typeof ROLE_ORDER)[number])
  const order = start.map((_, i) => i).sort((a, b) => (start[a] ?? -1) - (start[b] ?? -1) || rank(a) - rank(b))
  for (const i of order) {
    const counts: RoleCounts = {
      role: role[i] === '' ? null : (role[i] as CodeRole),
      attributions: attributions[i]!,
      confirmed: attributions[i]! - pending[i]!,
      pending: pending[i]!,
    }
    const bucketStart = start[i] ?? null
    if (bucketStart === null) total.push(counts)
    else buckets.set(bucketStart, [...(buckets.get(bucketStart) ?? []), counts])
  }
  return { buckets, total }
}
