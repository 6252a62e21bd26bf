import type { RpcClient } from './client.js'
import { withRetry } from './retry.js'

/**
 * A block header as the indexer keeps it: enough to link blocks and check logs against them, and how
 * many transactions the block holds where the node's answer listed them.
 */
export type BlockHeader = {
  number: number
  hash: string
  parentHash: string
  timestamp: number
  /** Milliseconds since the epoch where the node serves `timestampMs` (Base since Denim); null where it serves none. */
  timestampMs?: number | null
  logsBloom?: string
  transactionCount?: number
}

/** The header fields of a node's block object (a full block carries more; they are ignored here). */
export type RpcBlockHeader = {
  number: string
  hash: string
  parentHash: string
  timestamp: string
  timestampMs?: string | number | null
  logsBloom?: string
  transactions?: readonly unknown[]
}

export type BlockTag = 'latest' | 'safe' | 'finalized'

const hex = (n: number) => `0x${n.toString(16)}`

/** Decodes a node's block object into a {@link BlockHeader}, hashes lowercased. */
export function toBlockHeader(block: RpcBlockHeader): BlockHeader {
  return {
    number: Number(block.number),
    hash: block.hash.toLowerCase(),
    parentHash: block.parentHash.toLowerCase(),
    timestamp: Number(block.timestamp),
    timestampMs: block.timestampMs == null ? null : Number(block.timestampMs),
    ...(block.logsBloom ? { logsBloom: block.logsBloom.toLowerCase() } : {}),
    ...(Array.isArray(block.transactions) ? { transactionCount: block.transactions.length } : {}),
  }
}

/**
 * The header at a height or tag, null where the node has none; transient errors are asked again.
 *
 * @example
 * const head = await getBlockHeader(client, 'latest')
 */
export async function getBlockHeader(client: Pick<RpcClient, 'request'>, block: number | BlockTag): Promise<BlockHeader | null> {
  const raw = await withRetry(() => client.request<RpcBlockHeader | null>('eth_getBlockByNumber', [typeof block === 'number' ? hex(block) : block, false]))
  return raw ? toBlockHeader(raw) : null
}

/**
 * The headers of these heights, in order, in batches. A node behind others (load-balanced endpoints)
 * may not have a block yet: that is asked again like any transient error.
 */
export function getBlockHeaders(client: Pick<RpcClient, 'batch'>, numbers: readonly number[]): Promise<BlockHeader[]> {
  return withRetry(async () => {
    const blocks = await client.batch<RpcBlockHeader | null>(numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [hex(n), false] })))
    return blocks.map((block, i) => {
      if (!block) throw new Error(`node has no block ${numbers[i]}`)
      return toBlockHeader(block)
    })
  })
}
