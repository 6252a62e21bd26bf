import { Hash } from 'ox'
import { describe, expect, it } from 'vitest'
import type { RpcCall } from '../rpc/client.js'
import type { LogInput } from '../store/index.js'
import { normalizeFilter } from './filter.js'
import { bloomMayMatch, createTipReader } from './tipReads.js'

const HASH = `0x${'ab'.repeat(32)}`
const OTHER = `0x${'cd'.repeat(32)}`
const EMITTER = `0x${'11'.repeat(20)}`
const TOPIC = `0x${'22'.repeat(32)}`
const EMPTY_BLOOM = `0x${'0'.repeat(512)}`

/** The logs bloom of a block whose one log is the emitter's with the topic: three bits per value, from its keccak256. */
const BLOOM = (() => {
  const bits = new Uint8Array(256)
  for (const value of [EMITTER, TOPIC]) {
    const hash = Hash.keccak256(value as `0x${string}`, { as: 'Bytes' })
    for (const i of [0, 2, 4]) {
      const bit = (hash[i + 1]! + (hash[i]! << 8)) & 0x7ff
      bits[256 - 1 - Math.floor(bit / 8)]! |= 1 << (bit % 8)
    }
  }
  return `0x${Buffer.from(bits).toString('hex')}`
})()

const tx = (i: number) => ({ hash: `0x${i.toString(16).padStart(64, '0')}`, from: EMITTER, to: EMITTER, input: '0x' })
const block = (overrides: Record<string, unknown> = {}) => ({
  number: '0x10',
  hash: HASH,
  parentHash: OTHER,
  timestamp: '0x1',
  timestampMs: '0x3e8',
  logsBloom: BLOOM,
  transactions: [tx(1), tx(2)],
  ...overrides,
})
const log = (transaction: number, logIndex: number, blockHash = HASH): LogInput =>
  ({
    address: EMITTER,
    topics: [TOPIC],
    data: '0x',
    blockNumber: '0x10',
    blockHash,
    transactionHash: tx(transaction).hash,
    transactionIndex: `0x${(transaction - 1).toString(16)}`,
    logIndex: `0x${logIndex.toString(16)}`,
    removed: false,
  }) as unknown as LogInput
const receipt = (transaction: number, logs: LogInput[], blockHash = HASH) => ({
  transactionHash: tx(transaction).hash,
  blockHash,
  gasUsed: '0x5208',
  logs,
})

/** A node answering each batch from `answer` by method, counting the batches. */
function nodeAnswering(answer: (call: RpcCall) => unknown) {
  const batches: RpcCall[][] = []
  return {
    batches,
    rpc: {
      batch: async <T>(calls: readonly RpcCall[]) => {
        batches.push([...calls])
        return calls.map(answer) as T[]
      },
      request: async <T>(method: string, params: unknown[]) => answer({ method, params }) as T,
    },
  }
}

const everyLog = normalizeFilter({ addresses: [], topics: [] })
const emitterOnly = normalizeFilter({ addresses: [EMITTER], topics: [] })
const fetchLogs = async () => {
  throw new Error('not read apart here')
}

describe('the tip poll', () => {
  it('brings the new block with its receipts in one request where every log is followed', async () => {
    const node = nodeAnswering((call) =>
      call.method === 'eth_getBlockByNumber' ? block() : [receipt(1, [log(1, 0), log(1, 1)]), receipt(2, [log(2, 2)])],
    )
    const polled = await createTipReader({ rpc: node.rpc, fetchLogs }).poll([everyLog])
    expect(node.batches).toHaveLength(1)
    expect(node.batches[0]!.map((call) => call.method)).toEqual(['eth_getBlockByNumber', 'eth_getBlockReceipts'])
    expect(polled?.block.hash).toBe(HASH)
    expect(polled?.reads?.logs[0]!.map((l) => l.logIndex)).toEqual(['0x0', '0x1', '0x2'])
    expect(polled?.reads?.gasUsed.get(tx(2).hash)).toBe(21_000)
  })

  it('keeps no reads from receipts of another block or missing a transaction', async () => {
    for (const receipts of [[receipt(1, [log(1, 0, OTHER)], OTHER), receipt(2, [], OTHER)], [receipt(1, [log(1, 0)])]]) {
      const node = nodeAnswering((call) => (call.method === 'eth_getBlockByNumber' ? block() : receipts))
      const polled = await createTipReader({ rpc: node.rpc, fetchLogs }).poll([everyLog])
      expect(polled?.block.hash).toBe(HASH)
      expect(polled?.reads).toBeUndefined()
    }
  })

  it('with a filter, keeps the logs of latest only where they are the polled block’s, or its bloom rules them out', async () => {
    const poll = async (logs: LogInput[], logsBloom: string) => {
      const node = nodeAnswering((call) => (call.method === 'eth_getBlockByNumber' ? block({ logsBloom }) : logs))
      const polled = await createTipReader({ rpc: node.rpc, fetchLogs }).poll([emitterOnly])
      expect(node.batches[0]!.map((call) => call.method)).toEqual(['eth_getBlockByNumber', 'eth_getLogs'])
      return polled?.reads
    }
    expect((await poll([log(1, 0)], BLOOM))?.logs).toEqual([[log(1, 0)]])
    // `latest` read by eth_getLogs was another block.
    expect(await poll([log(1, 0, OTHER)], BLOOM)).toBeUndefined()
    // No log, and the bloom says the block may hold some: perhaps eth_getLogs read the block before.
    expect(await poll([], BLOOM)).toBeUndefined()
    expect((await poll([], EMPTY_BLOOM))?.logs).toEqual([[]])
  })

  it('polls plainly from then on when the node refuses the combined poll but answers a plain one', async () => {
    let refused = 0
    const node = nodeAnswering((call) => (call.method === 'eth_getBlockByNumber' ? block() : []))
    const rpc = {
      ...node.rpc,
      batch: async <T>(calls: readonly RpcCall[]): Promise<T[]> => {
        refused++
        throw Object.assign(new Error(`the method ${calls[1]?.method} does not exist`), { code: -32601, name: 'RpcRequestError' })
      },
    }
    const reader = createTipReader({ rpc, fetchLogs })
    expect((await reader.poll([everyLog]))?.block.hash).toBe(HASH)
    expect((await reader.poll([everyLog]))?.reads).toBeUndefined()
    expect(refused).toBe(1)
  })
})

describe('bloomMayMatch', () => {
  it('says whether a block may hold a log of the filter', () => {
    expect(bloomMayMatch(BLOOM, emitterOnly)).toBe(true)
    expect(bloomMayMatch(BLOOM, normalizeFilter({ addresses: [EMITTER], topics: [TOPIC] }))).toBe(true)
    expect(bloomMayMatch(BLOOM, normalizeFilter({ addresses: [`0x${'33'.repeat(20)}`], topics: [] }))).toBe(false)
    expect(bloomMayMatch(EMPTY_BLOOM, everyLog)).toBe(true)
    expect(bloomMayMatch(EMPTY_BLOOM, emitterOnly)).toBe(false)
    expect(bloomMayMatch(undefined, emitterOnly)).toBe(true)
  })
})
