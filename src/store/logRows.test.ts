import { describe, expect, it } from 'vitest'
import { copyStatement, LOG_COPY_COLUMNS, toCopyData, toLogRows, type LogInput } from './logRows.js'

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const log = (i: number, topics: number): LogInput => ({
  address: '0x00000000000000000000000000000000000000AA',
  topics: Array.from({ length: topics }, (_, k) => hash(0xabc0 + k)),
  data: i % 2 === 0 ? '0x' : `0x${'ff'.repeat(i % 7)}`,
  blockNumber: `0x${(10 + Math.floor(i / 3)).toString(16)}`,
  blockHash: hash(1_000_000 + Math.floor(i / 3)),
  blockTimestamp: `0x${(1_700_000_000 + Math.floor(i / 3)).toString(16)}`,
  transactionHash: hash(i),
  transactionIndex: '0x0',
  logIndex: `0x${(i % 3).toString(16)}`,
})

type Field = string | number | null

/** Reads PostgreSQL binary COPY back: the header, tuples of LOG_COPY_COLUMNS, the trailer. */
function readCopyData(data: Buffer): Field[][] {
  expect(data.subarray(0, 11).toString('latin1')).toBe('PGCOPY\n\xff\r\n\0')
  expect(data.readInt32BE(11)).toBe(0)
  expect(data.readInt32BE(15)).toBe(0)
  const integers: Record<string, 4 | 8> = {
    chain_id: 4,
    block_number: 8,
    block_timestamp: 8,
    block_timestamp_ms: 8,
    transaction_index: 4,
    log_index: 4,
    tx_log_ordinal: 4,
  }
  const rows: Field[][] = []
  let at = 19
  for (;;) {
    const fields = data.readInt16BE(at)
    at += 2
    if (fields === -1) break
    expect(fields).toBe(LOG_COPY_COLUMNS.length)
    const row: Field[] = []
    for (const column of LOG_COPY_COLUMNS) {
      const length = data.readInt32BE(at)
      at += 4
      if (length === -1) {
        row.push(null)
        continue
      }
      const size = integers[column]
      if (size) expect(length).toBe(size)
      // Timestamps count microseconds from 2000-01-01; shown as ISO text to read the test.
      if (column === 'block_timestamp') row.push(new Date(Number(data.readBigInt64BE(at) / 1000n) + Date.UTC(2000, 0, 1)).toISOString())
      else if (size === 8) row.push(Number(data.readBigInt64BE(at)))
      else if (size === 4) row.push(data.readInt32BE(at))
      else row.push(data.toString('latin1', at, at + length))
      at += length
    }
    rows.push(row)
  }
  expect(at).toBe(data.length)
  return rows
}

describe('toCopyData', () => {
  it('renders one binary COPY tuple per row: hex lowercased, absent topics null, the status last', () => {
    const rows = toLogRows([log(0, 0), log(1, 2), log(2, 4)])
    const data = toCopyData(rows, 8453, (row) => (row.logIndex === 1 ? 'finalized' : 'confirmed'))
    const address = '0x00000000000000000000000000000000000000aa'
    const at = '2023-11-14T22:13:20.000Z'
    expect(readCopyData(Buffer.concat(copyStatement(data)))).toEqual([
      [8453, 10, hash(1_000_000), at, hash(0), 0, 0, 0, address, null, null, null, null, '0x', 'confirmed', null],
      [8453, 10, hash(1_000_000), at, hash(1), 0, 1, 0, address, hash(0xabc0), hash(0xabc1), null, null, '0xff', 'finalized', null],
      [
        8453,
        10,
        hash(1_000_000),
        at,
        hash(2),
        0,
        2,
        0,
        address,
        hash(0xabc0),
        hash(0xabc1),
        hash(0xabc2),
        hash(0xabc3),
        '0x',
        'confirmed',
        null,
      ],
    ])
  })

  it('writes big numbers and timestamps before 2000 as signed 64-bit integers', () => {
    const [row] = toLogRows([{ ...log(0, 1), blockNumber: '0x1fffffffffffff', blockTimestamp: '0x1' }])
    const [fields] = readCopyData(Buffer.concat(copyStatement(toCopyData([row!], 1, () => 'confirmed'))))
    expect(fields!.slice(0, 4)).toEqual([1, Number.MAX_SAFE_INTEGER, hash(1_000_000), '1970-01-01T00:00:01.000Z'])
  })

  it("writes the milliseconds a log carries, else its header's, else null", () => {
    const ms = 1_700_000_000_400
    const rows = toLogRows(
      [{ ...log(0, 1), blockTimestampMs: `0x${ms.toString(16)}` }, { ...log(3, 1), blockTimestampMs: ms + 200 }, log(6, 1)],
      undefined,
      (blockNumber) => (blockNumber === 11 ? ms + 1_000 : undefined),
    )
    expect(rows.map((row) => row.blockTimestampMs)).toEqual([ms, ms + 200, null])
    const read = readCopyData(Buffer.concat(copyStatement(toCopyData(rows, 1, () => 'confirmed'))))
    expect(read.map((fields) => fields[LOG_COPY_COLUMNS.indexOf('block_timestamp_ms')])).toEqual([ms, ms + 200, null])
    expect(toLogRows([log(3, 1)], undefined, () => ms + 1_000)[0]!.blockTimestampMs).toBe(ms + 1_000)
  })

  it('cuts many rows into pieces of whole tuples that add up to every row once', () => {
    const rows = toLogRows(Array.from({ length: 4_501 }, (_, i) => log(i, i % 5)))
    const data = toCopyData(rows, 1, () => 'confirmed')
    expect(data.rows).toBe(4_501)
    expect(data.pieces).toHaveLength(3)
    const read = readCopyData(Buffer.concat(copyStatement(data)))
    expect(read.map((fields) => fields[4])).toEqual(rows.map((row) => row.transactionHash))
    expect(read.map((fields) => fields[9])).toEqual(rows.map((row) => row.topics[0] ?? null))
  })

  it('joins the tuples of several parts into one statement, in order', () => {
    const rows = toLogRows(Array.from({ length: 9 }, (_, i) => log(i, 1)))
    const parts = [rows.slice(0, 4), [], rows.slice(4)].map((part) => toCopyData(part, 1, () => 'confirmed'))
    expect(readCopyData(Buffer.concat(copyStatement(...parts))).map((fields) => fields[4])).toEqual(rows.map((row) => row.transactionHash))
    expect(readCopyData(Buffer.concat(copyStatement(toCopyData([], 1, () => 'confirmed'))))).toEqual([])
  })
})
