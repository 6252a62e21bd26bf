/** What the demo's agents append to their calldata: mostly their own code, now and then something else. */
import { Attribution } from 'ox/erc8021'
import { stringToHex, type Address, type Hex } from 'viem'
import { ERC8021_MARKER } from '../../src/attribution/index.js'

/** A code no wallet registers here: its attributions carry no wallet address. */
export const UNREGISTERED_CODE = 'demoapp'
/** The wallet code schema-2 suffixes name beside the agent's own app code. */
export const WALLET_CODE = 'demowallet'

export type SuffixKind = 'schema0' | 'schema0-two-codes' | 'schema1' | 'schema2' | 'none' | 'malformed'

/** A schema-1 suffix's registry: its address and chain. */
export type SuffixRegistry = { address: Address; chainId: number }

/** Share of schema-1 suffixes among the transactions of an agent given a registry. */
export const SCHEMA1_SHARE = 0.25

/** Share of each kind among an agent's transactions (schema 1 aside: only an agent given a registry sends it); they add up to 1. */
export const SUFFIX_WEIGHTS: Readonly<Record<Exclude<SuffixKind, 'schema1'>, number>> = {
  schema0: 0.56,
  'schema0-two-codes': 0.1,
  schema2: 0.14,
  none: 0.14,
  malformed: 0.06,
}

/** Picks a kind by `SUFFIX_WEIGHTS` from `roll` in [0, 1). */
export function pickSuffixKind(roll: number): Exclude<SuffixKind, 'schema1'> {
  let edge = 0
  for (const [kind, weight] of Object.entries(SUFFIX_WEIGHTS) as [Exclude<SuffixKind, 'schema1'>, number][]) {
    edge += weight
    if (roll < edge) return kind
  }
  return 'schema0'
}

// Each is a different way a suffix goes wrong in the wild; the indexer records them as malformed.
const MALFORMED_SUFFIXES: readonly Hex[] = [
  // A code with characters outside [a-z0-9_].
  Attribution.toDataSuffix({ codes: ['Not A Code!'] }),
  // A codes length pointing before the start of the calldata.
  `${stringToHex('abc')}ff00${ERC8021_MARKER}`,
  // Schema 2 whose CBOR map stops after its header.
  `0xa2000102${ERC8021_MARKER}`,
]

/**
 * The suffix of `kind` for an agent whose builder code is `code`; `undefined` for `none`.
 * `n` picks among the malformed variants; `registry` is the one a schema-1 suffix names (without one,
 * schema 1 is sent as schema 0).
 *
 * @example
 * suffixFor('schema0', 'bc_k2j4h1x9', 0) // codes ∥ length ∥ 0x00 ∥ marker
 */
export function suffixFor(kind: SuffixKind, code: string, n: number, registry?: SuffixRegistry): Hex | undefined {
  switch (kind) {
    case 'schema0':
      return Attribution.toDataSuffix({ codes: [code] })
    case 'schema0-two-codes':
      return Attribution.toDataSuffix({ codes: [code, UNREGISTERED_CODE] })
    case 'schema1':
      return Attribution.toDataSuffix(registry ? { codes: [code], codeRegistry: registry } : { codes: [code] })
    case 'schema2':
      return Attribution.toDataSuffix({ appCode: code, walletCode: WALLET_CODE, metadata: { source: 'codetrail-demo' } })
    case 'none':
      return undefined
    case 'malformed':
      return MALFORMED_SUFFIXES[n % MALFORMED_SUFFIXES.length]
  }
}
