/**
 * Attribution rate of the per-transaction path, in transactions per second: `attributeTransaction(tx,
 * chainId)` — what the attributor runs on every transaction object the node returns — over objects
 * shaped as `eth_getTransactionByHash` / `eth_getBlockByNumber(n, true)` return them (legacy, EIP-1559
 * and EIP-7702 transactions, 68–1000 bytes of calldata), without a suffix (the common case, the fast
 * path), with suffixes of each schema, and as ERC-4337 `handleOps` bundles. `npm run bench` reports
 * these figures; run alone with `node --import tsx harness/bench/decode.ts`.
 */
import { pathToFileURL } from 'node:url'
import { Attribution } from 'ox/erc8021'
import { type Address, type Hex, encodeFunctionData } from 'viem'
import {
  type UserOperation,
  entryPoint07Abi,
  entryPoint07Address,
  entryPoint08Abi,
  entryPoint08Address,
  toPackedUserOperation,
} from 'viem/account-abstraction'
import { attributeTransaction } from '../../src/attribution/transaction.js'
import { seededRandom } from '../random.js'

const MIN_CALLDATA_BYTES = 68
const MAX_CALLDATA_BYTES = 1000
const TRANSACTIONS_PER_CASE = 2_000
const HANDLE_OPS_PER_CASE = 200
const DEFAULT_DURATION_MS = 1_000
const WARMUP_MS = 100
const ROUNDS = 3
const CHAIN_ID = 8453
const BENEFICIARY: Address = '0x000000000000000000000000000000000000beef'

export type DecodeBenchCase = {
  name: string
  /** `attributeTransaction` calls per second, one per transaction object. */
  transactionsPerSecond: number
  /** Mean calldata size of the case's transactions. */
  averageBytes: number
}

export type BenchDecodeParameters = {
  /** Time measured on each case, after a warm-up. */
  durationMs?: number | undefined
}

type Random = () => number
type TransactionType = 'legacy' | 'eip1559' | 'eip7702'

/**
 * A node's transaction object, with the fields and field order anvil gives: what `attributeTransaction`
 * is handed, though it reads only hash, from, to and input.
 */
type RpcTransaction = { hash: string; from: string; to: string | null; input: string } & Record<string, unknown>

/** Measures `attributeTransaction` on generated transaction objects, case by case. */
export function benchDecode(parameters: BenchDecodeParameters = {}): DecodeBenchCase[] {
  const durationMs = parameters.durationMs ?? DEFAULT_DURATION_MS
  const random = seededRandom(8021)
  const contracts = Array.from({ length: 50 }, () => randomHex(random, 20))
  const calls = Array.from({ length: TRANSACTIONS_PER_CASE }, () => randomCalldata(random, '0'))
  // Most transactions are EIP-1559, some legacy, some EIP-7702 (type 4, with an authorization list).
  const typeOf = (i: number): TransactionType => (i % 10 === 0 ? 'eip7702' : i % 10 < 3 ? 'legacy' : 'eip1559')
  const transactions = (inputs: readonly string[]) =>
    fromJson(inputs.map((input, i) => rpcTransaction(random, typeOf(i), contracts[i % contracts.length]!, input)))
  const suffixes = {
    'schema 0, one code': Attribution.toDataSuffix({ codes: ['bc_a1b2c3d4'] }),
    'schema 0, two codes': Attribution.toDataSuffix({ codes: ['bc_a1b2c3d4', 'bc_xyz12345'] }),
    'schema 1': Attribution.toDataSuffix({
      codes: ['bc_a1b2c3d4'],
      codeRegistry: { address: '0xd8da6bf26964af9d7eed9e03e53415d37aa96045', chainId: CHAIN_ID },
    }),
    'schema 2': Attribution.toDataSuffix({
      appCode: 'bc_a1b2c3d4',
      walletCode: 'bc_xyz12345',
      serviceCodes: ['flashbots'],
      metadata: { source: 'webapp' },
    }),
  }
  const suffixed = (suffix: Hex) => calls.map((call) => `${call}${suffix.slice(2)}`)
  const bundles = (entryPoint: Address, operations: (callData: Hex) => Hex) =>
    fromJson(
      calls
        .slice(0, HANDLE_OPS_PER_CASE)
        .map((call) =>
          rpcTransaction(random, 'eip1559', entryPoint, operations(`${call}${suffixes['schema 0, one code'].slice(2)}` as Hex)),
        ),
    )

  const cases: DecodeBenchCase[] = [
    measure('no suffix', transactions(calls), durationMs),
    // Calldata often ends in a 1 (a `true`, an amount of 1): it passes the marker's one-character check.
    measure(
      'no suffix, last digit 1',
      transactions(Array.from({ length: TRANSACTIONS_PER_CASE }, () => randomCalldata(random, '1'))),
      durationMs,
    ),
  ]
  for (const [name, suffix] of Object.entries(suffixes)) cases.push(measure(`suffix ${name}`, transactions(suffixed(suffix)), durationMs))
  cases.push(
    measure(
      'ERC-4337 handleOps v0.7, 1 operation',
      bundles(entryPoint07Address, (callData) => handleOps('0.7', [callData])),
      durationMs,
    ),
    measure(
      'ERC-4337 handleOps v0.7, 5 operations',
      bundles(entryPoint07Address, (callData) => handleOps('0.7', [callData, callData, callData, callData, callData])),
      durationMs,
    ),
    // The daemon then reads the sender's delegate and runs the transaction again with it.
    measure(
      'ERC-4337 handleOps v0.8, 1 EIP-7702 operation',
      bundles(entryPoint08Address, (callData) => handleOps('0.8', [callData], { factory: '0x7702', factoryData: '0x' })),
      durationMs,
    ),
  )
  return cases
}

/**
 * Transactions per second of `attributeTransaction` over `transactions`: after `WARMUP_MS` of calls (so
 * the JIT has optimised the path), the fastest of `ROUNDS` rounds of `durationMs / ROUNDS` each, which
 * keeps other work on a shared machine out of the figure.
 */
function measure(name: string, transactions: readonly RpcTransaction[], durationMs: number): DecodeBenchCase {
  let sink = 0
  const callsFor = (ms: number) => {
    let count = 0
    const start = performance.now()
    let elapsed = 0
    while (elapsed < ms) {
      for (const tx of transactions) sink ^= attributeTransaction(tx, CHAIN_ID).entries.length
      count += transactions.length
      elapsed = performance.now() - start
    }
    return (count / elapsed) * 1000
  }
  callsFor(WARMUP_MS)
  const rates = Array.from({ length: ROUNDS }, () => callsFor(durationMs / ROUNDS))
  // Reading the sink keeps the calls from being optimised away.
  if (sink === -1) throw new Error('unreachable')
  const averageBytes = Math.round(transactions.reduce((total, tx) => total + (tx.input.length - 2) / 2, 0) / transactions.length)
  return { name, transactionsPerSecond: Math.round(Math.max(...rates)), averageBytes }
}

/** The objects as `JSON.parse` of a JSON-RPC answer makes them, which is how the attributor receives them. */
function fromJson(transactions: RpcTransaction[]): RpcTransaction[] {
  return JSON.parse(JSON.stringify(transactions)) as RpcTransaction[]
}

/** A mined transaction of `type` as anvil answers `eth_getTransactionByHash`: lowercase hex, its fields in anvil's order. */
function rpcTransaction(random: Random, type: TransactionType, to: string, input: string): RpcTransaction {
  const quantity = (max: number) => `0x${Math.floor(random() * max).toString(16)}`
  const signature = { r: randomHex(random, 32), s: randomHex(random, 32) }
  const position = {
    hash: randomHex(random, 32),
    blockHash: randomHex(random, 32),
    blockNumber: quantity(30_000_000),
    transactionIndex: quantity(200),
    from: randomHex(random, 20),
  }
  const chainId = `0x${CHAIN_ID.toString(16)}`
  const common = { chainId, nonce: quantity(10_000), gas: quantity(1_000_000) }
  if (type === 'legacy') {
    const v = `0x${(CHAIN_ID * 2 + 35 + Math.floor(random() * 2)).toString(16)}`
    return { type: '0x0', ...common, gasPrice: quantity(1e10), to, value: '0x0', input, ...signature, v, ...position }
  }
  const fees = { maxFeePerGas: quantity(1e10), maxPriorityFeePerGas: quantity(1e9) }
  const yParity = `0x${Math.floor(random() * 2)}`
  const authorizationList =
    type === 'eip7702'
      ? [
          {
            chainId,
            address: randomHex(random, 20),
            nonce: quantity(100),
            yParity: '0x1',
            r: randomHex(random, 32),
            s: randomHex(random, 32),
          },
        ]
      : undefined
  return {
    type: type === 'eip7702' ? '0x4' : '0x2',
    ...common,
    ...fees,
    to,
    value: '0x0',
    accessList: [],
    ...(authorizationList ? { authorizationList } : {}),
    input,
    ...signature,
    yParity,
    v: yParity,
    ...position,
    gasPrice: quantity(1e10),
  }
}

function randomHex(random: Random, bytes: number): string {
  let hex = '0x'
  for (let i = 0; i < bytes * 2; i++) hex += Math.floor(random() * 16).toString(16)
  return hex
}

/** A selector and 32-byte words, `MIN_CALLDATA_BYTES`–`MAX_CALLDATA_BYTES` long, ending in `lastDigit`. */
function randomCalldata(random: Random, lastDigit: string): Hex {
  const words = Math.floor((MIN_CALLDATA_BYTES - 4) / 32 + random() * ((MAX_CALLDATA_BYTES - 4) / 32 - 1))
  let hex = '0x'
  for (let i = 0; i < 8 + words * 64 - 1; i++) hex += Math.floor(random() * 16).toString(16)
  return `${hex}${lastDigit}` as Hex
}

/** A `handleOps` call of EntryPoint `version` with one operation per `callData`, from one smart account. */
function handleOps(version: '0.7' | '0.8', callDatas: Hex[], extra: Partial<UserOperation<'0.7'>> = {}): Hex {
  const operations = callDatas.map((callData, nonce) =>
    toPackedUserOperation({
      sender: '0x1234567890123456789012345678901234567890',
      nonce: BigInt(nonce),
      callData,
      callGasLimit: 100_000n,
      verificationGasLimit: 100_000n,
      preVerificationGas: 50_000n,
      maxFeePerGas: 1_000_000_000n,
      maxPriorityFeePerGas: 1_000_000n,
      signature: `0x${'11'.repeat(65)}`,
      ...extra,
    }),
  )
  return encodeFunctionData({
    abi: (version === '0.7' ? entryPoint07Abi : entryPoint08Abi) as typeof entryPoint07Abi,
    functionName: 'handleOps',
    args: [operations, BENEFICIARY],
  })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const { name, transactionsPerSecond, averageBytes } of benchDecode())
    process.stdout.write(
      `${name.padEnd(48)} ${transactionsPerSecond.toLocaleString('en-US').padStart(12)} transactions/s  (avg ${averageBytes} bytes)\n`,
    )
}
