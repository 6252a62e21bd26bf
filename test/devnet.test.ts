import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { concat, createWalletClient, http, keccak256, numberToHex, toHex, type Address, type Hex, type LocalAccount } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'
import WebSocket from 'ws'
import {
  createDevnet,
  DEPOSITOR,
  divergenceOf,
  DROP_TRANSACTION_METHOD,
  SYSTEM_DEPOSIT_TARGETS,
  ZERO_HASH,
  type Devnet,
} from '../harness/devnet/index.js'
import { divergedLogs } from '../harness/devnet/preconf.js'

const MNEMONIC = 'test test test test test test test test test test test junk'
const ECHO_TOPIC = keccak256(toHex('Echo(bytes)'))
// Runtime: copy calldata to memory, LOG3(data = calldata, topics = [ECHO_TOPIC, NUMBER, TIMESTAMP]).
// Init code: CODECOPY the runtime that follows its 11 bytes and RETURN it.
const ECHO_RUNTIME = concat(['0x36600060003742437f', ECHO_TOPIC, '0x366000a300'])
const ECHO_INIT = concat(['0x60', numberToHex((ECHO_RUNTIME.length - 2) / 2, { size: 1 }), '0x80600b6000396000f3', ECHO_RUNTIME])
const MAX_FEE = 50_000_000_000n
const TIP = 1_000_000_000n
const WAIT_MS = 15_000

type Log = {
  address: Address
  topics: Hex[]
  data: Hex
  blockHash: Hex
  blockNumber: Hex
  blockTimestamp?: Hex
  transactionHash: Hex
  transactionIndex: Hex
  logIndex: Hex
  removed: boolean
}

type RpcAnswer = { id: unknown; result?: unknown; error?: { code: number; message: string } }

async function post(url: string, body: unknown): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return res.json()
}

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const answer = (await post(url, { jsonrpc: '2.0', id: 1, method, params })) as RpcAnswer
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`)
  return answer.result as T
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + WAIT_MS
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`condition not met within ${WAIT_MS} ms: ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const account = (index: number): LocalAccount => mnemonicToAccount(MNEMONIC, { addressIndex: index })

function sender(devnet: Devnet, index: number) {
  const client = createWalletClient({ account: account(index), chain: foundry, transport: http(devnet.url) })
  return (parameters: { to?: Address; data: Hex; maxFeePerGas?: bigint; gas?: bigint }) =>
    client.sendTransaction({
      to: parameters.to,
      data: parameters.data,
      gas: parameters.gas ?? 100_000n,
      maxFeePerGas: parameters.maxFeePerGas ?? MAX_FEE,
      maxPriorityFeePerGas: TIP,
    })
}

const pendingLogs = (devnet: Devnet, filter: Record<string, unknown> = {}) =>
  rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: 'pending', toBlock: 'pending', ...filter }])

const logsOf = (logs: Log[], hashes: Hex[]) => logs.filter((log) => hashes.includes(log.transactionHash))

async function deployEcho(devnet: Devnet): Promise<Address> {
  const hash = await sender(devnet, 9)({ data: ECHO_INIT, gas: 200_000n })
  await devnet.mine()
  // From anvil itself: a devnet whose canonical chain lags has no receipt for it yet.
  const receipt = await rpc<{ contractAddress: Address; status: Hex }>(devnet.anvilUrl, 'eth_getTransactionReceipt', [hash])
  expect(receipt.status).toBe('0x1')
  return receipt.contractAddress
}

describe('devnet pre-confirmed layer', () => {
  let devnet: Devnet
  let echo: Address

  beforeAll(async () => {
    devnet = await createDevnet({ profile: 'op', blockTimeMs: 0 })
    echo = await deployEcho(devnet)
  })
  afterAll(async () => {
    await devnet?.stop()
  })

  it('serves a pool log as pending the way Base does, then mines it with the same content', async () => {
    const latest = BigInt(await rpc<Hex>(devnet.url, 'eth_blockNumber'))
    const hash = await sender(devnet, 0)({ to: echo, data: '0xc0ffee' })

    const [served] = await waitFor(
      async () => logsOf(await pendingLogs(devnet), [hash]),
      (logs) => logs.length === 1,
    )
    expect(served).toMatchObject({
      address: echo,
      data: '0xc0ffee',
      blockHash: ZERO_HASH,
      blockNumber: toHex(latest + 1n),
      transactionHash: hash,
      removed: false,
    })
    // The contract logs block.number and block.timestamp: the simulation ran as the pending block.
    expect(BigInt(served!.topics[1]!)).toBe(latest + 1n)
    expect(served!.topics[2]).toBe(toHex(BigInt(served!.blockTimestamp!), { size: 32 }))
    expect(await rpc<Hex>(devnet.url, 'eth_blockNumber')).toBe(toHex(latest))

    const mined = await devnet.mine()
    expect(mined.number).toBe(latest + 1n)
    const canonical = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: toHex(mined.number) }])
    expect(canonical).toHaveLength(1)
    expect(canonical[0]).toEqual({ ...served, blockHash: mined.hash })
    expect(mined.timestamp).toBe(BigInt(served!.blockTimestamp!))

    // After a mine the next pending answer is already for the new block.
    const snapshot = await devnet.pending()
    expect(snapshot.number).toBe(mined.number + 1n)
    expect(await pendingLogs(devnet)).toEqual([])
  })

  it('orders pending logs as anvil mines them, with logIndex cumulative in the block, and filters them', async () => {
    const other = await deployEcho(devnet)
    // Arrival order differs from fee order: anvil mines by fee, so must the simulation.
    const low = await sender(devnet, 1)({ to: echo, data: '0x01', maxFeePerGas: 20_000_000_000n })
    const high = await sender(devnet, 2)({ to: other, data: '0x02', maxFeePerGas: 40_000_000_000n })
    const mid = await sender(devnet, 3)({ to: echo, data: '0x03', maxFeePerGas: 30_000_000_000n })

    const served = await waitFor(
      () => pendingLogs(devnet),
      (logs) => logs.length === 3,
    )
    expect(served.map((log) => log.transactionHash)).toEqual([high, mid, low])
    expect(served.map((log) => log.logIndex)).toEqual(['0x0', '0x1', '0x2'])
    expect(served.map((log) => log.transactionIndex)).toEqual(['0x0', '0x1', '0x2'])

    const byAddress = await pendingLogs(devnet, { address: [echo.toUpperCase().replace('0X', '0x')] })
    expect(byAddress.map((log) => log.transactionHash)).toEqual([mid, low])
    const byTopic = await pendingLogs(devnet, { topics: [ECHO_TOPIC, null, null, null] })
    expect(byTopic).toEqual([])
    const byTopicList = await pendingLogs(devnet, { address: other, topics: [[keccak256('0x'), ECHO_TOPIC]] })
    expect(byTopicList.map((log) => log.transactionHash)).toEqual([high])

    const mined = await devnet.mine()
    const canonical = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: toHex(mined.number) }])
    expect(canonical).toEqual(served.map((log) => ({ ...log, blockHash: mined.hash })))
  })

  it('answers an earlier fromBlock up to pending with the historical part and then the pending part', async () => {
    const first = await sender(devnet, 4)({ to: echo, data: '0xaa' })
    const mined = await devnet.mine()
    const second = await sender(devnet, 4)({ to: echo, data: '0xbb' })

    const logs = await waitFor(
      () => rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: 'pending', address: echo }]),
      (answer) => answer.length === 2,
    )
    expect(logs.map((log) => [log.transactionHash, log.blockNumber, log.blockHash])).toEqual([
      [first, toHex(mined.number), mined.hash],
      [second, toHex(mined.number + 1n), ZERO_HASH],
    ])
    await devnet.mine()
  })

  it('drops a pool transaction: its pending log disappears and it is never mined', async () => {
    const kept = await sender(devnet, 5)({ to: echo, data: '0x0a' })
    const dropped = await sender(devnet, 6)({ to: echo, data: '0x0b' })
    await waitFor(
      async () => logsOf(await pendingLogs(devnet), [kept, dropped]),
      (logs) => logs.length === 2,
    )

    expect(await rpc(devnet.url, DROP_TRANSACTION_METHOD, [dropped])).toBe(dropped)
    const after = await pendingLogs(devnet)
    expect(after.map((log) => log.transactionHash)).toEqual([kept])
    expect(after[0]!.logIndex).toBe('0x0')

    const mined = await devnet.mine()
    const canonical = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: toHex(mined.number) }])
    expect(canonical.map((log) => log.transactionHash)).toEqual([kept])
    expect(await rpc(devnet.url, 'eth_getTransactionByHash', [dropped])).toBeNull()
    expect(await rpc(devnet.url, 'eth_getTransactionReceipt', [dropped])).toBeNull()

    const again = await sender(devnet, 6)({ to: echo, data: '0x0c' })
    expect(await devnet.dropTransaction(again)).toBe(true)
    expect(await devnet.dropTransaction(again)).toBe(false)
  })

  it('proxies batches verbatim and passes pending nonce, balance and call through to anvil', async () => {
    const address = account(7).address
    const plain = (await post(devnet.url, [
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 'b', method: 'eth_no_such_method', params: [] },
    ])) as RpcAnswer[]
    expect(plain).toEqual([
      { jsonrpc: '2.0', id: 1, result: toHex(foundry.id) },
      { jsonrpc: '2.0', id: 'b', error: expect.objectContaining({ code: -32601 }) },
    ])

    const nonceBefore = BigInt(await rpc<Hex>(devnet.url, 'eth_getTransactionCount', [address, 'pending']))
    const hash = await sender(devnet, 7)({ to: echo, data: '0x77' })
    await waitFor(
      async () => logsOf(await pendingLogs(devnet), [hash]),
      (logs) => logs.length === 1,
    )
    const mixed = (await post(devnet.url, [
      { jsonrpc: '2.0', id: 1, method: 'eth_getTransactionCount', params: [address, 'pending'] },
      { jsonrpc: '2.0', id: 2, method: 'eth_getLogs', params: [{ fromBlock: 'pending', toBlock: 'pending', address: echo }] },
      { jsonrpc: '2.0', id: 3, method: 'eth_call', params: [{ to: echo, data: '0x' }, 'pending'] },
      { jsonrpc: '2.0', id: 4, method: 'eth_getBalance', params: [address, 'pending'] },
      { jsonrpc: '2.0', method: 'eth_chainId', params: [] },
    ])) as RpcAnswer[]
    expect(mixed.map((answer) => answer.id)).toEqual([1, 2, 3, 4])
    expect(BigInt(mixed[0]!.result as Hex)).toBe(nonceBefore + 1n)
    expect((mixed[1]!.result as Log[]).map((log) => log.transactionHash)).toEqual([hash])
    expect(mixed[2]!.result).toBe('0x')
    expect(BigInt(mixed[3]!.result as Hex)).toBeGreaterThan(0n)
    await devnet.mine()
  })

  it('publishes pending log deltas and new heads over WebSocket', async () => {
    const socket = new WebSocket(devnet.wsUrl)
    const messages: Array<{
      id?: number
      result?: unknown
      method?: string
      params?: { subscription: string; result: Log & { number?: Hex } }
    }> = []
    socket.on('message', (data) => messages.push(JSON.parse(data.toString())))
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['pendingLogs', { address: echo }] }))
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['newHeads'] }))
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'eth_subscribe', params: ['syncing'] }))
    const answers = await waitFor(
      async () => messages.filter((m) => m.id !== undefined),
      (found) => found.length === 3,
    )
    const logsId = answers.find((m) => m.id === 1)!.result
    const headsId = answers.find((m) => m.id === 2)!.result
    expect(answers.find((m) => m.id === 3)).toMatchObject({ error: { code: -32602 } })

    const first = await sender(devnet, 8)({ to: echo, data: '0x5151' })
    await waitFor(
      async () => messages.filter((m) => m.params?.subscription === logsId),
      (found) => found.length === 1,
    )
    const second = await sender(devnet, 8)({ to: echo, data: '0x5252' })
    const notes = await waitFor(
      async () => messages.filter((m) => m.params?.subscription === logsId).map((m) => m.params!.result),
      (found) => found.length === 2,
    )
    // One notification per new log, never a repeat of an earlier delta.
    expect(notes.map((log) => [log.transactionHash, log.data, log.blockHash, log.removed])).toEqual([
      [first, '0x5151', ZERO_HASH, false],
      [second, '0x5252', ZERO_HASH, false],
    ])

    const mined = await devnet.mine()
    const heads = await waitFor(
      async () => messages.filter((m) => m.params?.subscription === headsId).map((m) => m.params!.result),
      (found) => found.some((head) => head.number === toHex(mined.number)),
    )
    expect(heads.find((head) => head.number === toHex(mined.number))).toMatchObject({ hash: mined.hash })

    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'eth_unsubscribe', params: [logsId] }))
    await waitFor(
      async () => messages.find((m) => m.id === 4),
      (found) => found !== undefined,
    )
    expect(messages.find((m) => m.id === 4)!.result).toBe(true)
    socket.close()
  })

  it('simulates the pool up to a contract creation, which anvil 1.7 cannot simulate', async () => {
    const before = await sender(devnet, 0)({ to: echo, data: '0x0100', maxFeePerGas: 45_000_000_000n })
    const creation = await sender(devnet, 1)({ data: ECHO_INIT, gas: 200_000n, maxFeePerGas: 40_000_000_000n })
    const after = await sender(devnet, 2)({ to: echo, data: '0x0200', maxFeePerGas: 35_000_000_000n })

    const snapshot = await waitFor(
      () => devnet.pending(),
      (pending) => pending.transactions.length === 3,
    )
    expect(snapshot.transactions).toEqual([before, creation, after])
    expect(snapshot.unsimulated).toBe(2)
    expect((await pendingLogs(devnet)).map((log) => log.transactionHash)).toEqual([before])

    const mined = await devnet.mine()
    const canonical = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: toHex(mined.number) }])
    expect(canonical.map((log) => log.transactionHash)).toEqual([before, after])
  })

  it('reorgs: orphaned transactions vanish and pending follows the new head', async () => {
    const orphan = await sender(devnet, 3)({ to: echo, data: '0xdead' })
    const mined = await devnet.mine()
    const replaced = await devnet.reorg(1)
    expect(replaced.number).toBe(mined.number)
    expect(replaced.hash).not.toBe(mined.hash)
    const canonical = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: toHex(mined.number) }])
    expect(canonical.map((log) => log.transactionHash)).not.toContain(orphan)

    const snapshot = await devnet.pending()
    expect(snapshot.parentHash).toBe(replaced.hash)
    expect(snapshot.number).toBe(replaced.number + 1n)
  })
})

describe('devnet faults and options', () => {
  it('answers pending logs in no particular order when shuffling, and JSON-RPC errors when anvil is gone', async () => {
    const devnet = await createDevnet({ profile: 'op', blockTimeMs: 0, shuffle: true })
    try {
      const echo = await deployEcho(devnet)
      const hashes: Hex[] = []
      for (let index = 0; index < 6; index++) hashes.push(await sender(devnet, index)({ to: echo, data: toHex(index, { size: 1 }) }))
      const served = await waitFor(
        () => pendingLogs(devnet),
        (logs) => logs.length === 6,
      )
      const ordered = (await devnet.pending()).logs
      const byLogIndex = (logs: Log[]) => [...logs].sort((a, b) => Number(BigInt(a.logIndex) - BigInt(b.logIndex)))
      expect(byLogIndex(served)).toEqual(ordered)
      // Five answers all in block order would happen once in 720^5 if the order were random.
      const answers = [served, ...(await Promise.all([1, 2, 3, 4].map(() => pendingLogs(devnet))))]
      expect(answers.some((logs) => JSON.stringify(logs) !== JSON.stringify(ordered))).toBe(true)

      await devnet.anvil.stop()
      const broken = (await post(devnet.url, { jsonrpc: '2.0', id: 7, method: 'eth_blockNumber', params: [] })) as RpcAnswer
      expect(broken).toMatchObject({ id: 7, error: { code: -32603 } })
      const brokenPending = await waitFor(
        async () =>
          (await post(devnet.url, {
            jsonrpc: '2.0',
            id: 8,
            method: 'eth_getLogs',
            params: [{ fromBlock: 'pending', toBlock: 'pending' }],
          })) as RpcAnswer,
        (answer) => answer.error !== undefined,
      )
      expect(brokenPending).toMatchObject({ id: 8, error: { code: -32603 } })
      const garbage = await fetch(devnet.url, { method: 'POST', body: '{not json' })
      expect(await garbage.json()).toMatchObject({ error: { code: -32700 } })
    } finally {
      await devnet.stop()
    }
  })

  it('mines on its own every blockTimeMs', async () => {
    const devnet = await createDevnet({ profile: 'op', blockTimeMs: 500 })
    try {
      const start = BigInt(await rpc<Hex>(devnet.url, 'eth_blockNumber'))
      const hash = await sender(devnet, 0)({ to: '0x000000000000000000000000000000000000dEaD', data: '0x', gas: 21_000n })
      const receipt = await waitFor(
        () => rpc<{ blockNumber: Hex } | null>(devnet.url, 'eth_getTransactionReceipt', [hash]),
        (found) => found !== null,
      )
      expect(BigInt(receipt!.blockNumber)).toBeGreaterThan(start)
      const later = await waitFor(
        async () => BigInt(await rpc<Hex>(devnet.url, 'eth_blockNumber')),
        (number) => number >= BigInt(receipt!.blockNumber) + 2n,
      )
      const blocks = await Promise.all(
        [later - 2n, later - 1n, later].map((n) => rpc<{ timestamp: Hex }>(devnet.url, 'eth_getBlockByNumber', [toHex(n), false])),
      )
      const timestamps = blocks.map((block) => BigInt(block.timestamp))
      expect(timestamps[1]! - timestamps[0]!).toBeGreaterThan(0n)
      expect(timestamps[2]! - timestamps[1]!).toBeGreaterThan(0n)
    } finally {
      await devnet.stop()
    }
  })
})

describe('devnet pending window as a Base node serves it', () => {
  it('serves the blocks sealed above a lagging canonical head as pending, then as canonical once the node has them', async () => {
    const devnet = await createDevnet({ profile: 'op', blockTimeMs: 0, canonicalLag: 3 })
    try {
      const echo = await deployEcho(devnet)
      await sender(devnet, 3)({ to: echo, data: '0xcc' })
      await devnet.mine()
      const sealed: Array<{ hashes: Hex[]; block: Awaited<ReturnType<Devnet['mine']>> }> = []
      for (let b = 0; b < 3; b++) {
        const hashes = [await sender(devnet, 0)({ to: echo, data: toHex(b, { size: 1 }) })]
        if (b === 1) hashes.push(await sender(devnet, 1)({ to: echo, data: '0x11', maxFeePerGas: MAX_FEE / 2n }))
        sealed.push({ hashes, block: await devnet.mine() })
      }
      const pooled = await sender(devnet, 2)({ to: echo, data: '0x99' })
      const head = sealed[2]!.block.number
      const latest = head - 3n
      expect(BigInt(await rpc<Hex>(devnet.url, 'eth_blockNumber'))).toBe(latest)

      // The window spans four block numbers: three sealed blocks and the pool, each with its own logIndex count.
      const window = await waitFor(
        () => pendingLogs(devnet),
        (logs) => logs.length === 5,
      )
      expect(window.map((log) => [log.transactionHash, log.blockNumber, log.logIndex, log.blockHash])).toEqual([
        [sealed[0]!.hashes[0], toHex(head - 2n), '0x0', ZERO_HASH],
        [sealed[1]!.hashes[0], toHex(head - 1n), '0x0', ZERO_HASH],
        [sealed[1]!.hashes[1], toHex(head - 1n), '0x1', ZERO_HASH],
        [sealed[2]!.hashes[0], toHex(head), '0x0', ZERO_HASH],
        [pooled, toHex(head + 1n), '0x0', ZERO_HASH],
      ])

      // Nothing canonical is known above the node's head.
      expect(await rpc(devnet.url, 'eth_getBlockByNumber', [toHex(head - 2n), false])).toBeNull()
      expect(await rpc(devnet.url, 'eth_getBlockByNumber', ['latest', false])).toMatchObject({ number: toHex(latest) })
      expect(await rpc(devnet.url, 'eth_getBlockByHash', [sealed[2]!.block.hash, false])).toBeNull()
      expect(await rpc(devnet.url, 'eth_getTransactionReceipt', [sealed[2]!.hashes[0]])).toBeNull()
      expect(await rpc(devnet.url, 'eth_getTransactionByHash', [sealed[2]!.hashes[0]])).toMatchObject({
        blockHash: null,
        blockNumber: toHex(head),
      })
      expect(await rpc(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(head - 2n), toBlock: toHex(head) }])).toEqual([])
      expect(await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(latest - 1n), toBlock: 'latest' }])).toEqual(
        await rpc<Log[]>(devnet.anvilUrl, 'eth_getLogs', [{ fromBlock: toHex(latest - 1n), toBlock: toHex(latest) }]),
      )
      await expect(rpc(devnet.url, 'eth_getLogs', [{ blockHash: sealed[0]!.block.hash }])).rejects.toThrow('unknown block')

      // A mixed range: canonical logs to the node's head, then the whole pending window.
      const canonical = await rpc<Log[]>(devnet.anvilUrl, 'eth_getLogs', [{ fromBlock: '0x0', toBlock: toHex(latest) }])
      expect(canonical.length).toBeGreaterThan(0)
      const mixed = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: '0x0', toBlock: 'pending' }])
      expect(mixed).toEqual([...canonical, ...window])
      const fromWindow = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(head), toBlock: 'pending' }])
      expect(fromWindow).toEqual(window.slice(3))

      // One more block: the oldest of the window becomes canonical with the content it was served with.
      const next = await devnet.mine()
      expect(BigInt(await rpc<Hex>(devnet.url, 'eth_blockNumber'))).toBe(latest + 1n)
      const confirmed = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(latest + 1n), toBlock: toHex(latest + 1n) }])
      expect(confirmed).toEqual([{ ...window[0], blockHash: sealed[0]!.block.hash }])
      expect((await pendingLogs(devnet)).map((log) => log.blockNumber)).toEqual(
        [head - 1n, head - 1n, head, next.number].map((n) => toHex(n)),
      )
    } finally {
      await devnet.stop()
    }
  })

  it('serves diverging pending content for the chosen transactions: other data, or swapped with a neighbour', async () => {
    const devnet = await createDevnet({ profile: 'op', blockTimeMs: 0, divergence: 1 })
    try {
      const echo = await deployEcho(devnet)
      const hashes: Hex[] = []
      for (let index = 0; index < 8; index++) {
        hashes.push(
          await sender(devnet, index)({ to: echo, data: toHex(index + 1, { size: 2 }), maxFeePerGas: MAX_FEE - BigInt(index) * TIP }),
        )
      }
      const served = await waitFor(
        () => pendingLogs(devnet),
        (logs) => logs.length === hashes.length,
      )
      const mined = await devnet.mine()
      const sealed = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: toHex(mined.number) }])
      expect(sealed.map((log) => log.transactionHash)).toEqual(hashes)
      expect(new Set(hashes.map((hash) => divergenceOf(hash, 1)))).toEqual(new Set(['data', 'position', undefined]))
      const asServed = sealed.map((log) => ({ ...log, blockHash: ZERO_HASH, blockTimestamp: log.blockTimestamp!, removed: false as const }))
      expect(served).toEqual(divergedLogs(asServed, 1))
      for (const [index, hash] of hashes.entries()) {
        const pending = served.find((log) => log.transactionHash === hash)!
        if (divergenceOf(hash, 1) === 'data') expect(pending.data).not.toBe(sealed[index]!.data)
        if (divergenceOf(hash, 1) === 'position') expect(pending.transactionIndex).not.toBe(sealed[index]!.transactionIndex)
      }
      expect(served.map((log) => log.logIndex)).toEqual(sealed.map((log) => log.logIndex))
    } finally {
      await devnet.stop()
    }
  })
})

type Stamped = { blockHash?: Hex | null; blockTimestampMs?: Hex }
type Block = {
  number: Hex
  hash: Hex
  timestamp: Hex
  timestampMs?: Hex
  transactions: Array<Hex | (Stamped & { hash: Hex; type: Hex; to: Address; from: Address })>
}
type Receipt = Stamped & { transactionHash: Hex; logs: Array<Log & Stamped> }

const block = (devnet: Devnet, tag: Hex | 'latest' | 'pending', full = false) => rpc<Block>(devnet.url, 'eth_getBlockByNumber', [tag, full])

describe('devnet base profile (Base since Denim)', () => {
  let devnet: Devnet
  let echo: Address

  beforeAll(async () => {
    devnet = await createDevnet({ blockTimeMs: 0 })
    echo = await deployEcho(devnet)
  })

  afterAll(async () => {
    await devnet?.stop()
  })

  it('is the default profile: pending reads as latest, with no pre-confirmed logs', async () => {
    expect(devnet.profile).toBe('base')
    const hash = await sender(devnet, 0)({ to: echo, data: '0xaa' })
    // Sent but not mined: a pre-confirming node would serve its log under `pending`; a Denim node does not.
    expect(logsOf(await pendingLogs(devnet), [hash])).toEqual([])
    expect(await devnet.pending()).toMatchObject({ logs: [], transactions: [] })
    expect(await block(devnet, 'pending')).toEqual(await block(devnet, 'latest'))
    const address = account(0).address
    expect(BigInt(await rpc<Hex>(devnet.url, 'eth_getTransactionCount', [address, 'pending']))).toBe(
      BigInt(await rpc<Hex>(devnet.anvilUrl, 'eth_getTransactionCount', [address, 'pending'])),
    )

    const mined = await devnet.mine()
    const latestLogs = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: 'latest', toBlock: 'latest' }])
    expect(await pendingLogs(devnet)).toEqual(latestLogs)
    expect(latestLogs.map((log) => [log.transactionHash, log.blockHash])).toEqual([[hash, mined.hash]])
  })

  it('serves timestampMs and blockTimestampMs everywhere, consistent with whole-second timestamps shared by about five blocks', async () => {
    const hashes: Hex[] = []
    for (let b = 0; b < 11; b++) {
      hashes.push(await sender(devnet, 1)({ to: echo, data: toHex(b + 1, { size: 1 }) }))
      await devnet.mine()
    }
    const head = BigInt(await rpc<Hex>(devnet.url, 'eth_blockNumber'))
    const numbers = Array.from({ length: 11 }, (_, i) => head - 10n + BigInt(i))
    const blocks = await Promise.all(numbers.map((n) => block(devnet, toHex(n), true)))
    const ms = blocks.map((b) => BigInt(b.timestampMs!))
    blocks.forEach((b, i) => {
      expect(ms[i]! / 1000n).toBe(BigInt(b.timestamp))
      if (i > 0) expect(ms[i]!).toBeGreaterThan(ms[i - 1]!)
      for (const tx of b.transactions) expect(tx).toMatchObject({ blockTimestampMs: b.timestampMs })
    })
    // Eleven 200 ms blocks span at most three seconds: at least one second is shared by five blocks or more.
    const perSecond = new Map<Hex, number>()
    for (const b of blocks) perSecond.set(b.timestamp, (perSecond.get(b.timestamp) ?? 0) + 1)
    expect(Math.max(...perSecond.values())).toBeGreaterThanOrEqual(4)

    const msOf = new Map(blocks.map((b) => [b.hash, b.timestampMs!]))
    const logs = await rpc<Array<Log & Stamped>>(devnet.url, 'eth_getLogs', [
      { fromBlock: toHex(numbers[0]!), toBlock: 'latest', address: echo },
    ])
    expect(logs.map((log) => log.transactionHash)).toEqual(hashes)
    for (const log of logs) expect(log.blockTimestampMs).toBe(msOf.get(log.blockHash))

    const last = blocks.at(-1)!
    expect(await rpc<Block>(devnet.url, 'eth_getBlockByHash', [last.hash, false])).toMatchObject({ timestampMs: last.timestampMs })
    expect(await rpc<Stamped>(devnet.url, 'eth_getTransactionByHash', [hashes.at(-1)])).toMatchObject({
      blockTimestampMs: last.timestampMs,
    })
    const receipt = await rpc<Receipt>(devnet.url, 'eth_getTransactionReceipt', [hashes.at(-1)])
    expect(receipt.blockTimestampMs).toBe(last.timestampMs)
    expect(receipt.logs.map((log) => log.blockTimestampMs)).toEqual([last.timestampMs])
    const receipts = await rpc<Receipt[]>(devnet.url, 'eth_getBlockReceipts', [last.number])
    expect(receipts.map((r) => r.blockTimestampMs)).toEqual(receipts.map(() => last.timestampMs))
    expect(receipts.flatMap((r) => r.logs.map((log) => log.blockTimestampMs))).toEqual([last.timestampMs])

    // A batch gets the same fields, and the same block always reports the same milliseconds.
    const batch = (await post(devnet.url, [
      { jsonrpc: '2.0', id: 'b', method: 'eth_getBlockByNumber', params: [last.number, false] },
      { jsonrpc: '2.0', id: 'l', method: 'eth_getLogs', params: [{ blockHash: last.hash }] },
      { jsonrpc: '2.0', id: 'c', method: 'eth_chainId', params: [] },
    ])) as Array<RpcAnswer & { result: unknown }>
    expect(batch.find((a) => a.id === 'b')!.result).toMatchObject({ timestampMs: last.timestampMs })
    expect((batch.find((a) => a.id === 'l')!.result as Stamped[]).map((log) => log.blockTimestampMs)).toEqual([last.timestampMs])
    expect(batch.find((a) => a.id === 'c')!.result).toBe(toHex(foundry.id))
  })

  it('stamps a block with the milliseconds asked for, always above its parent', async () => {
    const parent = await block(devnet, 'latest')
    const asked = Number(BigInt(parent.timestampMs!)) + 1_234
    const stamped = await block(devnet, toHex((await devnet.mine({ timestampMs: asked })).number))
    expect(BigInt(stamped.timestampMs!)).toBe(BigInt(asked))
    expect(BigInt(stamped.timestamp)).toBe(BigInt(Math.floor(asked / 1000)))
    const early = await block(devnet, toHex((await devnet.mine({ timestampMs: 0 })).number))
    expect(BigInt(early.timestampMs!)).toBe(BigInt(asked + 1))
  })

  it('opens every block with the two system deposits, which carry no logs', async () => {
    const user = await sender(devnet, 2)({ to: echo, data: '0xd0' })
    const mined = await devnet.mine()
    const full = await block(devnet, toHex(mined.number), true)
    const transactions = full.transactions as Array<{ hash: Hex; type: Hex; to: Address; from: Address }>
    expect(transactions.map((tx) => [tx.type, tx.to.toLowerCase()])).toEqual([
      ['0x7e', SYSTEM_DEPOSIT_TARGETS[0]],
      ['0x7e', SYSTEM_DEPOSIT_TARGETS[1]],
      ['0x2', echo.toLowerCase()],
    ])
    expect(transactions[0]!.from.toLowerCase()).toBe(DEPOSITOR)
    expect(transactions[2]!.hash).toBe(user)
    // The layer answers a mined deposit's raw bytes itself (anvil 1.7 panics on them); its keccak is the hash.
    const raw = await rpc<Hex>(devnet.url, 'eth_getRawTransactionByHash', [transactions[0]!.hash])
    expect(raw.startsWith('0x7e')).toBe(true)
    expect(keccak256(raw)).toBe(transactions[0]!.hash)
    expect(keccak256(await rpc<Hex>(devnet.url, 'eth_getRawTransactionByHash', [user]))).toBe(user)
    const logs = await rpc<Log[]>(devnet.url, 'eth_getLogs', [{ fromBlock: toHex(mined.number), toBlock: toHex(mined.number) }])
    expect(logs.map((log) => log.transactionHash)).toEqual([user])
    // An empty block has its deposits too, with other hashes than the block before.
    const empty = await block(devnet, toHex((await devnet.mine()).number), true)
    const deposits = empty.transactions as Array<{ hash: Hex; type: Hex }>
    expect(deposits.map((tx) => tx.type)).toEqual(['0x7e', '0x7e'])
    expect(deposits.map((tx) => tx.hash)).not.toContain(transactions[0]!.hash)
  })

  it('publishes new heads with timestampMs and accepts a pendingLogs subscription that delivers nothing', async () => {
    const socket = new WebSocket(devnet.wsUrl)
    const messages: Array<{
      id?: number
      result?: unknown
      params?: { subscription: string; result: { number?: Hex; hash?: Hex; timestampMs?: Hex } }
    }> = []
    socket.on('message', (data) => messages.push(JSON.parse(data.toString())))
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['pendingLogs', {}] }))
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['newHeads'] }))
    const answers = await waitFor(
      async () => messages.filter((m) => m.id !== undefined),
      (found) => found.length === 2,
    )
    const logsId = answers.find((m) => m.id === 1)!.result
    const headsId = answers.find((m) => m.id === 2)!.result
    await sender(devnet, 3)({ to: echo, data: '0x5e' })
    const mined = await devnet.mine()
    const heads = await waitFor(
      async () => messages.filter((m) => m.params?.subscription === headsId).map((m) => m.params!.result),
      (found) => found.some((head) => head.number === toHex(mined.number)),
    )
    const served = await block(devnet, toHex(mined.number))
    expect(heads.find((head) => head.number === toHex(mined.number))).toMatchObject({ hash: mined.hash, timestampMs: served.timestampMs })
    expect(messages.filter((m) => m.params?.subscription === logsId)).toEqual([])
    socket.close()
  })

  it('reorgs: orphaned transactions vanish, replacement blocks open with deposits and keep consistent milliseconds', async () => {
    const orphan = await sender(devnet, 4)({ to: echo, data: '0xdead' })
    const mined = await devnet.mine()
    const parent = await block(devnet, toHex(mined.number - 1n))
    const waiting = await sender(devnet, 5)({ to: echo, data: '0xbeef' })
    const replaced = await devnet.reorg(2)
    expect(replaced.number).toBe(mined.number)
    expect(replaced.hash).not.toBe(mined.hash)
    const blocks = await Promise.all([mined.number - 1n, mined.number].map((n) => block(devnet, toHex(n), true)))
    expect(blocks[0]!.hash).not.toBe(parent.hash)
    for (const b of blocks) {
      expect((b.transactions as Array<{ type: Hex }>).map((tx) => tx.type)).toEqual(['0x7e', '0x7e'])
      expect(BigInt(b.timestampMs!) / 1000n).toBe(BigInt(b.timestamp))
    }
    expect(BigInt(blocks[1]!.timestampMs!)).toBeGreaterThan(BigInt(blocks[0]!.timestampMs!))
    expect(await rpc(devnet.url, 'eth_getTransactionByHash', [orphan])).toBeNull()
    // A transaction waiting in the pool stays there and is mined after the next block's deposits.
    const next = await block(devnet, toHex((await devnet.mine()).number), true)
    expect((next.transactions as Array<{ hash: Hex; type: Hex }>).map((tx) => tx.type)).toEqual(['0x7e', '0x7e', '0x2'])
    expect((next.transactions as Array<{ hash: Hex }>)[2]!.hash).toBe(waiting)
  })

  it('counts the HTTP requests and the calls by method it answered', async () => {
    const before = devnet.calls()
    await post(devnet.url, [
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_blockNumber', params: [] },
    ])
    await rpc(devnet.url, 'eth_blockNumber')
    const after = devnet.calls()
    expect(after.requests - before.requests).toBe(2)
    expect(after.calls.eth_blockNumber! - (before.calls.eth_blockNumber ?? 0)).toBe(2)
    expect(after.calls.eth_chainId! - (before.calls.eth_chainId ?? 0)).toBe(1)
  })

  it('leaves the deposits out when asked, keeping Denim time', async () => {
    const plain = await createDevnet({ blockTimeMs: 0, deposits: false })
    try {
      const hash = await sender(plain, 0)({ to: '0x000000000000000000000000000000000000dEaD', data: '0x', gas: 21_000n })
      const mined = await block(plain, toHex((await plain.mine()).number), true)
      expect((mined.transactions as Array<{ hash: Hex }>).map((tx) => tx.hash)).toEqual([hash])
      expect(BigInt(mined.timestampMs!) / 1000n).toBe(BigInt(mined.timestamp))
    } finally {
      await plain.stop()
    }
  })

  it('mines a block every 200 ms by default and refuses pre-confirmation options', async () => {
    await expect(createDevnet({ canonicalLag: 2 })).rejects.toThrow('need profile "op"')
    const timed = await createDevnet()
    try {
      const start = BigInt(await rpc<Hex>(timed.url, 'eth_blockNumber'))
      const head = await waitFor(
        async () => BigInt(await rpc<Hex>(timed.url, 'eth_blockNumber')),
        (number) => number >= start + 6n,
      )
      const blocks = await Promise.all([head - 2n, head - 1n, head].map((n) => block(timed, toHex(n), true)))
      for (const [i, b] of blocks.entries()) {
        expect(BigInt(b.timestampMs!) / 1000n).toBe(BigInt(b.timestamp))
        if (i > 0) expect(BigInt(b.timestampMs!)).toBeGreaterThan(BigInt(blocks[i - 1]!.timestampMs!))
        expect((b.transactions as Array<{ type: Hex }>).slice(0, 2).map((tx) => tx.type)).toEqual(['0x7e', '0x7e'])
      }
    } finally {
      await timed.stop()
    }
  })
})
