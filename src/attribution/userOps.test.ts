import fc from 'fast-check'
import { UserOperation as OxUserOperation } from 'ox/erc4337'
import { Attribution } from 'ox/erc8021'
import { type Address, type Hex, encodeFunctionData } from 'viem'
import {
  type UserOperation,
  entryPoint06Abi,
  entryPoint06Address,
  entryPoint07Abi,
  entryPoint07Address,
  entryPoint08Abi,
  entryPoint08Address,
  getUserOperationHash,
  toPackedUserOperation,
} from 'viem/account-abstraction'
import { describe, expect, test } from 'vitest'
import { decodeAttribution } from './decode.js'
import { type EntryPointVersion, eip7702Delegate, extractUserOperations } from './userOps.js'

const CHAIN_ID = 8453
const BENEFICIARY = '0x000000000000000000000000000000000000beef'
const SENDER = '0x1234567890123456789012345678901234567890'
const EXECUTE = '0xb61d27f6000000000000000000000000000000000000000000000000000000000000dead'
const suffix = (codes: string[]) => Attribution.toDataSuffix({ codes }).slice(2)

const entryPoints = {
  '0.6': { address: entryPoint06Address, abi: entryPoint06Abi },
  '0.7': { address: entryPoint07Address, abi: entryPoint07Abi },
  '0.8': { address: entryPoint08Address, abi: entryPoint08Abi },
} as const

const gas = { callGasLimit: 100_000n, verificationGasLimit: 200_000n, preVerificationGas: 50_000n }
const fees = { maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n }

function operations06(): UserOperation<'0.6'>[] {
  return [
    {
      sender: SENDER,
      nonce: 0n,
      initCode: '0x9406cc6185a346906296840746125a0e449764545fbfb9cf0000000000000000',
      callData: `${EXECUTE}${suffix(['bc_a1b2c3d4'])}`,
      paymasterAndData: '0x',
      signature: '0x01',
      ...gas,
      ...fees,
    },
    {
      sender: '0xABcdEFABcdEFabcdEfAbCdefabcdeFABcDEFabCD',
      nonce: (7n << 64n) | 3n,
      initCode: '0x',
      callData: `${EXECUTE}${suffix(['bc_a1b2c3d4', 'bc_xyz12345'])}`,
      paymasterAndData: '0x00000000000000000000000000000000000070aa1234',
      signature: '0x02',
      ...gas,
      ...fees,
    },
    { sender: SENDER, nonce: 1n, initCode: '0x', callData: EXECUTE, paymasterAndData: '0x', signature: '0x', ...gas, ...fees },
  ]
}

function operations07(): UserOperation<'0.7'>[] {
  return [
    {
      sender: SENDER,
      nonce: 0n,
      factory: '0x9406Cc6185a346906296840746125a0E44976454',
      factoryData: '0x5fbfb9cf',
      callData: `${EXECUTE}${suffix(['bc_a1b2c3d4'])}`,
      signature: '0x01',
      ...gas,
      ...fees,
    },
    {
      sender: '0xABcdEFABcdEFabcdEfAbCdefabcdeFABcDEFabCD',
      nonce: (7n << 64n) | 3n,
      paymaster: '0x00000000000000000000000000000000000070aa',
      paymasterVerificationGasLimit: 60_000n,
      paymasterPostOpGasLimit: 10_000n,
      paymasterData: '0x1234',
      callData: `${EXECUTE}${suffix(['bc_a1b2c3d4', 'bc_xyz12345'])}`,
      signature: '0x02',
      ...gas,
      ...fees,
    },
    { sender: SENDER, nonce: 1n, callData: EXECUTE, signature: '0x', ...gas, ...fees },
  ]
}

function operationsOf(version: EntryPointVersion): UserOperation[] {
  return version === '0.6' ? operations06() : operations07()
}

function handleOpsCalldata(version: EntryPointVersion, operations: readonly UserOperation[]): Hex {
  if (version === '0.6')
    return encodeFunctionData({
      abi: entryPoint06Abi,
      functionName: 'handleOps',
      args: [operations as Required<UserOperation<'0.6'>>[], BENEFICIARY],
    })
  return encodeFunctionData({
    abi: entryPoints[version].abi as typeof entryPoint07Abi,
    functionName: 'handleOps',
    args: [operations.map((operation) => toPackedUserOperation(operation)), BENEFICIARY],
  })
}

function handleAggregatedOpsCalldata(version: EntryPointVersion, groups: readonly (readonly UserOperation[])[]): Hex {
  const aggregator: Address = '0x00000000000000000000000000000000000a66a7'
  if (version === '0.6')
    return encodeFunctionData({
      abi: entryPoint06Abi,
      functionName: 'handleAggregatedOps',
      args: [
        groups.map((userOps) => ({ userOps: userOps as Required<UserOperation<'0.6'>>[], aggregator, signature: '0x' as Hex })),
        BENEFICIARY,
      ],
    })
  return encodeFunctionData({
    abi: entryPoints[version].abi as typeof entryPoint07Abi,
    functionName: 'handleAggregatedOps',
    args: [
      groups.map((userOps) => ({ userOps: userOps.map((op) => toPackedUserOperation(op)), aggregator, signature: '0x' as Hex })),
      BENEFICIARY,
    ],
  })
}

function expected(version: EntryPointVersion, operation: UserOperation) {
  return {
    entryPointVersion: version,
    userOpHash: getUserOperationHash({
      chainId: CHAIN_ID,
      entryPointAddress: entryPoints[version].address,
      entryPointVersion: version,
      userOperation: operation,
    }),
    sender: operation.sender.toLowerCase(),
    nonce: operation.nonce,
    callData: operation.callData,
    attribution: decodeAttribution(operation.callData),
  }
}

describe.each(['0.6', '0.7', '0.8'] as const)('EntryPoint v%s', (version) => {
  const { address } = entryPoints[version]

  test('handleOps yields every operation with its hash, sender and suffix', () => {
    const operations = operationsOf(version)
    const extracted = extractUserOperations({ to: address, input: handleOpsCalldata(version, operations), chainId: CHAIN_ID })
    expect(extracted).toStrictEqual(operations.map((operation) => expected(version, operation)))
    expect(extracted.map((op) => op.attribution)).toStrictEqual([
      { ok: true, schemaId: 0, codes: ['bc_a1b2c3d4'] },
      { ok: true, schemaId: 0, codes: ['bc_a1b2c3d4', 'bc_xyz12345'] },
      null,
    ])
  })

  test('hashes agree with ox, an implementation independent of viem', () => {
    const operations = operationsOf(version)
    const extracted = extractUserOperations({ to: address, input: handleOpsCalldata(version, operations), chainId: CHAIN_ID })
    expect(extracted.map((op) => op.userOpHash)).toStrictEqual(
      operations.map((operation) =>
        OxUserOperation.hash(operation as OxUserOperation.UserOperation, {
          chainId: CHAIN_ID,
          entryPointAddress: address,
          entryPointVersion: version,
        }),
      ),
    )
  })

  test('handleAggregatedOps yields the operations of every aggregator in order', () => {
    const [a, b, c] = operationsOf(version) as [UserOperation, UserOperation, UserOperation]
    const input = handleAggregatedOpsCalldata(version, [[a, b], [], [c]])
    expect(extractUserOperations({ to: address, input, chainId: CHAIN_ID })).toStrictEqual(
      [a, b, c].map((operation) => expected(version, operation)),
    )
  })

  test('the EntryPoint address matches in any letter case', () => {
    const input = handleOpsCalldata(version, operationsOf(version))
    expect(extractUserOperations({ to: address.toLowerCase() as Address, input, chainId: CHAIN_ID })).toHaveLength(3)
  })

  test('random operations round-trip with the hash viem computes', () => {
    const uint = (bits: number) => fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n })
    const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((b) => `0x${Buffer.from(b).toString('hex')}` as Hex)
    const addr = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => `0x${Buffer.from(b).toString('hex')}` as Address)
    const limit = uint(version === '0.6' ? 256 : 128)
    const common = {
      sender: addr,
      nonce: uint(256),
      callData: fc
        .tuple(bytes(80), fc.option(fc.array(fc.stringMatching(/^[a-z0-9_]{1,32}$/), { minLength: 1, maxLength: 3 })))
        .map(([data, codes]) => (codes ? `${data}${suffix(codes)}` : data) as Hex),
      callGasLimit: limit,
      verificationGasLimit: limit,
      preVerificationGas: uint(256),
      maxFeePerGas: limit,
      maxPriorityFeePerGas: limit,
      signature: bytes(70),
    }
    const operation: fc.Arbitrary<UserOperation> =
      version === '0.6'
        ? fc.record({ ...common, initCode: bytes(60), paymasterAndData: bytes(60) })
        : fc.record(
            {
              ...common,
              factory: addr,
              factoryData: bytes(40),
              paymaster: addr,
              paymasterVerificationGasLimit: uint(128),
              paymasterPostOpGasLimit: uint(128),
              paymasterData: bytes(40),
            },
            { requiredKeys: Object.keys(common) as (keyof typeof common)[] },
          )
    fc.assert(
      fc.property(fc.array(operation, { minLength: 1, maxLength: 3 }), (operations) => {
        const extracted = extractUserOperations({ to: address, input: handleOpsCalldata(version, operations), chainId: CHAIN_ID })
        expect(extracted).toStrictEqual(operations.map((op) => expected(version, op)))
      }),
      { numRuns: 100 },
    )
  })

  test('garbage after the handleOps selector yields nothing and never throws', () => {
    const selector = handleOpsCalldata(version, []).slice(0, 10)
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        const input = `${selector}${Buffer.from(bytes).toString('hex')}` as Hex
        expect(Array.isArray(extractUserOperations({ to: address, input, chainId: CHAIN_ID }))).toBe(true)
      }),
    )
    const valid = handleOpsCalldata(version, operationsOf(version))
    expect(extractUserOperations({ to: address, input: valid.slice(0, valid.length - 64) as Hex, chainId: CHAIN_ID })).toStrictEqual([])
  })
})

describe('EntryPoint v0.8 with an EIP-7702 account', () => {
  // ox's test vector ("args: authorization"): a bare 0x7702 initCode, the delegate 0x1234…7890.
  const operation: UserOperation<'0.8'> = {
    callData: '0x',
    callGasLimit: 6942069n,
    maxFeePerGas: 69420n,
    maxPriorityFeePerGas: 69n,
    nonce: 0n,
    preVerificationGas: 6942069n,
    sender: SENDER,
    signature: '0x',
    verificationGasLimit: 6942069n,
    paymaster: SENDER,
    paymasterVerificationGasLimit: 6942069n,
    paymasterPostOpGasLimit: 6942069n,
    paymasterData: '0xdeadbeef',
    factory: '0x7702',
  }
  const input = handleOpsCalldata('0.8', [operation])

  test('the hash uses the delegate given for the sender', () => {
    const [extracted] = extractUserOperations({
      to: entryPoint08Address,
      input,
      chainId: 1,
      eip7702Delegates: new Map([[SENDER, SENDER]]),
    })
    expect(extracted?.userOpHash).toBe('0x66fe6eaaaf1d6727d404384354a720cb24694c697bfbab77b3d02345c2d6e1da')
  })

  test('without the delegate the hash is null, the operation is still there', () => {
    expect(extractUserOperations({ to: entryPoint08Address, input, chainId: 1 })).toStrictEqual([
      { entryPointVersion: '0.8', userOpHash: null, sender: SENDER, nonce: 0n, callData: '0x', attribution: null },
    ])
  })

  test('matches ox vectors for operations without 7702', () => {
    const base = { ...operation, factory: undefined, paymaster: undefined, paymasterData: undefined }
    const cases: [UserOperation<'0.8'>, Hex][] = [
      [
        { ...base, paymasterVerificationGasLimit: undefined, paymasterPostOpGasLimit: undefined },
        '0xa2224e732a1d4e2f923c7c05d586a0aa6cbc42172ec02f31d35fa9a2b8ba9208',
      ],
      [
        {
          ...base,
          factory: SENDER,
          factoryData: '0xdeadbeef',
          paymasterVerificationGasLimit: undefined,
          paymasterPostOpGasLimit: undefined,
        },
        '0x3146c70a9ef7538e9b9aca8b00ad4b127ca7eef7817a557f1801acbf8d68c206',
      ],
      [{ ...base, paymaster: SENDER, paymasterData: '0xdeadbeef' }, '0xf10ef9afcf27a4fd17e477cd19f37e588e3ff7d48eade07ab5b7eb8caf75667f'],
    ]
    for (const [op, hash] of cases) {
      const [extracted] = extractUserOperations({ to: entryPoint08Address, input: handleOpsCalldata('0.8', [op]), chainId: 1 })
      expect(extracted?.userOpHash).toBe(hash)
    }
  })
})

describe('eip7702Delegate', () => {
  test('reads the delegate from the delegation designator, and nothing from other code', () => {
    expect(eip7702Delegate('0xef01004337084D9E255Ff0702461CF8895CE9E3b5Ff108')).toBe('0x4337084d9e255ff0702461cf8895ce9e3b5ff108')
    expect(eip7702Delegate('0xef01004337084d9e255ff0702461cf8895ce9e3b5ff10800')).toBeNull()
    expect(eip7702Delegate('0xef02004337084d9e255ff0702461cf8895ce9e3b5ff108')).toBeNull()
    expect(eip7702Delegate('0x6080604052')).toBeNull()
    expect(eip7702Delegate('0x')).toBeNull()
    expect(eip7702Delegate(null)).toBeNull()
  })
})

describe('extractUserOperations on other calls', () => {
  const input = handleOpsCalldata('0.7', operations07())

  test.each([
    ['another contract', '0x000000000000000000000000000000000000dead', input],
    ['a contract creation', null, input],
    ['the v0.6 EntryPoint with v0.7 calldata', entryPoint06Address, input],
    ['another EntryPoint function', entryPoint07Address, `0x0042dc53${input.slice(10)}`],
    ['empty calldata', entryPoint07Address, '0x'],
    ['a bare selector', entryPoint07Address, input.slice(0, 10)],
    ['non-hex calldata', entryPoint07Address, `${input.slice(0, 10)}zz`],
  ] as const)('%s yields nothing', (_, to, data) => {
    expect(extractUserOperations({ to, input: data as Hex, chainId: CHAIN_ID })).toStrictEqual([])
  })
})
