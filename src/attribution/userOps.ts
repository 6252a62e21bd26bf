import { UserOperation as OxUserOperation } from 'ox/erc4337'
import { type Abi, type AbiFunction, type Address, type Hash, type Hex, decodeAbiParameters, toFunctionSelector } from 'viem'
import {
  type UserOperation,
  entryPoint06Abi,
  entryPoint06Address,
  entryPoint07Abi,
  entryPoint07Address,
  entryPoint08Abi,
  entryPoint08Address,
  getUserOperationHash,
} from 'viem/account-abstraction'
import { type DecodedAttribution, decodeAttribution } from './decode.js'

export type EntryPointVersion = '0.6' | '0.7' | '0.8'

export type ExtractUserOperationsParameters = {
  /** The transaction's recipient; `null` for a contract creation. */
  to: Address | null | undefined
  /** The transaction's calldata. */
  input: Hex
  chainId: number
  /**
   * Lowercase sender → EIP-7702 delegate, for v0.8 operations whose initCode is the 7702 marker:
   * the EntryPoint hashes the sender's delegate in place of the marker, which calldata cannot tell.
   */
  eip7702Delegates?: ReadonlyMap<Address, Address> | undefined
}

export type ExtractedUserOperation = {
  entryPointVersion: EntryPointVersion
  /** As the EntryPoint computes it; `null` for a 7702-marker operation whose delegate was not given. */
  userOpHash: Hash | null
  /** Lowercase. */
  sender: Address
  nonce: bigint
  callData: Hex
  attribution: DecodedAttribution | null
}

/** An EIP-7702 account's code: the delegation designator `0xef0100` then the delegate's address. */
const EIP7702_DESIGNATOR = /^0xef0100([0-9a-f]{40})$/i

/**
 * The delegate an EIP-7702 account's code names (`0xef0100 ∥ address`, as viem's `getDelegation`
 * reads it), lowercase; null for any other code.
 *
 * @example
 * const [delegate] = (await getCodes(client, [[sender, block]])).map(eip7702Delegate)
 */
export function eip7702Delegate(code: string | null | undefined): Address | null {
  const match = code ? EIP7702_DESIGNATOR.exec(code) : null
  return match ? (`0x${match[1]!.toLowerCase()}` as Address) : null
}

/** EntryPoint v0.8 takes this initCode (bare or zero-padded to 20 bytes) to mean "EIP-7702 account". */
const EIP7702_MARKERS = new Set(['0x7702', '0x7702000000000000000000000000000000000000'])
const SELECTOR_HEX_LENGTH = 10
const HANDLE_FUNCTIONS = ['handleOps', 'handleAggregatedOps'] as const

type PackedOperation = Parameters<typeof OxUserOperation.fromPacked>[0]
type EntryPoint = { version: EntryPointVersion; address: Address; functions: Map<string, AbiFunction> }

/** Per lowercase EntryPoint address: its version and its handle functions by selector. */
const ENTRY_POINTS = new Map<string, EntryPoint>(
  (
    [
      ['0.6', entryPoint06Address, entryPoint06Abi],
      ['0.7', entryPoint07Address, entryPoint07Abi],
      ['0.8', entryPoint08Address, entryPoint08Abi],
    ] as const
  ).map(([version, address, abi]) => {
    const functions = HANDLE_FUNCTIONS.map(
      (name) => (abi as Abi).find((item) => item.type === 'function' && item.name === name) as AbiFunction,
    )
    const bySelector = new Map(functions.map((fn) => [toFunctionSelector(fn), fn]))
    return [address.toLowerCase(), { version, address, functions: bySelector }]
  }),
)

/**
 * The ERC-4337 user operations of a `handleOps` / `handleAggregatedOps` call to EntryPoint v0.6,
 * v0.7 or v0.8, each with its hash (viem's `getUserOperationHash`) and the ERC-8021 suffix that
 * ends its `callData`. `[]` for anything else, malformed calldata included; never throws.
 *
 * @example
 * const ops = extractUserOperations({ to: tx.to, input: tx.input, chainId: 8453 })
 */
export function extractUserOperations(parameters: ExtractUserOperationsParameters): ExtractedUserOperation[] {
  const { to, input, chainId, eip7702Delegates } = parameters
  if (!to || input.length < SELECTOR_HEX_LENGTH) return []
  const entryPoint = ENTRY_POINTS.get(to.toLowerCase())
  const fn = entryPoint?.functions.get(input.slice(0, SELECTOR_HEX_LENGTH).toLowerCase())
  if (!entryPoint || !fn) return []

  let operations: readonly UserOperation[]
  try {
    operations = readOperations(entryPoint.version, fn, `0x${input.slice(SELECTOR_HEX_LENGTH)}`)
  } catch {
    return []
  }

  const extracted: ExtractedUserOperation[] = []
  for (const operation of operations) {
    const sender = operation.sender.toLowerCase() as Address
    let userOpHash: Hash | null
    try {
      userOpHash = hashOperation(operation, entryPoint.version, entryPoint.address, chainId, eip7702Delegates)
    } catch {
      // viem refuses only fields no EntryPoint accepts: such an operation never ran.
      continue
    }
    extracted.push({
      entryPointVersion: entryPoint.version,
      userOpHash,
      sender,
      nonce: operation.nonce,
      callData: operation.callData,
      attribution: decodeAttribution(operation.callData),
    })
  }
  return extracted
}

function hashOperation(
  operation: UserOperation,
  version: EntryPointVersion,
  entryPointAddress: Address,
  chainId: number,
  eip7702Delegates: ReadonlyMap<Address, Address> | undefined,
): Hash | null {
  if (version === '0.8' && operation.factory && EIP7702_MARKERS.has(operation.factory.toLowerCase())) {
    const delegate = eip7702Delegates?.get(operation.sender.toLowerCase() as Address)
    if (!delegate) return null
    // Only the delegate address enters the hash; the signature fields are never read.
    operation = { ...operation, authorization: { address: delegate, chainId, nonce: 0, r: '0x', s: '0x', yParity: 0 } }
  }
  return getUserOperationHash({ chainId, entryPointAddress, entryPointVersion: version, userOperation: operation })
}

/** The operations of a handle call, unpacked (v0.7/v0.8 pack theirs) into viem's `UserOperation`. */
function readOperations(version: EntryPointVersion, fn: AbiFunction, args: Hex): readonly UserOperation[] {
  const [first] = decodeAbiParameters(fn.inputs, args) as unknown as [readonly unknown[]]
  const structs = fn.name === 'handleOps' ? first : (first as readonly { userOps: readonly unknown[] }[]).flatMap((group) => group.userOps)
  if (version === '0.6') return structs as readonly UserOperation<'0.6'>[]
  return structs.map((packed) => OxUserOperation.fromPacked(packed as PackedOperation) as unknown as UserOperation)
}
