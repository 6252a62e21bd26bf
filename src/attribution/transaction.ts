import type { Address, Hex } from 'viem'
import { type AttributionRole, type CodeRegistry, codeAttributions, decodeAttribution, type DecodedAttribution } from './decode.js'
import { extractUserOperations } from './userOps.js'

/** The fields of a node's transaction object that attribution reads. */
export type TransactionInput = { hash: string; from: string; to: string | null; input: string; type?: string }

/** OP-stack deposit transactions (the L1-attributes and BaseTime system calls, bridged deposits): not user transactions. */
const DEPOSIT_TYPE = '0x7e'

export function isDepositTransaction(tx: Pick<TransactionInput, 'type'>): boolean {
  return tx.type?.toLowerCase() === DEPOSIT_TYPE
}

/** One (transaction or user operation, code, role) row. `userOpHash` is '' for a plain transaction. */
export type AttributionEntry = {
  userOpHash: string
  builderCode: string
  codeIndex: number
  /** Schema 2's role for the code; null for schemas 0 and 1. */
  role: AttributionRole | null
  /** The registry the suffix names for this code (schema 1's, or schema 2's for the role). */
  registry: CodeRegistry | null
  sender: string
  schemaId: number
  codes: string[]
}

/** What codetrail stores about a transaction's attribution, decided from its input alone. */
export type TransactionAttribution = {
  hash: string
  from: string
  to: string | null
  inputSize: number
  hasSuffix: boolean
  schemaId: number | null
  codes: string[] | null
  registry: CodeRegistry | null
  cbor: unknown
  malformedReason: string | null
  userOperations: number
  entries: AttributionEntry[]
  /**
   * EntryPoint v0.8 operations from EIP-7702 accounts whose hash needs the sender's delegate, which
   * calldata cannot tell: their senders, and the transaction to decode again with the delegates.
   */
  eip7702: { senders: string[]; tx: TransactionInput } | null
  /** A deposit (type 0x7e): never decoded, attributed or stored as a user transaction. */
  deposit: boolean
}

function entriesOf(decoded: DecodedAttribution | null, sender: string, userOpHash: string): AttributionEntry[] {
  if (!decoded?.ok) return []
  return codeAttributions(decoded).map(({ code, codeIndex, role, registry }) => ({
    userOpHash,
    builderCode: code,
    codeIndex,
    role,
    registry,
    sender,
    schemaId: decoded.schemaId,
    codes: decoded.codes,
  }))
}

/**
 * Decodes a transaction's ERC-8021 suffix and, for an EntryPoint `handleOps` call, the suffix of each
 * user operation's `callData` (attributed to the operation's sender). `eip7702Delegates` (lowercase
 * sender → delegate) completes the hashes of EIP-7702 operations; without it they are listed in
 * `eip7702`. Never throws.
 */
export function attributeTransaction(
  tx: TransactionInput,
  chainId: number,
  eip7702Delegates?: ReadonlyMap<Address, Address>,
): TransactionAttribution {
  const input = tx.input as Hex
  const from = tx.from.toLowerCase()
  const to = tx.to?.toLowerCase() ?? null
  const inputSize = (input.length - 2) / 2
  if (isDepositTransaction(tx)) {
    return {
      hash: tx.hash.toLowerCase(),
      from,
      to,
      inputSize,
      hasSuffix: false,
      schemaId: null,
      codes: null,
      registry: null,
      cbor: null,
      malformedReason: null,
      userOperations: 0,
      entries: [],
      eip7702: null,
      deposit: true,
    }
  }
  const decoded = decodeAttribution(input)
  const operations = to ? extractUserOperations({ to: to as Address, input, chainId, eip7702Delegates }) : []
  const undelegated = [...new Set(operations.filter((op) => op.userOpHash === null).map((op) => op.sender))]
  const entries = entriesOf(decoded, from, '')
  const seen = new Set<string>()
  for (const op of operations) {
    // A reverted bundle may repeat an operation; its rows are keyed by hash, so it counts once.
    if (!op.userOpHash || seen.has(op.userOpHash)) continue
    seen.add(op.userOpHash)
    entries.push(...entriesOf(op.attribution, op.sender, op.userOpHash))
  }
  return {
    hash: tx.hash.toLowerCase(),
    from,
    to,
    inputSize,
    hasSuffix: decoded !== null,
    schemaId: decoded?.schemaId ?? null,
    codes: decoded?.ok ? decoded.codes : null,
    registry: decoded?.ok ? (decoded.registry ?? null) : null,
    cbor: decoded?.ok && decoded.cbor ? decoded.cbor : null,
    malformedReason: decoded && !decoded.ok ? decoded.reason : null,
    userOperations: operations.length,
    entries,
    eip7702: undelegated.length > 0 ? { senders: undelegated, tx } : null,
    deposit: false,
  }
}
