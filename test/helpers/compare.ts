import type pg from 'pg'
import { expect } from 'vitest'

type NodeLog = {
  address: string
  topics: string[]
  data: string
  blockNumber: string
  blockHash: string
  blockTimestamp?: string
  transactionHash: string
  transactionIndex: string
  logIndex: string
  removed: boolean
}

export type ComparableLog = {
  blockNumber: number
  blockHash: string
  blockTimestamp: number
  transactionHash: string
  transactionIndex: number
  logIndex: number
  address: string
  topics: string[]
  data: string
  removed: boolean
}

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await response.json()) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result as T
}

/** The node's own `eth_getLogs` over the range (asked in 1000-block slices), in comparable form. */
export async function nodeLogs(
  rpcUrl: string,
  [from, to]: readonly [number, number],
  filter: { address?: string[]; topics?: string[][] } = {},
) {
  const logs: ComparableLog[] = []
  for (let start = from; start <= to; start += 1000) {
    const end = Math.min(to, start + 999)
    const slice = await rpc<NodeLog[]>(rpcUrl, 'eth_getLogs', [
      { fromBlock: `0x${start.toString(16)}`, toBlock: `0x${end.toString(16)}`, ...filter },
    ])
    for (const log of slice) {
      logs.push({
        blockNumber: Number(log.blockNumber),
        blockHash: log.blockHash,
        blockTimestamp: Number(log.blockTimestamp),
        transactionHash: log.transactionHash,
        transactionIndex: Number(log.transactionIndex),
        logIndex: Number(log.logIndex),
        address: log.address.toLowerCase(),
        topics: log.topics,
        data: log.data,
        removed: log.removed,
      })
    }
  }
  return logs
}

/** Rows of `analytics.logs` over the range (not removed unless asked), in comparable form. */
export async function indexedLogs(
  pool: pg.Pool,
  [from, to]: readonly [number, number],
  { includeRemoved = false, chainId }: { includeRemoved?: boolean; chainId?: number } = {},
) {
  const { rows } = await pool.query(
    `SELECT block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, address, topics, data, removed
     FROM analytics.logs WHERE block_number BETWEEN $1 AND $2 AND ($3 OR NOT removed) AND ($4::int IS NULL OR chain_id = $4)
     ORDER BY block_number, log_index, block_hash`,
    [from, to, includeRemoved, chainId ?? null],
  )
  return rows.map(toComparableLog)
}

/** A row of `analytics.logs` (snake_case columns) in comparable form. */
export function toComparableLog(row: Record<string, any>): ComparableLog {
  return {
    blockNumber: row.block_number,
    blockHash: row.block_hash,
    blockTimestamp: row.block_timestamp.getTime() / 1000,
    transactionHash: row.transaction_hash,
    transactionIndex: row.transaction_index,
    logIndex: row.log_index,
    address: row.address,
    topics: row.topics,
    data: row.data,
    removed: row.removed,
  }
}

/** Asserts the index holds exactly the node's logs over the range — every field, no duplicate, nothing missing. */
export async function expectIndexMatchesNode(
  pool: pg.Pool,
  rpcUrl: string,
  range: readonly [number, number],
  filter?: { address?: string[]; topics?: string[][] },
  /** Only this chain's rows, where the index holds several. */
  chainId?: number,
) {
  const [expected, actual] = await Promise.all([
    nodeLogs(rpcUrl, range, filter),
    indexedLogs(pool, range, chainId === undefined ? {} : { chainId }),
  ])
  expect(expected.length).toBeGreaterThan(0)
  expect(actual.length).toBe(expected.length)
  expect(actual).toEqual(expected)
  // Pending rows all carry the zero hash; their identity is (transaction, ordinal), checked by its unique index.
  const { rows } = await pool.query(
    `SELECT count(*) AS n, count(DISTINCT (block_hash, log_index)) AS d FROM logs WHERE status <> 'pending'`,
  )
  expect(rows[0].n).toBe(rows[0].d)
  return expected.length
}

/** Waits until `check` returns true, polling; fails with `what` after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 60_000, everyMs = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
