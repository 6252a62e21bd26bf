import { createHash } from 'node:crypto'

type Hex = `0x${string}`

/** Which logs to index: contract addresses and topic0 values (empty = any). */
export type LogFilter = { addresses: readonly string[]; topics: readonly string[] }

/** Lowercases, deduplicates and sorts, so equal filters get equal ids. */
export function normalizeFilter(filter: LogFilter): LogFilter {
  const norm = (values: readonly string[]) => [...new Set(values.map((value) => value.toLowerCase()))].sort()
  return { addresses: norm(filter.addresses), topics: norm(filter.topics) }
}

/** A short stable id for a filter: `all` for the unfiltered chain, else a hash of its parts. */
export function filterIdOf(filter: LogFilter): string {
  const { addresses, topics } = normalizeFilter(filter)
  if (addresses.length === 0 && topics.length === 0) return 'all'
  return createHash('sha256')
    .update(`${addresses.join(',')}|${topics.join(',')}`)
    .digest('hex')
    .slice(0, 16)
}

/** The filter in `eth_getLogs` form: topic0 values are one OR-list in the first position. */
export function toRpcFilter(filter: LogFilter): { address?: Hex[]; topics?: Hex[][] } {
  return {
    ...(filter.addresses.length > 0 ? { address: filter.addresses as Hex[] } : {}),
    ...(filter.topics.length > 0 ? { topics: [filter.topics as Hex[]] } : {}),
  }
}

/** Whether the filter matches every log of the chain (no address, no topic). */
export const isEveryLog = (filter: LogFilter): boolean => filter.addresses.length === 0 && filter.topics.length === 0
