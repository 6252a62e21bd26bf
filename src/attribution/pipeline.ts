import type pg from 'pg'
import { encodeFunctionData, parseAbi, decodeFunctionResult } from 'viem'
import type { Logger } from '../logger.js'
import type { RpcCall } from '../rpc/index.js'
import {
  knownTransactions,
  upsertAttributions,
  upsertTransactions,
  type TransactionDecodeRow,
  type TransactionPosition,
} from '../store/attributions.js'
import type { LogRow, Status } from '../store/index.js'
import { attributeTransaction, type TransactionAttribution, type TransactionInput } from './attribute.js'

/** Calls per JSON-RPC batch and batches in flight: FACTS measured ~5–6 k tx/s at 100 × 4. */
const BATCH_SIZE = 100
const BATCHES_IN_FLIGHT = 4
const registryAbi = parseAbi(['function isRegistered(string code) view returns (bool)'])

type RpcTransaction = TransactionInput & { blockNumber: string | null; blockHash: string | null; transactionIndex: string | null }
type RpcReceipt = { transactionHash: string; gasUsed: string }

export type Writes = (client: pg.PoolClient) => Promise<void>

export type AttributorContext = {
  /** Calls here should already retry transient errors (see `withRetry`). */
  rpc: { request<T>(method: string, params: unknown[]): Promise<T>; batch<T>(calls: RpcCall[]): Promise<T[]> }
  chainId: number
  logger: Logger
  pool: pg.Pool
}

/** Runs `fn` over `items` in slices of `size`, at most `parallel` slices at once, results in order. */
async function inSlices<T, R>(items: readonly T[], size: number, parallel: number, fn: (slice: T[]) => Promise<R[]>): Promise<R[]> {
  const slices: T[][] = []
  for (let i = 0; i < items.length; i += size) slices.push(items.slice(i, i + size))
  const results: R[][] = new Array(slices.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(parallel, slices.length) }, async () => {
      while (next < slices.length) {
        const index = next++
        results[index] = await fn(slices[index]!)
      }
    }),
  )
  return results.flat()
}

/**
 * Attribution of the transactions behind stored logs: fetches the inputs of transactions not decoded
 * yet (JSON-RPC batches), decodes their ERC-8021 suffixes and user operations, checks schema-1 codes
 * against a registry on this chain, and returns the writes that store them beside the logs.
 */
export function createAttributor(context: AttributorContext) {
  const { rpc, chainId } = context
  const registryAnswers = new Map<string, Promise<boolean | null>>()

  /** Whether the registry (on this chain) knows the code; null when the call failed for another reason than a revert. */
  function isRegistered(registry: string, code: string): Promise<boolean | null> {
    const key = `${registry}:${code}`
    let answer = registryAnswers.get(key)
    if (!answer) {
      answer = rpc
        .request<string>('eth_call', [{ to: registry, data: encodeFunctionData({ abi: registryAbi, functionName: 'isRegistered', args: [code] }) }, 'latest'])
        .then((result) => decodeFunctionResult({ abi: registryAbi, functionName: 'isRegistered', data: result as `0x${string}` }))
        .catch((error: { code?: number; cause?: { code?: number } }) => {
          const code = error.code ?? error.cause?.code
          // A revert (code 3, or -32000 "execution reverted") means: not registered.
          return code === 3 || code === -32000 ? false : null
        })
      registryAnswers.set(key, answer)
    }
    return answer
  }

  async function decode(hashes: readonly string[]): Promise<{ rows: TransactionDecodeRow[]; attributions: TransactionAttribution[] }> {
    const transactions = await inSlices(hashes, BATCH_SIZE, BATCHES_IN_FLIGHT, (slice) =>
      rpc.batch<RpcTransaction | null>(slice.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] }))),
    )
    const attributions: TransactionAttribution[] = []
    transactions.forEach((tx, i) => {
      // A transaction the node no longer knows (dropped from the pool) is simply not attributed.
      if (tx) attributions.push(attributeTransaction(tx, chainId))
      else context.logger.debug({ tx_hash: hashes[i] }, 'transaction not found for attribution')
    })
    const attributed = attributions.filter((a) => a.entries.length > 0).map((a) => a.hash)
    const receipts = await inSlices(attributed, BATCH_SIZE, BATCHES_IN_FLIGHT, (slice) =>
      rpc.batch<RpcReceipt | null>(slice.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] }))),
    )
    const gasUsed = new Map(receipts.filter((r): r is RpcReceipt => r !== null).map((r) => [r.transactionHash.toLowerCase(), Number(r.gasUsed)]))
    const rows = await Promise.all(
      attributions.map(async (a): Promise<TransactionDecodeRow> => {
        const onThisChain = a.registry && a.registry.chainId === chainId
        const verified = onThisChain ? await Promise.all(a.codes!.map((code) => isRegistered(a.registry!.address, code))) : null
        return {
          hash: a.hash,
          from: a.from,
          to: a.to,
          inputSize: a.inputSize,
          hasSuffix: a.hasSuffix,
          schemaId: a.schemaId,
          codes: a.codes,
          registryAddress: a.registry?.address ?? null,
          registryChainId: a.registry?.chainId ?? null,
          registryVerified: verified ? (verified.includes(null) ? null : verified.every(Boolean)) : null,
          cbor: a.cbor,
          malformedReason: a.malformedReason,
          userOperations: a.userOperations,
          gasUsed: gasUsed.get(a.hash) ?? null,
        }
      }),
    )
    return { rows, attributions }
  }

  /**
   * Prepares the attribution of the transactions behind `rows` (fetching and decoding happen now,
   * outside any database transaction); the returned writes store them with the logs.
   */
  async function forLogs(rows: readonly LogRow[], statusOf: (blockNumber: number) => Status): Promise<Writes> {
    const positions = new Map<string, TransactionPosition>()
    for (const row of rows) {
      if (!positions.has(row.transactionHash)) {
        positions.set(row.transactionHash, {
          hash: row.transactionHash,
          blockNumber: row.blockNumber,
          blockHash: row.blockHash,
          blockTimestamp: row.blockTimestamp,
          transactionIndex: row.transactionIndex,
          status: statusOf(row.blockNumber),
        })
      }
    }
    const hashes = [...positions.keys()]
    const known = await knownTransactions(context.pool, chainId, hashes)
    const { rows: decoded, attributions } = await decode(hashes.filter((hash) => !known.has(hash)))
    const gasOf = new Map(decoded.map((row) => [row.hash, row.gasUsed]))
    const entries = attributions.flatMap((a) =>
      a.entries.map((entry) => ({ ...entry, txHash: a.hash, from: a.from, to: a.to, gasUsed: gasOf.get(a.hash) ?? null })),
    )
    return async (client) => {
      await upsertTransactions(client, chainId, decoded, positions)
      await upsertAttributions(client, chainId, entries, positions)
    }
  }

  return { forLogs, decode }
}

export type Attributor = ReturnType<typeof createAttributor>
