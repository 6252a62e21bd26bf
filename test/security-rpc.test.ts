/**
 * The node's answers bounded and checked: an answer above RPC_MAX_RESPONSE_BYTES is cut off unread and
 * its range split; logs outside the requested address, topics or blocks are a bad answer, asked for
 * again and never stored. A fake node over HTTP for what anvil never does (200 MB streamed, never built
 * in memory), and a backfill through a proxy in front of anvil that slips foreign logs into answers.
 */
import { createServer, type ServerResponse } from 'node:http'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { createRpcClient, getLogs, GetLogsError, type GetLogsSplitEvent } from '../src/rpc/index.js'
import { DEFAULT_MAX_RESPONSE_BYTES } from '../src/config/limits.js'
import { startFaultProxy } from '../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode } from './helpers/compare.js'
import { runTs } from '../harness/processes.js'
import { buildAttributedChain, createCleanups, mineEmpty, sharedEnvironment } from './faults/helpers/faultChain.js'

const cleanups = createCleanups()
afterAll(() => cleanups.run())

const ADDRESS = `0x${'ab'.repeat(20)}` as Address
const OTHER = `0x${'cd'.repeat(20)}`
const TOPIC = `0x${'01'.repeat(32)}` as const
const hex = (n: number) => `0x${n.toString(16)}`

type Call = { id: number; method: string; params: [{ fromBlock: string; toBlock: string }] | unknown[] }
/** How a fake node answers one `eth_getLogs` range: the logs, or a body streamed to this many bytes. */
type LogsAnswer = { logs: object[] } | { streamBytes: number }

/** A node over HTTP whose `eth_getLogs` answers `answer` decides; headers exist for every block. */
async function fakeNode(answer: (fromBlock: number, toBlock: number, attempt: number) => LogsAnswer) {
  const stats = { getLogs: [] as [number, number][], streamed: [] as number[] }
  const server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      const parsed = JSON.parse(body) as Call | Call[]
      const calls = [parsed].flat()
      const results: unknown[] = []
      for (const call of calls) {
        if (call.method === 'eth_getBlockByNumber') results.push({ number: (call.params as string[])[0], hash: `0x${'11'.repeat(32)}` })
        if (call.method !== 'eth_getLogs') continue
        const { fromBlock, toBlock } = (call.params as [{ fromBlock: string; toBlock: string }])[0]
        const range: [number, number] = [Number(fromBlock), Number(toBlock)]
        stats.getLogs.push(range)
        const decided = answer(range[0], range[1], stats.getLogs.filter(([a, b]) => a === range[0] && b === range[1]).length)
        if ('streamBytes' in decided) return void stream(response, decided.streamBytes, stats)
        results.push(decided.logs)
      }
      const answers = calls.map((call, i) => ({ jsonrpc: '2.0', id: call.id, result: results[i] }))
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.add(() => new Promise((resolve) => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, stats }
}

/** A JSON-RPC answer of `bytes` bytes, written chunk by chunk as the client takes them (chunked, no length). */
function stream(response: ServerResponse, bytes: number, stats: { streamed: number[] }) {
  const chunk = Buffer.alloc(1024 * 1024, ' ')
  let sent = 0
  let stopped = false
  response.on('close', () => (stopped = true))
  response.writeHead(200, { 'content-type': 'application/json' })
  response.write('[{"jsonrpc":"2.0","id":0,"result":[')
  const more = () => {
    while (!stopped && sent < bytes) {
      sent += chunk.length
      if (!response.write(chunk)) return void response.once('drain', more)
    }
    stats.streamed.push(sent)
    if (!stopped) response.end(']}]')
  }
  response.on('close', () => stats.streamed.push(sent))
  more()
}

const log = (block: number, address: string = ADDRESS, topic: string = TOPIC) => ({
  address,
  topics: [topic],
  data: '0x',
  blockNumber: hex(block),
  blockHash: `0x${'11'.repeat(32)}`,
  transactionHash: `0x${block.toString(16).padStart(64, '0')}`,
  transactionIndex: '0x0',
  logIndex: '0x0',
  removed: false,
})
const logsOf = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => log(from + i))
const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 }

describe('RPC_MAX_RESPONSE_BYTES', () => {
  it('cuts a 200 MB answer off at the default limit, unread beyond it, and splits the range until the parts fit', async () => {
    const node = await fakeNode((from, to) => (to - from + 1 > 5 ? { streamBytes: 200 * 1024 * 1024 } : { logs: logsOf(from, to) }))
    const splits: GetLogsSplitEvent[] = []
    const logs = await getLogs(
      createRpcClient({ url: node.url }),
      { fromBlock: 0, toBlock: 9, address: ADDRESS, maxBlocks: 10 },
      { onSplit: (event) => splits.push(event) },
    )
    expect(logs.map((entry) => Number(entry.blockNumber))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(splits).toEqual([{ fromBlock: 0, toBlock: 9, parts: 2, reason: { kind: 'halve', pattern: 'response-body-too-large' } }])
    expect(node.stats.getLogs).toEqual([
      [0, 9],
      [0, 4],
      [5, 9],
    ])
    // The node was stopped well before its 200 MB: the client read no more than its limit and what was in flight.
    expect(node.stats.streamed[0]).toBeLessThan(200 * 1024 * 1024)
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(149_925_000)
  })

  it('is read from the environment, with one clear line for a bad value', () => {
    expect(loadConfig({}).rpcMaxResponseBytes).toBe(DEFAULT_MAX_RESPONSE_BYTES)
    expect(loadConfig({ RPC_MAX_RESPONSE_BYTES: '1048576' }).rpcMaxResponseBytes).toBe(1_048_576)
    expect(() => loadConfig({ RPC_MAX_RESPONSE_BYTES: '10' })).toThrow(
      'invalid RPC_MAX_RESPONSE_BYTES="10": expected an integer from 65536 to 536870912',
    )
  })

  it('refuses at once an answer whose Content-Length is over the limit', async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) })
      response.write('{')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.add(
      () =>
        new Promise((resolve) => {
          server.closeAllConnections()
          server.close(resolve)
        }),
    )
    const client = createRpcClient({
      url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      maxResponseBytes: 1024 * 1024,
    })
    await expect(client.request('eth_getLogs', [{}])).rejects.toMatchObject({
      name: 'ResponseBodyTooLargeError',
      maxSize: 1_048_576,
      size: 10 * 1024 * 1024,
    })
  })
})

describe('logs outside the request', () => {
  for (const [what, wrong] of [
    ['another address', (from: number) => log(from, OTHER as Address)],
    ['another topic', (from: number) => log(from, ADDRESS, `0x${'02'.repeat(32)}`)],
    ['a block outside the range', (_from: number) => log(1_000)],
  ] as const) {
    it(`are a bad answer, asked for again: ${what}`, async () => {
      // The first two answers carry the stray log; the third is right.
      const node = await fakeNode((from, to, attempt) => ({ logs: attempt <= 2 ? [...logsOf(from, to), wrong(from)] : logsOf(from, to) }))
      const logs = await getLogs(createRpcClient({ url: node.url }), {
        fromBlock: 0,
        toBlock: 3,
        address: ADDRESS,
        topics: [TOPIC],
        maxBlocks: 10,
        retry: FAST_RETRY,
      })
      expect(logs).toEqual(logsOf(0, 3))
      expect(node.stats.getLogs).toEqual([
        [0, 3],
        [0, 3],
        [0, 3],
      ])
    })
  }

  it('fail the call, retryable, when the node keeps sending them', async () => {
    const node = await fakeNode((from) => ({ logs: [log(from, OTHER as Address)] }))
    const failure = await getLogs(createRpcClient({ url: node.url }), {
      fromBlock: 7,
      toBlock: 7,
      address: [ADDRESS],
      maxBlocks: 1,
      retry: FAST_RETRY,
    }).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(GetLogsError)
    expect(failure).toMatchObject({ retryable: true, reason: { kind: 'retry', pattern: 'inconsistent-answer' } })
    expect((failure as GetLogsError).details).toMatch(/a log of 0xcdcd.* in block 0x7 was not asked for \(address\)/)
  })
})

describe('a backfill through a node that slips in foreign logs', () => {
  let anvil: Anvil
  let emitter: Address
  let range: [number, number]

  beforeAll(async () => {
    anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    const chain = await buildAttributedChain(anvil.url, { blocks: 12, txsPerBlock: 2, logsPerTx: 3 })
    emitter = chain.emitter
    await mineEmpty(anvil.url, 2)
    range = [0, Number(chain.toBlock) + 2]
  })

  it('stores exactly the node’s logs of the indexed address, none of the foreign ones', async () => {
    const proxy = await startFaultProxy({ upstream: anvil.url, faults: { eth_getLogs: { foreignLogs: { probability: 0.5 } } }, seed: 7 })
    cleanups.add(() => proxy.stop())
    const { pool, env } = await sharedEnvironment(cleanups, proxy.url, { CHUNK_BLOCKS: '4', INDEX_ADDRESSES: emitter })
    const result = await runTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
    expect(result.code, result.output).toBe(0)
    expect(proxy.stats.faults.eth_getLogs?.foreignLogs).toBeGreaterThan(0)
    await expectIndexMatchesNode(pool, anvil.url, range, { address: [emitter] })
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM logs WHERE address <> $1`, [emitter.toLowerCase()])
    expect(rows[0].n).toBe(0)
  })
})
