import { concat, decodeEventLog, getAddress, toHex, type Address, type Hex, type Log } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import {
  anvilAccount,
  artifacts,
  buildChain,
  deployContract,
  encodeEmitMany,
  EMITTER_SHAPES,
  fixtureClient,
  LARGE_DATA_BYTES,
  rawSignedTx,
  sendWithSuffix,
  type BuildChainReturnType,
} from '../harness/fixtures/chain.js'
import {
  accountFactoryAddress,
  createSmartAccount,
  deployEntryPoints,
  encodeExecute,
  ENTRY_POINT_ADDRESSES,
  ENTRY_POINT_VERSIONS,
  entryPointArtifacts,
  sendHandleOps,
} from '../harness/fixtures/entryPoint.js'

// A schema-0 ERC-8021 suffix: codes ∥ codesLength ∥ schema 0 ∥ marker.
const MARKER = '0x80218021802180218021802180218021'
function schema0Suffix(code: string): Hex {
  return concat([toHex(code), toHex(code.length, { size: 1 }), '0x00', MARKER])
}

// Immutables are zero in a published deployedBytecode and filled in by the constructor.
function matchesPublishedRuntime(actual: Hex, published: Hex): boolean {
  if (actual.length !== published.length) return false
  for (let k = 2; k < actual.length; k += 2) {
    const byte = actual.slice(k, k + 2)
    const expected = published.slice(k, k + 2)
    if (byte !== expected && expected !== '00') return false
  }
  return actual !== published
}

function dataBytes(log: Log): number {
  return (log.data.length - 2) / 2
}

let anvil: Anvil

beforeAll(async () => {
  anvil = await startAnvil()
})

afterAll(async () => {
  await anvil?.stop()
})

describe('buildChain', () => {
  const BLOCKS = 3
  const TXS_PER_BLOCK = 4
  let chain: BuildChainReturnType
  let logs: Log[]

  beforeAll(async () => {
    chain = await buildChain(anvil.url, {
      blocks: BLOCKS,
      txsPerBlock: TXS_PER_BLOCK,
      suffix: (i) => (i % 2 === 0 ? schema0Suffix(`bc_tx${i}`) : undefined),
    })
    logs = await fixtureClient(anvil.url).getLogs({ address: chain.emitter, fromBlock: chain.fromBlock, toBlock: chain.toBlock })
  })

  it('mines the requested blocks with several transactions from several senders each', async () => {
    const client = fixtureClient(anvil.url)
    expect(chain.toBlock - chain.fromBlock + 1n).toBe(BigInt(BLOCKS))
    expect(chain.txHashes).toHaveLength(BLOCKS * TXS_PER_BLOCK)
    for (let n = chain.fromBlock; n <= chain.toBlock; n++) {
      const block = await client.getBlock({ blockNumber: n, includeTransactions: true })
      expect(block.transactions).toHaveLength(TXS_PER_BLOCK)
      expect(new Set(block.transactions.map((tx) => tx.from)).size).toBeGreaterThan(1)
    }
  })

  it('leaves automine as it found it', async () => {
    expect(await fixtureClient(anvil.url).getAutomine()).toBe(true)
  })

  it('emits logs with 0, 1, 2, 3 and 4 topics', () => {
    const topicCounts = new Set(logs.map((log) => log.topics.length))
    expect([...topicCounts].sort()).toEqual([0, 1, 2, 3, 4])
  })

  it('emits anonymous logs: no topics, and four topics none of which is an event signature', () => {
    const signatures = new Set(artifacts.Emitter.abi.flatMap((item) => (item.type === 'event' && !item.anonymous ? [item.name] : [])))
    expect(signatures.size).toBeGreaterThan(0)
    const anonymousFour = logs.filter((log) => {
      if (log.topics.length !== 4) return false
      try {
        decodeEventLog({ abi: artifacts.Emitter.abi, topics: log.topics as [Hex, ...Hex[]], data: log.data, strict: true })
        return false
      } catch {
        return true
      }
    })
    expect(anonymousFour.length).toBeGreaterThan(0)
    expect(anonymousFour.every((log) => log.data === '0x')).toBe(true)
    expect(logs.some((log) => log.topics.length === 0 && log.data === '0x')).toBe(true)
    expect(logs.some((log) => log.topics.length === 0 && log.data !== '0x')).toBe(true)
  })

  it('emits empty data and data of several kilobytes', () => {
    expect(logs.some((log) => log.data === '0x')).toBe(true)
    expect(Math.max(...logs.map(dataBytes))).toBeGreaterThanOrEqual(LARGE_DATA_BYTES)
  })

  it('emits several logs per transaction with consecutive log indexes', () => {
    const perTx = new Map<string, Log[]>()
    for (const log of logs) perTx.set(log.transactionHash!, [...(perTx.get(log.transactionHash!) ?? []), log])
    expect(perTx.size).toBe(BLOCKS * TXS_PER_BLOCK)
    for (const txLogs of perTx.values()) {
      expect(txLogs).toHaveLength(EMITTER_SHAPES)
      const indexes = txLogs.map((log) => log.logIndex!)
      expect(indexes).toEqual(indexes.map((_, k) => indexes[0]! + k))
    }
  })

  it('appends the suffix of transaction i to its calldata', async () => {
    const client = fixtureClient(anvil.url)
    const [withSuffix, without] = await Promise.all([
      client.getTransaction({ hash: chain.txHashes[2]! }),
      client.getTransaction({ hash: chain.txHashes[3]! }),
    ])
    expect(withSuffix.input.endsWith(schema0Suffix('bc_tx2').slice(2))).toBe(true)
    expect(without.input.endsWith(MARKER.slice(2))).toBe(false)
  })
})

describe('transactions', () => {
  it('sendWithSuffix appends the suffix and the call still runs', async () => {
    const client = fixtureClient(anvil.url)
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    const suffix = schema0Suffix('bc_agent')
    const hash = await sendWithSuffix(anvil.url, { from: 3, to: emitter, data: encodeEmitMany(3, 0, '0x'), suffix })
    const [tx, receipt] = await Promise.all([client.getTransaction({ hash }), client.getTransactionReceipt({ hash })])
    expect(tx.from).toBe(anvilAccount(3).address.toLowerCase())
    expect(tx.input.endsWith(suffix.slice(2))).toBe(true)
    expect(receipt.logs).toHaveLength(3)
  })

  it('sends a call with a large suffixed calldata at the EIP-7623 floor', async () => {
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    const payload = toHex(new Uint8Array(3 * LARGE_DATA_BYTES).fill(0xab))
    const hash = await sendWithSuffix(anvil.url, {
      from: 4,
      to: emitter,
      data: encodeEmitMany(1, 3, payload),
      suffix: schema0Suffix('bc_big'),
    })
    const receipt = await fixtureClient(anvil.url).getTransactionReceipt({ hash })
    expect(receipt.status).toBe('success')
    expect(receipt.logs[0]!.data.length).toBeGreaterThan(2 * 3 * LARGE_DATA_BYTES)
  })

  it('rawSignedTx replaces an orphaned block through anvil_reorg', async () => {
    const client = fixtureClient(anvil.url)
    const emitter = await deployContract(anvil.url, artifacts.Emitter)
    await sendWithSuffix(anvil.url, { from: 5, to: emitter, data: encodeEmitMany(1, 0, '0x') })
    const head = await client.getBlockNumber()
    const raw = await rawSignedTx(anvil.url, { from: 6, to: emitter, data: encodeEmitMany(2, 0, '0x'), suffix: schema0Suffix('bc_reorg') })
    await client.request({ method: 'anvil_reorg', params: [1, [[raw, 0]]] })
    const block = await client.getBlock({ blockNumber: head, includeTransactions: true })
    expect(block.transactions.map((tx) => tx.from)).toEqual([anvilAccount(6).address.toLowerCase()])
    expect(block.transactions[0]!.input.endsWith(MARKER.slice(2))).toBe(true)
  })
})

describe('ERC-4337 EntryPoints', () => {
  let emitter: Address

  beforeAll(async () => {
    await deployEntryPoints(anvil.url)
    emitter = await deployContract(anvil.url, artifacts.Emitter)
  })

  it('puts the published runtime code, immutables set, at the canonical addresses', async () => {
    const client = fixtureClient(anvil.url)
    for (const version of ENTRY_POINT_VERSIONS) {
      const code = await client.getCode({ address: ENTRY_POINT_ADDRESSES[version] })
      expect(matchesPublishedRuntime(code!, entryPointArtifacts[version].entryPoint.deployedBytecode)).toBe(true)
      expect(await client.getCode({ address: accountFactoryAddress(version) })).toBeDefined()
    }
  })

  it('is idempotent', async () => {
    const again = await deployEntryPoints(anvil.url)
    expect(again['0.7'].entryPoint).toBe(ENTRY_POINT_ADDRESSES['0.7'])
  })

  for (const version of ENTRY_POINT_VERSIONS) {
    it(`executes suffixed user operations through handleOps on v${version}`, async () => {
      const client = fixtureClient(anvil.url)
      const first = await createSmartAccount(anvil.url, { version, owner: 1 })
      const second = await createSmartAccount(anvil.url, { version, owner: 2, salt: 7n })
      const op = (seq: number, code: string) =>
        concat([encodeExecute({ to: emitter, data: encodeEmitMany(2, seq, '0x') }), schema0Suffix(code)])
      const beneficiary = anvilAccount(8).address
      const ops = [
        { account: first, callData: op(0, 'bc_first') },
        { account: second, callData: op(2, 'bc_second') },
        { account: first, callData: op(4, 'bc_again') },
      ]

      const hash = await sendHandleOps(anvil.url, { version, ops, beneficiary })

      const [tx, receipt] = await Promise.all([client.getTransaction({ hash }), client.getTransactionReceipt({ hash })])
      expect(getAddress(tx.to!)).toBe(ENTRY_POINT_ADDRESSES[version])
      for (const { callData } of ops) expect(tx.input.includes(callData.slice(2))).toBe(true)
      const emitted = receipt.logs.filter((log) => log.address === emitter.toLowerCase())
      expect(emitted).toHaveLength(6)
      const userOpEvents = receipt.logs.filter((log) => getAddress(log.address) === ENTRY_POINT_ADDRESSES[version])
      const senders = userOpEvents
        .map((log) => {
          try {
            return decodeEventLog({ abi: entryPointArtifacts[version].entryPoint.abi, topics: log.topics, data: log.data })
          } catch {
            return undefined
          }
        })
        .filter((event) => event?.eventName === 'UserOperationEvent')
        .map((event) => getAddress((event!.args as unknown as { sender: Address }).sender))
      expect(senders).toEqual([first.address, second.address, first.address])
      expect(await client.getCode({ address: first.address })).toBeDefined()
    })
  }
})
