import { and, asc, eq, gte, inArray, lte, sql, type SQL } from 'drizzle-orm'
import { isoFromTimestamptz, type Database } from '../client.js'
import { logs, type Status } from '../schema.js'
import { openRepairsColumn, pageOpenRepairs, repairRange, type OpenRepair } from './status.js'

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
  // PostgreSQL's text (drizzle hands timestamptz over as it comes) written as ISO without a Date between.
  blockTimestamp: sql<string>`${logs.blockTimestamp}`.mapWith(isoFromTimestamptz),
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
 * come with the page's rows (alone only when it has none), as {@link listAttributions}' do.
 */
export async function listLogs(
  db: Database,
  { chainId, addresses, topics, fromBlock, toBlock, statuses, includeRemoved, after, limit }: ListLogsParameters,
): Promise<{ rows: LogRow[]; more: boolean; openRepairs: OpenRepair[] }> {
  const where: SQL[] = [eq(logs.chainId, chainId)]
  if (addresses !== undefined) where.push(inArray(logs.address, [...addresses]))
  topics.forEach((values, position) => {
    if (values !== undefined) where.push(inArray(TOPIC_COLUMNS[position]!, [...values]))
  })
  if (fromBlock !== undefined) where.push(gte(logs.blockNumber, fromBlock))
  if (toBlock !== undefined) where.push(lte(logs.blockNumber, toBlock))
  if (statuses !== undefined) where.push(inArray(logs.status, [...statuses]))
  if (!includeRemoved) where.push(eq(logs.removed, false))
  if (after !== undefined)
    where.push(
      sql`(${logs.blockNumber}, ${logs.logIndex}, ${logs.blockHash}, ${logs.transactionHash}, ${logs.txLogOrdinal}) > (${after[0]}, ${after[1]}, ${after[2]}, ${after[3]}, ${after[4]})`,
    )
  const repairs = repairRange(fromBlock, toBlock)
  const page = (part: SQL[]) =>
    db
      .select({ ...LOG_COLUMNS, openRepairs: openRepairsColumn(chainId, repairs.from, repairs.to) })
      .from(logs)
      .where(and(...where, ...part))
      .orderBy(asc(logs.blockNumber), asc(logs.logIndex), asc(logs.blockHash), asc(logs.transactionHash), asc(logs.txLogOrdinal))
      .limit(limit + 1)

  let rows: (LogRow & { openRepairs: string | null })[]
  if (hasLeadingLogFilter({ addresses, topics })) rows = await page([])
  else {
    const wants = (status: Status) => statuses === undefined || statuses.includes(status)
    const parts: SQL[][] = []
    if (wants('confirmed') || wants('finalized')) parts.push([sql`${logs.status} <> 'pending'`])
    if (wants('pending')) {
      parts.push([sql`${logs.status} = 'pending'`, sql`NOT ${logs.removed}`])
      if (includeRemoved) parts.push([sql`${logs.status} = 'pending'`, sql`${logs.removed}`])
    }
    const pages = await Promise.all(parts.map(page))
    rows = pages
      .flat()
      .sort((a, b) => compareKeys(logKey(a), logKey(b)))
      .slice(0, limit + 1)
  }
  const openRepairs = await pageOpenRepairs(db, rows[0]?.openRepairs, chainId, fromBlock, toBlock)
  return { rows: rows.slice(0, limit), more: rows.length > limit, openRepairs }
}

export function logKey(row: Pick<LogRow, 'blockNumber' | 'logIndex' | 'blockHash' | 'transactionHash' | 'txLogOrdinal'>): LogKey {
  return [row.blockNumber, row.logIndex, row.blockHash, row.transactionHash, row.txLogOrdinal]
}
