import type { TransactionDecodeRow } from '../../src/store/attributions.js'

/** A decoded transaction as the attributor hands it to `upsertTransactions`: no suffix, unless `overrides` give one. */
export function decodedTransaction(hash: string, overrides: Partial<TransactionDecodeRow> = {}): TransactionDecodeRow {
  return {
    hash,
    from: `0x${'f1'.padStart(40, '0')}`,
    to: null,
    inputSize: 100,
    hasSuffix: false,
    schemaId: null,
    codes: null,
    registryAddress: null,
    registryChainId: null,
    registryVerified: null,
    registryUnverifiedReason: null,
    cbor: null,
    malformedReason: null,
    userOperations: 0,
    ...overrides,
  }
}
