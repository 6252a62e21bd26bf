/**
 * Comparing the index with the node itself: attribution rows against the node's canonical transactions,
 * and, when a comparison fails, which blocks differ. Raw JSON-RPC helpers for the fault cases.
 */
import type pg from 'pg'
import { expect } from 'vitest'
import type { Hex } from 'viem'
import { decodeAttribution } from '../../../src/attribution/decode.js'
import { indexedLogs, nodeLogs, type ComparableLog } from '../../helpers/compare.js'

/** Transactions asked for per JSON-RPC batch. */
const BATCH = 100

type NodeTransaction = { hash: string; from: string; to: string | null; input: Hex; blockNumber: string; blockHash: string }

export type ComparableAttribution = {
  txHash: string
  userOpHash: string | null
  builderCode: string
  blockNumber: number
  blockTimestamp: number
  from: string
  sender: string
  to: string | null
  schemaId: number
  codes: string[]
}

/** One JSON-RPC batch; throws on any error answer. */
export async function rpcBatch<T>(url: string, calls: { method: string; params: unknown[] }[]): Promise<T[]> {
  if (calls.length === 0) return []
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', id, ...call }))),
  })
  const answers = (await response.json()) as { id: number; result?: T; error?: { message: string } }[]
  return calls.map((call, id) => {
    const answer = answers.find((a) => a.id === id)
    if (!answer || answer.error) throw new Error(`${call.method}: ${answer?.error?.message ?? 'no answer'}`)
    return answer.result as T
  })
}

/** One JSON-RPC call; throws on an error answer. */
export async function rpcCall<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const [result] = await rpcBatch<T>(url, [{ method, params }])
  return result as T
}

const order = (a: ComparableAttribution, b: ComparableAttribution) =>
  a.blockNumber - b.blockNumber || a.txHash.localeCompare(b.txHash) || a.builderCode.localeCompare(b.builderCode)

/**
 * What `analytics.attributed_transactions` must hold over the range, computed from the node alone: the
 * canonical transactions behind the node's logs (`eth_getLogs`), their inputs (`eth_getTransactionByHash`)
 * decoded with `decodeAttribution`, one row per decoded code. Plain transactions only (no user operations).
 */
export async function nodeAttributions(
  rpcUrl: string,
  range: readonly [number, number],
  filter?: { address?: string[]; topics?: string[][] },
): Promise<ComparableAttribution[]> {
  const logs = await nodeLogs(rpcUrl, range, filter)
  const blockOf = new Map<string, { blockNumber: number; blockHash: string; blockTimestamp: number }>()
  for (const log of logs) blockOf.set(log.transactionHash, log)
  const hashes = [...blockOf.keys()]
  const transactions: NodeTransaction[] = []
  for (let i = 0; i < hashes.length; i += BATCH) {
    const slice = hashes.slice(i, i + BATCH)
    transactions.push(
      ...(await rpcBatch<NodeTransaction>(
        rpcUrl,
        slice.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })),
      )),
    )
  }
  const expected: ComparableAttribution[] = []
  for (const tx of transactions) {
    const at = blockOf.get(tx.hash)!
    // The transaction the node serves must be the one its canonical log names.
    expect(tx.blockHash).toBe(at.blockHash)
    const decoded = decodeAttribution(tx.input)
    if (!decoded?.ok) continue
    for (const builderCode of decoded.codes) {
      expected.push({
        txHash: tx.hash.toLowerCase(),
        userOpHash: null,
        builderCode,
        blockNumber: at.blockNumber,
        blockTimestamp: at.blockTimestamp,
        from: tx.from.toLowerCase(),
        sender: tx.from.toLowerCase(),
        to: tx.to?.toLowerCase() ?? null,
        schemaId: decoded.schemaId,
        codes: decoded.codes,
      })
    }
  }
  return expected.sort(order)
}

/** Rows of `analytics.attributed_transactions` over the range that are not removed, in comparable form. */
export async function indexedAttributions(pool: pg.Pool, [from, to]: readonly [number, number]): Promise<ComparableAttribution[]> {
  const { rows } = await pool.query(
    `SELECT tx_hash, user_op_hash, builder_code, block_number, block_timestamp, from_address, sender, to_address, schema_id, codes
     FROM analytics.attributed_transactions WHERE block_number BETWEEN $1 AND $2 AND NOT removed`,
    [from, to],
  )
  return rows
    .map(
      (row): ComparableAttribution => ({
        txHash: row.tx_hash,
        userOpHash: row.user_op_hash,
        builderCode: row.builder_code,
        blockNumber: row.block_number,
        blockTimestamp: row.block_timestamp.getTime() / 1000,
        from: row.from_address,
        sender: row.sender,
        to: row.to_address,
        schemaId: row.schema_id,
        codes: row.codes,
      }),
    )
    .sort(order)
}

/**
 * Asserts the attribution rows over the range are exactly those of the node's canonical transactions
 * (none missing, none extra, none from an orphaned or dropped transaction), and that each row's status
 * is its transaction's logs' status. Returns how many rows there are.
 */
export async function expectAttributionsMatchNode(
  pool: pg.Pool,
  rpcUrl: string,
  range: readonly [number, number],
  filter?: { address?: string[]; topics?: string[][] },
): Promise<number> {
  const [expected, actual] = await Promise.all([nodeAttributions(rpcUrl, range, filter), indexedAttributions(pool, range)])
  expect(expected.length).toBeGreaterThan(0)
  expect(actual.length).toBe(expected.length)
  expect(actual).toEqual(expected)
  const { rows } = await pool.query(
    `SELECT a.tx_hash, a.status, array_agg(DISTINCT l.status) AS log_statuses
     FROM analytics.attributed_transactions a
     LEFT JOIN analytics.logs l ON l.chain_id = a.chain_id AND l.transaction_hash = a.tx_hash AND NOT l.removed
     WHERE a.block_number BETWEEN $1 AND $2 AND NOT a.removed
     GROUP BY a.tx_hash, a.status`,
    [range[0], range[1]],
  )
  const outOfStep = rows.filter((row) => row.log_statuses.length !== 1 || row.log_statuses[0] !== row.status)
  expect(outOfStep).toEqual([])
  return expected.length
}

/** Blocks of the range whose indexed logs (not removed) differ from the node's, with both counts: what a failure is about. */
export async function blocksDifferingFromNode(pool: pg.Pool, rpcUrl: string, range: readonly [number, number]) {
  const [expected, actual] = await Promise.all([nodeLogs(rpcUrl, range), indexedLogs(pool, range)])
  const key = (log: ComparableLog) => JSON.stringify(log)
  const byBlock = new Map<number, { node: number; index: number; differ: boolean }>()
  const entry = (n: number) => byBlock.get(n) ?? byBlock.set(n, { node: 0, index: 0, differ: false }).get(n)!
  const actualKeys = new Set(actual.map(key))
  const expectedKeys = new Set(expected.map(key))
  for (const log of expected) {
    const e = entry(log.blockNumber)
    e.node++
    if (!actualKeys.has(key(log))) e.differ = true
  }
  for (const log of actual) {
    const e = entry(log.blockNumber)
    e.index++
    if (!expectedKeys.has(key(log))) e.differ = true
  }
  return [...byBlock.entries()].filter(([, e]) => e.differ).map(([block, e]) => ({ block, nodeLogs: e.node, indexedLogs: e.index }))
}
