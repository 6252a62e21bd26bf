import { and, asc, eq, sql, type SQL } from 'drizzle-orm'
import type { AnyPgColumn } from 'drizzle-orm/pg-core'
import { ISO_TIMESTAMPS, queryPrepared, type Database } from '../client.js'
import { logs, type Status } from '../schema.js'
import { openRepairsColumn, pageOpenRepairs, pageValues, type OpenRepair } from './status.js'

/**
 * Keyset of the log list, oldest first like `eth_getLogs`: block number and log index, then what tells
 * rows of one position apart — the block hash (forks), then transaction and ordinal (pending rows,
 * which share the zero block hash). Both unique keys of `logs` are inside it, so it is a total order.
 */
export type LogKey = readonly [blockNumber: number, logIndex: number, blockHash: string, transactionHash: string, txLogOrdinal: number]

export type ListLogsParameters = {
  chainId: number
  addresses?: readonly string[]
  /** Per position 0–3: any of these values (`eth_getLogs` topic semantics); undefined matches anything. */
  topics: readonly (readonly string[] | undefined)[]
  fromBlock?: number
  toBlock?: number
  statuses?: readonly Status[]
  includeRemoved: boolean
  after?: LogKey
  limit: number
}

export type LogRow = {
  chainId: number
  blockNumber: number
  blockHash: string
  /** ISO 8601 in UTC, to the millisecond, as the API writes it. */
  blockTimestamp: string
  blockTimestampMs: number | null
  transactionHash: string
  transactionIndex: number
  logIndex: number
  txLogOrdinal: number
  address: string
  topic0: string | null
  topic1: string | null
  topic2: string | null
  topic3: string | null
  data: string
  status: Status
  removed: boolean
}

const TOPIC_COLUMNS = [logs.topic0, logs.topic1, logs.topic2, logs.topic3] as const

const LOG_COLUMNS = {
  chainId: logs.chainId,
  blockNumber: logs.blockNumber,
  blockHash: logs.blockHash,
  blockTimestamp: logs.blockTimestamp,
  blockTimestampMs: logs.blockTimestampMs,
  transactionHash: logs.transactionHash,
  transactionIndex: logs.transactionIndex,
  logIndex: logs.logIndex,
  txLogOrdinal: logs.txLogOrdinal,
  address: logs.address,
  topic0: logs.topic0,
  topic1: logs.topic1,
  topic2: logs.topic2,
  topic3: logs.topic3,
  data: logs.data,
  status: logs.status,
  removed: logs.removed,
}

/** A row of the list's statement, as the database names its columns (`block_timestamp` in ISO 8601). */
type StoredLogRow = {
  chain_id: number
  block_number: string
  block_hash: string
  block_timestamp: string
  block_timestamp_ms: string | null
  transaction_hash: string
  transaction_index: number
  log_index: number
  tx_log_ordinal: number
  address: string
  topic0: string | null
  topic1: string | null
  topic2: string | null
  topic3: string | null
  data: string
  status: Status
  removed: boolean
  open_repairs: string | null
}

const toLogRow = (row: StoredLogRow): LogRow & { openRepairs: string | null } => ({
  chainId: row.chain_id,
  blockNumber: Number(row.block_number),
  blockHash: row.block_hash,
  blockTimestamp: row.block_timestamp,
  blockTimestampMs: row.block_timestamp_ms === null ? null : Number(row.block_timestamp_ms),
  transactionHash: row.transaction_hash,
  transactionIndex: row.transaction_index,
  logIndex: row.log_index,
  txLogOrdinal: row.tx_log_ordinal,
  address: row.address,
  topic0: row.topic0,
  topic1: row.topic1,
  topic2: row.topic2,
  topic3: row.topic3,
  data: row.data,
  status: row.status,
  removed: row.removed,
  openRepairs: row.open_repairs,
})

/** Whether a list of logs has a filter an index leads with (address, topic0); without one only the block order can serve it. */
export function hasLeadingLogFilter({ addresses, topics }: Pick<ListLogsParameters, 'addresses' | 'topics'>): boolean {
  return addresses !== undefined || topics[0] !== undefined
}

function compareKeys(a: LogKey, b: LogKey): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1
  return 0
}

/**
 * One page of indexed logs in chain order, filtered like `eth_getLogs`, plus whether more follow.
 * Filtered by address or topic0, an index led by that column serves it. Otherwise the block order
 * does, and no one index holds every row in it: confirmed and finalized rows are read from the
 * canonical key (status <> 'pending'), pre-confirmed ones from their own partial indexes, each part
 * a page long, merged here; so a page costs a page, not history. The open repairs over its block range
 * come with the page's rows (alone only when it has none), as {@link listAttributions}' do. Each part is
 * a prepared statement built once per combination of filters, its values filled in per request: planned
 * afresh on every request, the statements over every month of `logs` cost PostgreSQL 3.7–4.8 ms of CPU per
 * request against 0.4–0.5 ms prepared (eighteen month partitions), and more with every month kept.
 */
export async function listLogs(
  db: Database,
  parameters: ListLogsParameters,
): Promise<{ rows: LogRow[]; more: boolean; openRepairs: OpenRepair[] }> {
  const { chainId, addresses, topics, fromBlock, toBlock, statuses, includeRemoved, after, limit } = parameters
  const given = {
    addresses,
    topic0: topics[0],
    topic1: topics[1],
    topic2: topics[2],
    topic3: topics[3],
    fromBlock,
    toBlock,
    statuses,
    after,
  }
  // A list of one value is compared as a value, of several as an array (see `oneOf`): two shapes per filter.
  const filters = Object.entries(given)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => (LIST_FILTERS.has(name) && (value as readonly string[]).length > 1 ? `${name}[]` : name))
    .join(',')
  const values = {
    chainId,
    addresses: oneOrMany(addresses),
    topic0: oneOrMany(topics[0]),
    topic1: oneOrMany(topics[1]),
    topic2: oneOrMany(topics[2]),
    topic3: oneOrMany(topics[3]),
    fromBlock,
    toBlock,
    statuses,
    ...pageValues(after, limit, fromBlock, toBlock),
  }
  const page = async (name: string, part: SQL[]) =>
    (
      await queryPrepared<StoredLogRow>(
        db,
        `logs:${filters}:${includeRemoved ? 'all' : 'live'}:${name}`,
        () => pageQuery(db, [...sharedFilters(parameters), ...part]),
        values,
        ISO_TIMESTAMPS,
      )
    ).map(toLogRow)

  let rows: (LogRow & { openRepairs: string | null })[]
  if (hasLeadingLogFilter({ addresses, topics })) rows = await page('filtered', [])
  else {
    const wants = (status: Status) => statuses === undefined || statuses.includes(status)
    const parts: [string, SQL[]][] = []
    if (wants('confirmed') || wants('finalized')) parts.push(['canonical', [sql`${logs.status} <> 'pending'`]])
    if (wants('pending')) {
      parts.push(['pending', [sql`${logs.status} = 'pending'`, sql`not ${logs.removed}`]])
      if (includeRemoved) parts.push(['pending removed', [sql`${logs.status} = 'pending'`, sql`${logs.removed}`]])
    }
    const pages = await Promise.all(parts.map(([name, part]) => page(name, part)))
    rows = pages
      .flat()
      .sort((a, b) => compareKeys(logKey(a), logKey(b)))
      .slice(0, limit + 1)
  }
  const openRepairs = await pageOpenRepairs(db, rows[0]?.openRepairs, chainId, fromBlock, toBlock)
  return { rows: rows.slice(0, limit), more: rows.length > limit, openRepairs }
}

const value = (name: string) => sql.placeholder(name)

/** The filters that take a list of values. */
const LIST_FILTERS = new Set(['addresses', 'topic0', 'topic1', 'topic2', 'topic3'])
const oneOrMany = (values: readonly string[] | undefined) => (values?.length === 1 ? values[0] : values)

/**
 * `column` is one of `values`, compared as a value when there is one: a generic plan knows neither the values nor
 * how many an array holds, and takes an array for less selective than one equality (`test/api-plans.test.ts`: a
 * single topic0 passed as an array was planned as a sequential scan of every month).
 */
const oneOf = (column: AnyPgColumn, name: string, values: readonly string[]) =>
  values.length === 1 ? sql`${column} = ${value(name)}` : sql`${column} = any(${value(name)}::text[])`

/** The conditions of the filters given, with a placeholder for each value. */
function sharedFilters({ addresses, topics, fromBlock, toBlock, statuses, includeRemoved, after }: ListLogsParameters): SQL[] {
  const where: SQL[] = [eq(logs.chainId, value('chainId'))]
  if (addresses !== undefined) where.push(oneOf(logs.address, 'addresses', addresses))
  topics.forEach((values, position) => {
    if (values !== undefined) where.push(oneOf(TOPIC_COLUMNS[position]!, `topic${position}`, values))
  })
  if (fromBlock !== undefined) where.push(sql`${logs.blockNumber} >= ${value('fromBlock')}::int8`)
  if (toBlock !== undefined) where.push(sql`${logs.blockNumber} <= ${value('toBlock')}::int8`)
  if (statuses !== undefined) where.push(sql`${logs.status} = any(${value('statuses')}::text[])`)
  if (!includeRemoved) where.push(sql`not ${logs.removed}`)
  if (after !== undefined)
    where.push(
      sql`(${logs.blockNumber}, ${logs.logIndex}, ${logs.blockHash}, ${logs.transactionHash}, ${logs.txLogOrdinal}) > (${value('after0')}::int8, ${value('after1')}::int4, ${value('after2')}::text, ${value('after3')}::text, ${value('after4')}::int4)`,
    )
  return where
}

/** A page of rows meeting `where` in the list's order, with the open repairs over its block range. */
function pageQuery(db: Database, where: SQL[]) {
  return db
    .select({ ...LOG_COLUMNS, openRepairs: openRepairsColumn(value('chainId'), value('from'), value('to')).as('open_repairs') })
    .from(logs)
    .where(and(...where))
    .orderBy(asc(logs.blockNumber), asc(logs.logIndex), asc(logs.blockHash), asc(logs.transactionHash), asc(logs.txLogOrdinal))
    .limit(value('limit'))
}

export function logKey(row: Pick<LogRow, 'blockNumber' | 'logIndex' | 'blockHash' | 'transactionHash' | 'txLogOrdinal'>): LogKey {
  return [row.blockNumber, row.logIndex, row.blockHash, row.transactionHash, row.txLogOrdinal]
}
