import { parseAbi, toEventSelector } from 'viem'

/** The events of Base's BuilderCodes registry (ERC-721) that `public.registry_codes` reads. */
export const builderCodesRegistryAbi = parseAbi([
  'event CodeRegistered(uint256 indexed tokenId, string code)',
  'event PayoutAddressUpdated(uint256 indexed tokenId, address payoutAddress)',
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
])

/**
 * The log filter of a BuilderCodes registry: its address and the three events, so the registry is
 * indexed whatever `INDEX_ADDRESSES`/`INDEX_TOPICS` select.
 *
 * @example
 * builderCodesRegistryFilter('0x…') // { addresses: ['0x…'], topics: [CodeRegistered, PayoutAddressUpdated, Transfer] }
 */
export function builderCodesRegistryFilter(address: string): { addresses: string[]; topics: string[] } {
  return { addresses: [address.toLowerCase()], topics: builderCodesRegistryAbi.map((event) => toEventSelector(event)) }
}
