import { BINARY_HEADER, BINARY_TRAILER, POSTGRES_EPOCH_SECONDS, TWO_32 } from './copy.js'
import { ZERO_HASH, type Status } from './schema.js'
import { CodetrailError } from '../internal/errors.js'

/** A log as a node serves it (hex strings); `blockTimestamp` is the extension some nodes add. */
export type LogInput = {
  address: string
  topics: readonly string[]
  data: string
  blockNumber: string | number | null
  /** Null (some nodes, for pending logs) is stored as the zero hash, as Base serves pending logs. */
  blockHash: string | null
  blockTimestamp?: string | number | null | undefined
  /** Base's block time in milliseconds (hex, or a JSON number); absent on most nodes. */
  blockTimestampMs?: string | number | null | undefined
  transactionHash: string | null
  /** Null only for pending logs on some nodes: the log's position in the answer stands in. */
  transactionIndex: string | number | null
  logIndex: string | number | null
}

/** One `logs` row as the writers store it (hex lowercased, numbers decoded). */
export type LogRow = {
  blockNumber: number
  blockHash: string
  blockTimestamp: number
  /** Milliseconds since the epoch as the node served them (the log's or its header's); null where it served none. */
  blockTimestampMs?: number | null
  transactionHash: string
  transactionIndex: number
  logIndex: number
  txLogOrdinal: number
  address: string
  topics: string[]
  data: string
}

/** Where a log's transaction stands: what attribution needs of a range's rows. */
export type TransactionRow = Pick<
  LogRow,
  'transactionHash' | 'blockNumber' | 'blockHash' | 'blockTimestamp' | 'blockTimestampMs' | 'transactionIndex'
>

export class LogShapeError extends CodetrailError {
  override name = 'LogShapeError'
}

/** Decodes a hex quantity (or a JSON number, which some geth builds send). */
export function quantity(value: string | number | null | undefined, field: string): number {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && value.startsWith('0x') ? Number.parseInt(value, 16) : Number.NaN
  if (!Number.isSafeInteger(n) || n < 0) throw new LogShapeError(`log field ${field} is not a quantity: ${JSON.stringify(value)}`)
  return n
}

function hash(value: string | null, field: string): string {
  if (typeof value !== 'string' || value.length !== 66)
    throw new LogShapeError(`log field ${field} is not a hash: ${JSON.stringify(value)}`)
  return value.toLowerCase()
}

/**
 * Turns node logs into rows sorted by (block, transaction index, log index), with each log's ordinal
 * within its transaction. Timestamps missing from a log come from `timestampOf(blockNumber)`, and
 * milliseconds from `timestampMsOf(blockNumber)` (the header's, where it was read).
 */
export function toLogRows(
  logs: readonly LogInput[],
  timestampOf?: (blockNumber: number) => number | undefined,
  timestampMsOf?: (blockNumber: number) => number | null | undefined,
): LogRow[] {
  const rows: LogRow[] = logs.map((log, position) => {
    if (log.topics.length > 4) throw new LogShapeError(`log has ${log.topics.length} topics`)
    const blockNumber = quantity(log.blockNumber, 'blockNumber')
    const timestamp =
      log.blockTimestamp === undefined || log.blockTimestamp === null
        ? timestampOf?.(blockNumber)
        : quantity(log.blockTimestamp, 'blockTimestamp')
    if (timestamp === undefined) throw new LogShapeError(`no timestamp for block ${blockNumber}`)
    const timestampMs =
      log.blockTimestampMs === undefined || log.blockTimestampMs === null
        ? (timestampMsOf?.(blockNumber) ?? null)
        : quantity(log.blockTimestampMs, 'blockTimestampMs')
    return {
      blockNumber,
      blockHash: log.blockHash?.toLowerCase() ?? ZERO_HASH,
      blockTimestamp: timestamp,
      blockTimestampMs: timestampMs,
      transactionHash: hash(log.transactionHash, 'transactionHash'),
      transactionIndex: log.transactionIndex === null ? 0 : quantity(log.transactionIndex, 'transactionIndex'),
      logIndex: log.logIndex === null ? position : quantity(log.logIndex, 'logIndex'),
      txLogOrdinal: 0,
      address: log.address.toLowerCase(),
      topics: log.topics.map((topic) => topic.toLowerCase()),
      data: log.data.toLowerCase(),
    }
  })
  // Nodes answer in this order already: checking is one pass, sorting many.
  const byPosition = (a: LogRow, b: LogRow) =>
    a.blockNumber - b.blockNumber || a.transactionIndex - b.transactionIndex || a.logIndex - b.logIndex
  if (rows.some((row, i) => i > 0 && byPosition(rows[i - 1]!, row) > 0)) rows.sort(byPosition)
  for (let i = 1; i < rows.length; i++) {
    const previous = rows[i - 1]!
    const row = rows[i]!
    if (row.transactionHash === previous.transactionHash && row.blockHash === previous.blockHash) {
      row.txLogOrdinal = previous.txLogOrdinal + 1
    }
  }
  return rows
}

const isoCache = new Map<number, string>()

/** ISO timestamp for COPY, memoised because every log of a block shares one. */
export function isoTimestamp(seconds: number): string {
  let iso = isoCache.get(seconds)
  if (iso === undefined) {
    if (isoCache.size > 10_000) isoCache.clear()
    iso = new Date(seconds * 1000).toISOString()
    isoCache.set(seconds, iso)
  }
  return iso
}

export const LOG_COPY_COLUMNS = [
  'chain_id',
  'block_number',
  'block_hash',
  'block_timestamp',
  'transaction_hash',
  'transaction_index',
  'log_index',
  'tx_log_ordinal',
  'address',
  'topic0',
  'topic1',
  'topic2',
  'topic3',
  'data',
  'status',
  'block_timestamp_ms',
] as const

// Rows per COPY piece: keeps memory flat for 50 MB chunks without a write per row.
const COPY_PIECE_ROWS = 2_000

/**
 * Log rows as tuples of PostgreSQL's binary `COPY` format, in pieces ({@link copyStatement} adds the
 * header and trailer): buffers live off the JS heap, so rows waiting to be stored cost the GC nothing.
 */
export type CopyData = { rows: number; pieces: Buffer[] }

const FIELDS = LOG_COPY_COLUMNS.length
// Bytes of a row besides its hex strings: field count, a length per field, four int32s, three int64s, status.
const ROW_OVERHEAD_BYTES = 2 + FIELDS * 4 + 4 * 4 + 3 * 8 + 9

/**
 * Rows in PostgreSQL's binary `COPY` format, written into buffers of at most 2,000 rows. The server
 * parses no text (numbers and timestamps arrive as integers), and writing them costs a quarter of the
 * text format's CPU (harness/bench/README.md). Hex strings are ASCII, one byte per character.
 */
export function toCopyData(rows: readonly LogRow[], chainId: number, statusOf: (row: LogRow) => Status): CopyData {
  const pieces: Buffer[] = []
  for (let from = 0; from < rows.length; from += COPY_PIECE_ROWS) {
    const to = Math.min(rows.length, from + COPY_PIECE_ROWS)
    let size = 0
    for (let i = from; i < to; i++) {
      const row = rows[i]!
      size += ROW_OVERHEAD_BYTES + row.blockHash.length + row.transactionHash.length + row.address.length + row.data.length
      for (const topic of row.topics) size += topic.length
    }
    const piece = Buffer.allocUnsafe(size)
    const view = new DataView(piece.buffer, piece.byteOffset, piece.byteLength)
    let at = 0
    const int32 = (value: number) => {
      view.setInt32(at, 4)
      view.setInt32(at + 4, value)
      at += 8
    }
    const int64 = (value: number) => {
      const high = Math.floor(value / TWO_32)
      view.setInt32(at, 8)
      view.setInt32(at + 4, high)
      view.setUint32(at + 8, value - high * TWO_32)
      at += 12
    }
    const text = (value: string | undefined) => {
      if (value === undefined) {
        view.setInt32(at, -1)
        at += 4
        return
      }
      view.setInt32(at, value.length)
      at += 4 + piece.write(value, at + 4, 'latin1')
    }
    // In the order of LOG_COPY_COLUMNS.
    for (let i = from; i < to; i++) {
      const row = rows[i]!
      const topics = row.topics
      view.setInt16(at, FIELDS)
      at += 2
      int32(chainId)
      int64(row.blockNumber)
      text(row.blockHash)
      int64((row.blockTimestamp - POSTGRES_EPOCH_SECONDS) * 1_000_000)
      text(row.transactionHash)
      int32(row.transactionIndex)
      int32(row.logIndex)
      int32(row.txLogOrdinal)
      text(row.address)
      text(topics[0])
      text(topics[1])
      text(topics[2])
      text(topics[3])
      text(row.data)
      text(statusOf(row))
      if (row.blockTimestampMs == null) {
        view.setInt32(at, -1)
        at += 4
      } else int64(row.blockTimestampMs)
    }
    pieces.push(piece.subarray(0, at))
  }
  return { rows: rows.length, pieces }
}

/** The pieces of one binary `COPY` statement: the header, the tuples of `parts` in order, the trailer. */
export function copyStatement(...parts: CopyData[]): Buffer[] {
  return [BINARY_HEADER, ...parts.flatMap((part) => part.pieces), BINARY_TRAILER]
}
