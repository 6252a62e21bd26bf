import fc from 'fast-check'
import { Attribution } from 'ox/erc8021'
import { type Address, type Hex, encodeFunctionData } from 'viem'
import {
  type UserOperation,
  entryPoint07Abi,
  entryPoint07Address,
  entryPoint08Abi,
  entryPoint08Address,
  getUserOperationHash,
  toPackedUserOperation,
} from 'viem/account-abstraction'
import { describe, expect, test } from 'vitest'
import { attributeTransaction } from './transaction.js'

const CHAIN_ID = 8453
const HASH = '0xAB00000000000000000000000000000000000000000000000000000000000001'
const FROM = '0xD8dA6BF26964aF9D7eEd9e03E53415D37aA96045'
const TO = '0x4200000000000000000000000000000000000042'
const BENEFICIARY: Address = '0x000000000000000000000000000000000000beef'
const SMART_ACCOUNT: Address = '0xABcdEFABcdEFabcdEfAbCdefabcdeFABcDEFabCD'
const CALL = '0xdddddddd'
const codes = (list: string[]) => Attribution.toDataSuffix({ codes: list }).slice(2)

const gas = { callGasLimit: 100_000n, verificationGasLimit: 200_000n, preVerificationGas: 50_000n }
const fees = { maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n }
const operation = (nonce: bigint, callData: Hex, extra: Partial<UserOperation<'0.7'>> = {}): UserOperation<'0.7'> => ({
  sender: SMART_ACCOUNT,
  nonce,
  callData,
  signature: '0x01',
  ...gas,
  ...fees,
  ...extra,
})
const handleOps = (abi: typeof entryPoint07Abi | typeof entryPoint08Abi, operations: UserOperation<'0.7'>[]): Hex =>
  encodeFunctionData({
    abi: abi as typeof entryPoint07Abi,
    functionName: 'handleOps',
    args: [operations.map((op) => toPackedUserOperation(op)), BENEFICIARY],
  })
const hashOf = (op: UserOperation<'0.7'>, version: '0.7' | '0.8' = '0.7') =>
  getUserOperationHash({
    chainId: CHAIN_ID,
    entryPointAddress: version === '0.7' ? entryPoint07Address : entryPoint08Address,
    entryPointVersion: version,
    userOperation: op,
  })

describe('attributeTransaction', () => {
  test('a plain transaction with two codes: one entry per code, to its sender, addresses lowercased', () => {
    const input: Hex = `${CALL}${codes(['bc_a1b2c3d4', 'bc_xyz12345'])}`
    expect(attributeTransaction({ hash: HASH, from: FROM, to: TO, input }, CHAIN_ID)).toEqual({
      hash: HASH.toLowerCase(),
      from: FROM.toLowerCase(),
      to: TO.toLowerCase(),
      inputSize: (input.length - 2) / 2,
      hasSuffix: true,
      schemaId: 0,
      codes: ['bc_a1b2c3d4', 'bc_xyz12345'],
      registry: null,
      cbor: null,
      malformedReason: null,
      userOperations: 0,
      eip7702: null,
      deposit: false,
      entries: ['bc_a1b2c3d4', 'bc_xyz12345'].map((builderCode, codeIndex) => ({
        userOpHash: '',
        builderCode,
        codeIndex,
        role: null,
        registry: null,
        sender: FROM.toLowerCase(),
        schemaId: 0,
        codes: ['bc_a1b2c3d4', 'bc_xyz12345'],
      })),
    })
  })

  test('no suffix: nothing decoded, nothing attributed', () => {
    const result = attributeTransaction({ hash: HASH, from: FROM, to: TO, input: CALL }, CHAIN_ID)
    expect(result).toMatchObject({ inputSize: 4, hasSuffix: false, schemaId: null, codes: null, malformedReason: null, entries: [] })
  })

  test('a malformed suffix is recorded with its reason and attributes nothing', () => {
    const result = attributeTransaction({ hash: HASH, from: FROM, to: TO, input: `${CALL}${codes(['BC_UPPER'])}` }, CHAIN_ID)
    expect(result).toMatchObject({ hasSuffix: true, schemaId: 0, codes: null, entries: [] })
    expect(result.malformedReason).toMatch(/invalid code "BC_UPPER"/)
  })

  test('schema 1 keeps the registry (lowercased); schema 2 keeps its CBOR fields', () => {
    const registry = { address: '0x00000000000000000000000000000000000C0DE1' as Address, chainId: CHAIN_ID }
    const one = attributeTransaction(
      {
        hash: HASH,
        from: FROM,
        to: TO,
        input: `${CALL}${Attribution.toDataSuffix({ codes: ['bc_a1b2c3d4'], codeRegistry: registry }).slice(2)}`,
      },
      CHAIN_ID,
    )
    expect(one).toMatchObject({
      schemaId: 1,
      codes: ['bc_a1b2c3d4'],
      registry: { address: registry.address.toLowerCase(), chainId: String(CHAIN_ID) },
      cbor: null,
    })
    expect(one.entries.map((e) => [e.builderCode, e.role, e.registry])).toEqual([
      ['bc_a1b2c3d4', null, { address: registry.address.toLowerCase(), chainId: String(CHAIN_ID) }],
    ])
    const two = attributeTransaction(
      {
        hash: HASH,
        from: FROM,
        to: TO,
        input: `${CALL}${Attribution.toDataSuffix({ appCode: 'app_one', walletCode: 'wallet_two', serviceCodes: ['svc'] }).slice(2)}`,
      },
      CHAIN_ID,
    )
    expect(two).toMatchObject({ schemaId: 2, codes: ['app_one', 'wallet_two', 'svc'], registry: null })
    expect(two.cbor).toMatchObject({ appCode: 'app_one', walletCode: 'wallet_two', serviceCodes: ['svc'] })
    expect(two.entries.map((e) => [e.builderCode, e.codeIndex, e.role])).toEqual([
      ['app_one', 0, 'app'],
      ['wallet_two', 1, 'wallet'],
      ['svc', 2, 'service'],
    ])
  })

  test('a contract creation (no recipient) is decoded and has no user operations', () => {
    const result = attributeTransaction({ hash: HASH, from: FROM, to: null, input: `0x6000${codes(['bc_a1b2c3d4'])}` }, CHAIN_ID)
    expect(result).toMatchObject({ to: null, userOperations: 0, codes: ['bc_a1b2c3d4'] })
    expect(result.entries).toHaveLength(1)
  })

  test('handleOps: each operation’s suffix is attributed to its sender with its hash, beside the bundle’s own suffix', () => {
    const attributed = operation(0n, `${CALL}${codes(['bc_agent01'])}`)
    const plain = operation(1n, CALL)
    const input: Hex = `${handleOps(entryPoint07Abi, [attributed, plain])}${codes(['bundler_code'])}`
    const result = attributeTransaction({ hash: HASH, from: FROM, to: entryPoint07Address, input }, CHAIN_ID)
    expect(result.userOperations).toBe(2)
    expect(result).toMatchObject({ hasSuffix: true, codes: ['bundler_code'] })
    expect(result.entries).toEqual([
      {
        userOpHash: '',
        builderCode: 'bundler_code',
        codeIndex: 0,
        role: null,
        registry: null,
        sender: FROM.toLowerCase(),
        schemaId: 0,
        codes: ['bundler_code'],
      },
      {
        userOpHash: hashOf(attributed),
        builderCode: 'bc_agent01',
        codeIndex: 0,
        role: null,
        registry: null,
        sender: SMART_ACCOUNT.toLowerCase(),
        schemaId: 0,
        codes: ['bc_agent01'],
      },
    ])
  })

  test('an operation repeated in one bundle is attributed once, so its rows keep one key each', () => {
    const op = operation(0n, `${CALL}${codes(['bc_agent01', 'bc_agent02'])}`)
    const result = attributeTransaction(
      { hash: HASH, from: FROM, to: entryPoint07Address, input: handleOps(entryPoint07Abi, [op, op]) },
      CHAIN_ID,
    )
    expect(result.userOperations).toBe(2)
    expect(result.entries.map((e) => [e.userOpHash, e.builderCode])).toEqual([
      [hashOf(op), 'bc_agent01'],
      [hashOf(op), 'bc_agent02'],
    ])
  })

  test('a v0.8 EIP-7702 operation, whose hash calldata cannot tell, names its sender to read the delegate of, then is attributed with it', () => {
    const op = operation(0n, `${CALL}${codes(['bc_agent01'])}`, { factory: '0x7702', factoryData: '0x' })
    const tx = { hash: HASH, from: FROM, to: entryPoint08Address, input: handleOps(entryPoint08Abi, [op]) }
    const result = attributeTransaction(tx, CHAIN_ID)
    expect(result.userOperations).toBe(1)
    expect(result.entries).toEqual([])
    expect(result.eip7702).toEqual({ senders: [SMART_ACCOUNT.toLowerCase()], tx })

    const delegate: Address = '0x00000000000000000000000000000000de1e9a7e'
    const delegated = attributeTransaction(tx, CHAIN_ID, new Map([[SMART_ACCOUNT.toLowerCase() as Address, delegate]]))
    const userOpHash = getUserOperationHash({
      chainId: CHAIN_ID,
      entryPointAddress: entryPoint08Address,
      entryPointVersion: '0.8',
      userOperation: { ...op, authorization: { address: delegate, chainId: CHAIN_ID, nonce: 0, r: '0x', s: '0x', yParity: 0 } },
    })
    expect(delegated).toMatchObject({ userOperations: 1, eip7702: null })
    expect(delegated.entries).toEqual([
      {
        userOpHash,
        builderCode: 'bc_agent01',
        codeIndex: 0,
        role: null,
        registry: null,
        sender: SMART_ACCOUNT.toLowerCase(),
        schemaId: 0,
        codes: ['bc_agent01'],
      },
    ])
  })

  test('never throws, whatever the input and recipient', () => {
    const recipients = [null, TO, entryPoint07Address, entryPoint08Address]
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.constantFrom(...recipients), fc.boolean(), (bytes, to, marked) => {
        const body = Buffer.from(bytes).toString('hex')
        const input = `0x${body}${marked ? '0080218021802180218021802180218021' : ''}` as Hex
        const result = attributeTransaction({ hash: HASH, from: FROM, to, input }, CHAIN_ID)
        expect(result.inputSize).toBe((input.length - 2) / 2)
        for (const entry of result.entries) expect(entry.codes).toContain(entry.builderCode)
      }),
      { numRuns: 300 },
    )
  })
})

describe('deposit transactions (type 0x7e)', () => {
  // The L1-attributes deposit that opens every Base block, as a node serves it, with a suffix appended to show it is never read.
  const l1Attributes = {
    type: '0x7e',
    hash: '0x1f3a62a8a4c1b5b0c8d15e5c7a5f4e9a8d4b6c1e2f3a4b5c6d7e8f9a0b1c2d3e',
    from: '0xDeaDDEaDDeAdDeAdDEAdDEaddeAddEAdDEAd0001',
    to: '0x4200000000000000000000000000000000000015',
    sourceHash: '0x5b8a0f5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a',
    mint: '0x0',
    value: '0x0',
    gas: '0xf4240',
    isSystemTx: false,
    input: `0x098999be00000558000c5fc500000000000000010000000067d3a3c10000000001433e8e${'00'.repeat(96)}${codes(['bc_deposit'])}`,
  }

  test('are never decoded or attributed, whatever their input ends with', () => {
    const decoded = attributeTransaction(l1Attributes, CHAIN_ID)
    expect(decoded).toMatchObject({ deposit: true, hasSuffix: false, schemaId: null, codes: null, entries: [], userOperations: 0 })
    expect(decoded.hash).toBe(l1Attributes.hash)
  })

  test('a user transaction with the same input is attributed', () => {
    const decoded = attributeTransaction({ ...l1Attributes, type: '0x2' }, CHAIN_ID)
    expect(decoded.deposit).toBe(false)
    expect(decoded.entries.map((entry) => entry.builderCode)).toEqual(['bc_deposit'])
  })
})
