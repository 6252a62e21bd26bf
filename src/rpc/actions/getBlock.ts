import type { RpcCall, RpcClient, RpcRequestOptions } from '../client.js'
import { batchWithRetry, withRetry } from '../retry.js'
import { isHash, isObject, malformed, quantity } from './answer.js'
import { parseTransaction, type Transaction } from './getTransactionByHash.js'

const METHOD = 'eth_getBlockByNumber'

/**
 * A block header as the indexer keeps it: enough to link blocks and check logs against them, and how
 * many transactions the block holds where the node's answer listed them.
 */
export type BlockHeader = {
  number: number
  /** Lowercase, as every hash the actions return. */
  hash: string
  parentHash: string
  timestamp: number
  /** Milliseconds since the epoch where the node serves `timestampMs` (Base since Denim); null where it serves none. */
  timestampMs?: number | null
  logsBloom?: string
  transactionCount?: number
}

/** A block read with its transactions, which are as the node sent them (checked, not copied). */
export type BlockWithTransactions = BlockHeader & { transactions: readonly Transaction[] }

export type BlockTag = 'latest' | 'safe' | 'finalized'

/** A height, or a tag the node resolves (`pending`: the block it is building, where it builds one). */
export type BlockSelector = number | BlockTag | 'pending'

export type GetBlockParameters = { includeTransactions?: boolean }

/**
 * The `eth_getBlockByNumber` call for `block`, to send alone or in a batch with other calls.
 *
 * @example
 * const [block] = await client.batch([getBlockRequest(n, { includeTransactions: true }), getLogsRequest(filter)])
 */
export function getBlockRequest(block: BlockSelector, { includeTransactions = false }: GetBlockParameters = {}): RpcCall {
  return { method: METHOD, params: [typeof block === 'number' ? `0x${block.toString(16)}` : block, includeTransactions] }
}

/**
 * A node's block object (a header, a full block, or a `newHeads` notification) as a {@link BlockHeader},
 * hashes lowercased; null where the node has no such block. Anything else throws an `InconsistentAnswerError`.
 */
export function parseBlockHeader(answer: unknown, method = METHOD): BlockHeader | null {
  if (answer === null) return null
  if (!isObject(answer)) return malformed(method, `${typeof answer}, not a block`)
  const { hash, parentHash, timestampMs, logsBloom, transactions } = answer
  if (!isHash(hash) || !isHash(parentHash)) return malformed(method, `a block without a hash or a parent hash`)
  if (timestampMs != null && typeof timestampMs !== 'number' && typeof timestampMs !== 'string')
    return malformed(method, `timestampMs ${JSON.stringify(timestampMs)}`)
  if (logsBloom !== undefined && typeof logsBloom !== 'string') return malformed(method, `logsBloom ${JSON.stringify(logsBloom)}`)
  return {
    number: quantity(method, 'number', answer.number),
    hash: hash.toLowerCase(),
    parentHash: parentHash.toLowerCase(),
    timestamp: quantity(method, 'timestamp', answer.timestamp),
    timestampMs: timestampMs == null ? null : Number(timestampMs),
    ...(logsBloom ? { logsBloom: logsBloom.toLowerCase() } : {}),
    ...(Array.isArray(transactions) ? { transactionCount: transactions.length } : {}),
  }
}

/** A block read with `includeTransactions`, null where the node has none; its transactions are checked one by one. */
export function parseBlockWithTransactions(answer: unknown): BlockWithTransactions | null {
  const header = parseBlockHeader(answer)
  if (!header) return null
  const { transactions } = answer as { transactions?: unknown }
  if (!Array.isArray(transactions)) return malformed(METHOD, `block ${header.number} without its transactions`)
  for (const transaction of transactions)
    if (!parseTransaction(transaction, METHOD)) malformed(METHOD, `a null transaction in block ${header.number}`)
  return { ...header, transactions: transactions as Transaction[] }
}

/** The height of the node's `pending` block, whose hash is null; null where the node builds none. */
export function parsePendingBlockNumber(answer: unknown): number | null {
  if (answer === null) return null
  if (!isObject(answer)) return malformed(METHOD, `${typeof answer}, not a block`)
  return quantity(METHOD, 'number', answer.number)
}

/**
 * The header at a height or tag, asked once (no retry), null where the node has none.
 *
 * @example
 * const safe = await getBlock(client, 'safe', { timeoutMs: 2_000 })
 */
export async function getBlock(
  client: Pick<RpcClient, 'request'>,
  block: number | BlockTag,
  options?: RpcRequestOptions,
): Promise<BlockHeader | null> {
  const { method, params } = getBlockRequest(block)
  return parseBlockHeader(await client.request(method, params, options))
}

/**
 * The block at a height or tag with its transactions, asked once, null where the node has none.
 *
 * @example
 * const newest = await getBlockWithTransactions(client, 'latest')
 */
export async function getBlockWithTransactions(
  client: Pick<RpcClient, 'request'>,
  block: number | BlockTag,
): Promise<BlockWithTransactions | null> {
  const { method, params } = getBlockRequest(block, { includeTransactions: true })
  return parseBlockWithTransactions(await client.request(method, params))
}

/**
 * The header at a height or tag, null where the node has none; transient errors are asked again.
 *
 * @example
 * const head = await getBlockHeader(client, 'latest')
 */
export function getBlockHeader(client: Pick<RpcClient, 'request'>, block: number | BlockTag): Promise<BlockHeader | null> {
  return withRetry(() => getBlock(client, block))
}

/**
 * The headers of these heights, in order, in batches (asked again in halves after a failure). A node
 * behind others (load-balanced endpoints) may not have a block yet: that is asked again like any
 * transient error.
 */
export function getBlockHeaders(client: Pick<RpcClient, 'batch'>, numbers: readonly number[]): Promise<BlockHeader[]> {
  return batchWithRetry(numbers, async (part) => {
    const blocks = await client.batch(part.map((n) => getBlockRequest(n)))
    return blocks.map((block, i) => parseBlockHeader(block) ?? missingBlock(part[i]!))
  })
}

/**
 * Blocks with their transactions, in order, in one batch of the client's (asked once); null where the
 * node has no such block yet.
 *
 * @example
 * const blocks = await getBlocksWithTransactions(client, [100, 101])
 */
export async function getBlocksWithTransactions(
  client: Pick<RpcClient, 'batch'>,
  numbers: readonly number[],
): Promise<(BlockWithTransactions | null)[]> {
  return (await client.batch(numbers.map((n) => getBlockRequest(n, { includeTransactions: true })))).map(parseBlockWithTransactions)
}

/** A height the node lacks where every height was wanted: a node behind the others, asked again. */
export function missingBlock(number: number): never {
  throw new Error(`node has no block ${number}`)
}
