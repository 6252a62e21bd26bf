/**
 * ERC-8021 decode rate, in inputs per second, over realistic calldata (68–1000 bytes): without a
 * suffix (the common case, the fast path), with suffixes of each schema, and ERC-4337 handleOps
 * calls. `npm run bench` reports these figures; run alone with `npx tsx scripts/bench-decode.ts`.
 */
import { pathToFileURL } from 'node:url'
import { Attribution } from 'ox/erc8021'
import { type Hex, encodeFunctionData } from 'viem'
import { entryPoint07Abi, entryPoint07Address, toPackedUserOperation } from 'viem/account-abstraction'
import { decodeAttribution, extractUserOperations } from '../src/attribution/index.js'
import { seededRandom } from '../test/helpers/random.js'

const MIN_CALLDATA_BYTES = 68
const MAX_CALLDATA_BYTES = 1000
const INPUTS_PER_CASE = 2_000
const DEFAULT_DURATION_MS = 1_000
const CHAIN_ID = 8453

export type DecodeBenchCase = { name: string; inputsPerSecond: number; averageBytes: number }

export type BenchDecodeParameters = {
  /** Time spent on each case. */
  durationMs?: number | undefined
}

/** Measures `decodeAttribution` and `extractUserOperations` on generated calldata. */
export function benchDecode(parameters: BenchDecodeParameters = {}): DecodeBenchCase[] {
  const durationMs = parameters.durationMs ?? DEFAULT_DURATION_MS
  const random = seededRandom(8021)
  const plain = Array.from({ length: INPUTS_PER_CASE }, () => randomCalldata(random, '0'))
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

  const cases: DecodeBenchCase[] = [
    measure('no suffix', plain, decodeAttribution, durationMs),
    // Calldata often ends in a 1 (a `true`, an amount of 1): it passes the one-character check.
    measure(
      'no suffix, last digit 1',
      Array.from({ length: INPUTS_PER_CASE }, () => randomCalldata(random, '1')),
      decodeAttribution,
      durationMs,
    ),
  ]
  for (const [name, suffix] of Object.entries(suffixes))
    cases.push(
      measure(
        `suffix ${name}`,
        plain.map((input) => `${input}${suffix.slice(2)}` as Hex),
        decodeAttribution,
        durationMs,
      ),
    )
  cases.push(
    measure(
      'ERC-4337 handleOps v0.7, 1 operation',
      plain
        .slice(0, INPUTS_PER_CASE / 10)
        .map((callData) => handleOps(`${callData}${suffixes['schema 0, one code'].slice(2)}`)),
      (input) => extractUserOperations({ to: entryPoint07Address, input, chainId: CHAIN_ID }),
      durationMs,
    ),
  )
  return cases
}

function measure(name: string, inputs: Hex[], decode: (input: Hex) => unknown, durationMs: number): DecodeBenchCase {
  let sink = 0
  for (const input of inputs) sink ^= decode(input) === null ? 0 : 1
  let count = 0
  const start = performance.now()
  let elapsed = 0
  while (elapsed < durationMs) {
    for (const input of inputs) sink ^= decode(input) === null ? 0 : 1
    count += inputs.length
    elapsed = performance.now() - start
  }
  // Reading the sink keeps the calls from being optimised away.
  if (sink === -1) throw new Error('unreachable')
  const averageBytes = Math.round(inputs.reduce((total, input) => total + (input.length - 2) / 2, 0) / inputs.length)
  return { name, inputsPerSecond: Math.round((count / elapsed) * 1000), averageBytes }
}

/** A selector and 32-byte words, `MIN_CALLDATA_BYTES`–`MAX_CALLDATA_BYTES` long, ending in `lastDigit`. */
function randomCalldata(random: () => number, lastDigit: string): Hex {
  const words = Math.floor((MIN_CALLDATA_BYTES - 4) / 32 + random() * ((MAX_CALLDATA_BYTES - 4) / 32 - 1))
  let hex = '0x'
  for (let i = 0; i < 8 + words * 64 - 1; i++) hex += Math.floor(random() * 16).toString(16)
  return `${hex}${lastDigit}` as Hex
}

function handleOps(callData: string): Hex {
  const operation = toPackedUserOperation({
    sender: '0x1234567890123456789012345678901234567890',
    nonce: 1n,
    callData: callData as Hex,
    callGasLimit: 100_000n,
    verificationGasLimit: 100_000n,
    preVerificationGas: 50_000n,
    maxFeePerGas: 1_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
    signature: `0x${'11'.repeat(65)}`,
  })
  return encodeFunctionData({
    abi: entryPoint07Abi,
    functionName: 'handleOps',
    args: [[operation], '0x000000000000000000000000000000000000beef'],
  })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const { name, inputsPerSecond, averageBytes } of benchDecode())
    console.log(
      `${name.padEnd(40)} ${inputsPerSecond.toLocaleString('en-US').padStart(12)} inputs/s  (avg ${averageBytes} bytes)`,
    )
}
