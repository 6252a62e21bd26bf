import { describe, expect, it } from 'vitest'
import { toCopyText, toLogRows, type LogInput } from './logRows.js'

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

describe('toCopyText', () => {
  it('renders one COPY text line per row: hex lowercased, absent topics as \\N, the status last', () => {
    const rows = toLogRows([log(0, 0), log(1, 2), log(2, 4)])
    const text = Buffer.concat(toCopyText(rows, 8453, (row) => (row.logIndex === 1 ? 'finalized' : 'confirmed')).pieces).toString()
    expect(text.split('\n')).toEqual([
      `8453\t10\t${hash(1_000_000)}\t2023-11-14T22:13:20.000Z\t${hash(0)}\t0\t0\t0\t0x00000000000000000000000000000000000000aa\t\\N\t\\N\t\\N\t\\N\t0x\tconfirmed`,
      `8453\t10\t${hash(1_000_000)}\t2023-11-14T22:13:20.000Z\t${hash(1)}\t0\t1\t0\t0x00000000000000000000000000000000000000aa\t${hash(0xabc0)}\t${hash(0xabc1)}\t\\N\t\\N\t0xff\tfinalized`,
      `8453\t10\t${hash(1_000_000)}\t2023-11-14T22:13:20.000Z\t${hash(2)}\t0\t2\t0\t0x00000000000000000000000000000000000000aa\t${hash(0xabc0)}\t${hash(0xabc1)}\t${hash(0xabc2)}\t${hash(0xabc3)}\t0x\tconfirmed`,
      '',
    ])
  })

  it('cuts many rows into pieces of whole lines that add up to every row once', () => {
    const rows = toLogRows(Array.from({ length: 4_501 }, (_, i) => log(i, i % 5)))
    const { rows: count, pieces } = toCopyText(rows, 1, () => 'confirmed')
    expect(count).toBe(4_501)
    expect(pieces.map((piece) => piece.toString().split('\n').length - 1)).toEqual([2_000, 2_000, 501])
    for (const piece of pieces) expect(piece.at(-1)).toBe(0x0a)
    const lines = Buffer.concat(pieces).toString().trimEnd().split('\n')
    expect(lines.map((line) => line.split('\t')[4])).toEqual(rows.map((row) => row.transactionHash))
    expect(lines.every((line) => line.split('\t').length === 15)).toBe(true)
  })
})
