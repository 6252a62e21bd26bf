import type { Address, Hex } from 'viem'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import {
  createRpcClient,
  getBlockNumber,
  getChainId,
  getLogs,
  GetLogsError,
  type GetLogsBackoffEvent,
  type GetLogsHooks,
  type GetLogsSplitEvent,
  type RpcClient,
  type RpcLog,
  type RpcRequestEvent,
} from '../src/rpc/index.js'
import { startFaultProxy, type FaultProxy, type Faults } from '../harness/fixtures/faultProxy.js'

const TOPIC = `0x${'ab'.repeat(32)}` as const
/**
 * Runtime: copy calldata to memory, then LOG1(TOPIC), LOG2(TOPIC, block number) and LOG0, each with
 * the calldata as data: three logs per call, as big as the calldata.
 */
const RUNTIME = `365f5f37 7f${TOPIC.slice(2)} 365fa1 43 7f${TOPIC.slice(2)} 365fa2 365fa0 00`.replace(/ /g, '')
/** Initcode: CODECOPY the runtime (which follows these 10 bytes) to memory and RETURN it. */
const INITCODE = `0x60${byteHex(RUNTIME.length / 2)}600a5f3960${byteHex(RUNTIME.length / 2)}5ff3${RUNTIME}` as Hex
/** Fast retries: the proxy's faults are immediate, waiting longer proves nothing. */
const FAST_RETRY = { baseDelayMs: 2, maxDelayMs: 50 }
/** viem's default response limit, which a big chunk must get past. */
const VIEM_DEFAULT_MAX_BODY = 10_485_760

let anvil: Anvil
let node: RpcClient
let proxy: FaultProxy
let emitter: Address
/** The blocks of small logs the fault tests read; big logs come after. */
let head: number
let bigRange: { fromBlock: number; toBlock: number }
let expected: RpcLog[]

function byteHex(n: number): string {
  return n.toString(16).padStart(2, '0')
}

function hex(n: number): Hex {
  return `0x${n.toString(16)}`
}

async function send(from: Address, data: Hex, gas?: number): Promise<Hex> {
  return node.request<Hex>('eth_sendTransaction', [{ from, to: emitter, data, ...(gas ? { gas: hex(gas) } : {}) }])
}

/** Mines the block it is in (automine is off: anvil's automine reports receipts a moment late). */
async function mine(): Promise<number> {
  await node.request('evm_mine')
  return Number(await node.request<Hex>('eth_blockNumber'))
}

/** A chain of uneven density: blocks with 0–4 emitting transactions, runs of empty blocks. */
async function buildChain(from: Address) {
  await node.request('evm_setAutomine', [false])
  const deploy = await node.request<Hex>('eth_sendTransaction', [{ from, data: INITCODE }])
  await mine()
  emitter = (await node.request<{ contractAddress: Address }>('eth_getTransactionReceipt', [deploy])).contractAddress
  for (let block = 0; block < 90; block++) {
    for (let tx = 0; tx < block % 5; tx++) await send(from, `0x${(block * 8 + tx + 1).toString(16).padStart(8, '0')}`)
    head = await mine()
    if (block % 10 === 9) await node.request('anvil_mine', [hex(block)])
  }
  head = Number(await node.request<Hex>('eth_blockNumber'))
  expected = await node.request<RpcLog[]>('eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(head) }])
}

/** 16 calls, three logs each carrying 120 kB of calldata: one response of ~11.5 MB. */
async function addBigLogs(from: Address) {
  const data = `0x${'5a'.repeat(120_000)}` as Hex
  for (let i = 0; i < 16; i++) {
    await send(from, data, 10_000_000)
    bigRange = { fromBlock: head + 1, toBlock: await mine() }
  }
}

beforeAll(async () => {
  anvil = await startAnvil()
  node = createRpcClient({ url: anvil.url })
  const [from] = await node.request<Address[]>('eth_accounts')
  await buildChain(from!)
  await addBigLogs(from!)
  proxy = await startFaultProxy({ upstream: anvil.url, seed: 7 })
})

afterAll(async () => {
  await proxy?.stop()
  await anvil?.stop()
})

beforeEach(() => {
  proxy.setFaults({})
  proxy.resetStats()
})

function throughProxy(timeoutMs?: number) {
  return createRpcClient({ url: proxy.url, timeoutMs })
}

/** Records what the hooks saw. */
function recordHooks() {
  const events = { splits: [] as GetLogsSplitEvent[], backoffs: [] as GetLogsBackoffEvent[] }
  const hooks: GetLogsHooks = { onSplit: (e) => events.splits.push(e), onBackoff: (e) => events.backoffs.push(e) }
  return { events, hooks }
}

/** Every block of [0, head] was answered by exactly one successful request. */
function expectAnsweredOnce(from: number, to: number) {
  const answered = proxy.stats.getLogsRanges.filter((r) => r.fault === undefined).sort((a, b) => a.fromBlock - b.fromBlock)
  let next = from
  for (const range of answered) {
    expect(range.fromBlock).toBe(next)
    next = range.toBlock + 1
  }
  expect(next).toBe(to + 1)
}

describe('getLogs behind a faulty provider', () => {
  it('the chain has logs spread unevenly over many blocks', () => {
    expect(head).toBeGreaterThan(400)
    expect(expected.length).toBeGreaterThan(400)
  })

  it('asks at most maxBlocks per request and returns what the node returns', async () => {
    let counted = 0
    const logs = await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 100 }, { onRange: (e) => (counted += e.logs) })
    expect(logs).toEqual(expected)
    expect(counted).toBe(expected.length)
    expect(proxy.stats.getLogsRanges.every((r) => r.toBlock - r.fromBlock < 100)).toBe(true)
    expectAnsweredOnce(0, head)
  })

  it.each([
    ['alchemy', 40],
    ['infura', 33],
  ] as const)('follows a suggested range (%s style)', async (style, maxBlocks) => {
    proxy.setFaults({ eth_getLogs: { suggestedRange: { maxBlocks, style } } })
    const { events, hooks } = recordHooks()
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 1000, retry: FAST_RETRY }, hooks)).toEqual(expected)
    expect(proxy.faultCount('suggestedRange')).toBeGreaterThan(0)
    expect(events.splits.every((s) => s.reason.kind === 'suggested-range')).toBe(true)
    expectAnsweredOnce(0, head)
  })

  it('remembers a fixed cap for the rest of the call', async () => {
    proxy.setFaults({ eth_getLogs: { fixedCap: { maxBlocks: 25 } } })
    const { events, hooks } = recordHooks()
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 100, retry: FAST_RETRY }, hooks)).toEqual(expected)
    // Refused once; every later range was cut to the cap before it was asked for.
    expect(proxy.faultCount('fixedCap')).toBe(1)
    expect(events.splits).toEqual([
      expect.objectContaining({ fromBlock: 0, toBlock: 99, parts: 4, reason: { kind: 'cap', maxBlocks: 25, pattern: 'max-is' } }),
    ])
    expectAnsweredOnce(0, head)
  })

  it.each([
    ['-32602 without a hint', { code: -32602, message: 'invalid block range' }],
    ['-32000 block range too large', { code: -32000, message: 'block range too large' }],
  ])('halves ranges refused %s', async (_, refusal) => {
    proxy.setFaults({ eth_getLogs: { hintlessCap: { maxBlocks: 30, ...refusal } } })
    const { events, hooks } = recordHooks()
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 200, retry: FAST_RETRY }, hooks)).toEqual(expected)
    expect(proxy.faultCount('hintlessCap')).toBeGreaterThan(0)
    expect(events.splits.every((s) => s.reason.kind === 'halve' && s.parts === 2)).toBe(true)
    expectAnsweredOnce(0, head)
  })

  it('halves ranges whose result has too many logs', async () => {
    proxy.setFaults({ eth_getLogs: { maxResults: 20 } })
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 500, retry: FAST_RETRY })).toEqual(expected)
    expect(proxy.faultCount('maxResults')).toBeGreaterThan(0)
    expectAnsweredOnce(0, head)
  })

  it('halves ranges whose response is too big', async () => {
    proxy.setFaults({ eth_getLogs: { maxResponseBytes: 8_000 } })
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 500, retry: FAST_RETRY })).toEqual(expected)
    expect(proxy.faultCount('maxResponseBytes')).toBeGreaterThan(0)
    expectAnsweredOnce(0, head)
  })

  it('waits out HTTP 429 as long as Retry-After says, without splitting', async () => {
    proxy.setFaults({ eth_getLogs: { rateLimit: { probability: 0.4, retryAfterSeconds: 0 } } })
    const { events, hooks } = recordHooks()
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 50, retry: FAST_RETRY }, hooks)).toEqual(expected)
    expect(proxy.faultCount('rateLimit')).toBeGreaterThan(0)
    expect(events.backoffs.length).toBe(proxy.faultCount('rateLimit'))
    expect(events.backoffs.every((b) => b.reason.kind === 'backoff' && b.delayMs === 0)).toBe(true)
    expect(events.splits).toEqual([])
  })

  it('narrows ranges whose answer is slower than the timeout', async () => {
    proxy.setFaults({ eth_getLogs: { slow: { times: 2, delayMs: 3_000 } } })
    const { events, hooks } = recordHooks()
    expect(await getLogs(throughProxy(1_000), { fromBlock: 0, toBlock: head, maxBlocks: 200, retry: FAST_RETRY }, hooks)).toEqual(expected)
    expect(proxy.faultCount('slow')).toBe(2)
    expect(events.splits.some((s) => s.reason.pattern === 'timeout')).toBe(true)
  })

  it('asks again after a malformed JSON body', async () => {
    proxy.setFaults({ eth_getLogs: { malformed: { probability: 0.3 } } })
    const { events, hooks } = recordHooks()
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 50, retry: FAST_RETRY }, hooks)).toEqual(expected)
    expect(proxy.faultCount('malformed')).toBeGreaterThan(0)
    expect(events.backoffs.some((b) => b.reason.pattern === 'malformed-json')).toBe(true)
  })

  it('backs off on HTTP 503', async () => {
    proxy.setFaults({ eth_getLogs: { unavailable: { probability: 0.3 } } })
    const { events, hooks } = recordHooks()
    expect(await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 50, retry: FAST_RETRY }, hooks)).toEqual(expected)
    expect(proxy.faultCount('unavailable')).toBeGreaterThan(0)
    expect(events.backoffs.some((b) => b.reason.pattern === 'http-503')).toBe(true)
  })

  it('survives every fault at once with several requests in flight', async () => {
    const faults: Faults = {
      eth_getLogs: {
        fixedCap: { maxBlocks: 60, message: 'eth_getLogs is limited to a {max} block range' },
        maxResults: 25,
        rateLimit: { probability: 0.1, retryAfterSeconds: 0 },
        malformed: { probability: 0.1 },
        unavailable: { probability: 0.1 },
      },
    }
    proxy.setFaults(faults)
    const logs = await getLogs(throughProxy(), {
      fromBlock: 0,
      toBlock: head,
      maxBlocks: 300,
      concurrency: 3,
      retry: { ...FAST_RETRY, maxBackoffs: 20 },
    })
    expect(logs).toEqual(expected)
    for (const fault of ['fixedCap', 'maxResults', 'rateLimit', 'malformed', 'unavailable'] as const)
      expect(proxy.faultCount(fault)).toBeGreaterThan(0)
    expectAnsweredOnce(0, head)
  })

  it('narrows a range that keeps failing down to one block, then throws a retryable error', async () => {
    proxy.setFaults({ eth_getLogs: { malformed: {} } })
    const { events, hooks } = recordHooks()
    const error = await getLogs(
      throughProxy(),
      { fromBlock: 10, toBlock: 13, maxBlocks: 100, retry: { ...FAST_RETRY, maxRetries: 1 } },
      hooks,
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(GetLogsError)
    expect(error).toMatchObject({
      fromBlock: 10,
      toBlock: 10,
      retryable: true,
      attempts: 2,
      reason: { kind: 'retry', pattern: 'malformed-json' },
    })
    expect(events.splits.map((s) => [s.fromBlock, s.toBlock])).toEqual([
      [10, 13],
      [10, 11],
    ])
  })

  it('gives up on a rate limit that outlasts its budget, retryable', async () => {
    proxy.setFaults({ eth_getLogs: { rateLimit: { retryAfterSeconds: 0 } } })
    const error = await getLogs(throughProxy(), {
      fromBlock: 0,
      toBlock: 99,
      maxBlocks: 100,
      retry: { ...FAST_RETRY, maxBackoffs: 3 },
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'GetLogsError', fromBlock: 0, toBlock: 99, retryable: true, reason: { kind: 'backoff' } })
    expect(proxy.faultCount('rateLimit')).toBe(4)
  })

  it('fails at once, not retryable, on a request the node cannot serve', async () => {
    const error = await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 100, address: '0x12' as Address }).catch(
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ name: 'GetLogsError', retryable: false, reason: { kind: 'fatal', pattern: 'invalid-params' } })
    expect(proxy.stats.calls.eth_getLogs).toBe(1)
  })

  it('stops when aborted while waiting', async () => {
    proxy.setFaults({ eth_getLogs: { unavailable: { retryAfterSeconds: 20 } } })
    const controller = new AbortController()
    const reason = new Error('shutting down')
    const pending = getLogs(
      throughProxy(),
      { fromBlock: 0, toBlock: head, maxBlocks: 100, signal: controller.signal },
      { onBackoff: () => controller.abort(reason) },
    )
    await expect(pending).rejects.toBe(reason)
    expect(proxy.faultCount('unavailable')).toBe(1)
  })

  it('filters by address and topics', async () => {
    const blocks = expected.filter((log) => log.topics.length === 2).map((log) => log.topics[1]!)
    const topics = [TOPIC, [blocks[3]!, blocks[40]!]] as const
    const direct = await node.request<RpcLog[]>('eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(head), address: emitter, topics }])
    expect(direct.length).toBeGreaterThan(0)
    proxy.setFaults({ eth_getLogs: { fixedCap: { maxBlocks: 16 } } })
    expect(
      await getLogs(throughProxy(), { fromBlock: 0, toBlock: head, maxBlocks: 200, address: [emitter], topics, retry: FAST_RETRY }),
    ).toEqual(direct)
  })

  it('passes pending through as one request', async () => {
    proxy.setFaults({ eth_getLogs: { rateLimit: { times: 1, retryAfterSeconds: 0 }, fixedCap: { maxBlocks: 1 } } })
    const direct = await node.request<RpcLog[]>('eth_getLogs', [{ fromBlock: 'pending', toBlock: 'pending' }])
    expect(await getLogs(throughProxy(), { fromBlock: 'pending', toBlock: 'pending', maxBlocks: 100, retry: FAST_RETRY })).toEqual(direct)
    expect(proxy.stats.calls.eth_getLogs).toBe(2)
    expect(proxy.faultCount('rateLimit')).toBe(1)
  })

  it('reads a chunk bigger than viem’s default response limit', async () => {
    const logs = await getLogs(throughProxy(), { ...bigRange, maxBlocks: 1999 })
    expect(logs).toHaveLength(48)
    expect(JSON.stringify(logs).length).toBeGreaterThan(VIEM_DEFAULT_MAX_BODY)
    expect(proxy.stats.calls.eth_getLogs).toBe(1)
  })
})

describe('createRpcClient', () => {
  it('batches calls into one HTTP request and reports it', async () => {
    const events: RpcRequestEvent[] = []
    const client = createRpcClient({ url: proxy.url, onRequest: (e) => events.push(e) })
    const hashes = [...new Set(expected.map((log) => log.transactionHash!))].slice(0, 100)
    const txs = await client.batch<{ hash: Hex; input: Hex }>(
      hashes.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })),
    )
    expect(txs.map((tx) => tx.hash)).toEqual(hashes)
    expect(proxy.stats.httpRequests).toBe(1)
    expect(proxy.stats.calls.eth_getTransactionByHash).toBe(hashes.length)
    expect(events).toEqual([expect.objectContaining({ method: 'eth_getTransactionByHash', calls: hashes.length, ok: true })])
  })

  it('rejects a batch with the first failed call, classified', async () => {
    const events: RpcRequestEvent[] = []
    const client = createRpcClient({ url: proxy.url, onRequest: (e) => events.push(e) })
    const error = await client.batch([{ method: 'eth_blockNumber' }, { method: 'eth_nope' }]).catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'RpcRequestError', code: -32601 })
    expect(events).toEqual([
      expect.objectContaining({ method: 'eth_blockNumber', calls: 1, ok: false, errorKind: 'fatal' }),
      expect.objectContaining({ method: 'eth_nope', calls: 1, ok: false, errorKind: 'fatal' }),
    ])
  })

  it('reports failed requests by error kind', async () => {
    proxy.setFaults({ eth_blockNumber: { rateLimit: { times: 1 } } })
    const events: RpcRequestEvent[] = []
    const client = createRpcClient({ url: proxy.url, onRequest: (e) => events.push(e) })
    await expect(client.request('eth_blockNumber')).rejects.toMatchObject({ name: 'HttpRequestError', status: 429 })
    expect(await client.request('eth_blockNumber')).toBe(hex(bigRange.toBlock))
    expect(events.map((e) => [e.method, e.ok, e.errorKind])).toEqual([
      ['eth_blockNumber', false, 'backoff'],
      ['eth_blockNumber', true, undefined],
    ])
  })

  it('serves the chain id and the head as numbers, one call each', async () => {
    const client = throughProxy()
    expect(await getChainId(client)).toBe(31337)
    expect(await getBlockNumber(client)).toBe(bigRange.toBlock)
    expect(proxy.stats.calls.eth_chainId).toBe(1)
    expect(proxy.stats.calls.eth_blockNumber).toBe(1)
  })
})
