/**
 * The end of a seed: the index against the node, for every filter that was asked for. Returns each
 * difference as one readable line (filter, block, log index, expected vs stored); none means equal.
 */
import type pg from 'pg'
import { decodeFunctionData, parseEventLogs, type Abi, type Hex, type Log } from 'viem'
import { entryPoint06Abi, entryPoint07Abi, entryPoint08Abi } from 'viem/account-abstraction'
import { decodeAttribution } from '../../src/attribution/decode.js'
import { getIntervals } from '../../src/store/index.js'
import { filterIdOf } from '../../src/sync/filter.js'
import { intervalUnion, type Interval } from '../../src/utils/interval.js'
import { nodeLogs, toComparableLog, type ComparableLog } from '../helpers/compare.js'
import { indexedAttributions, rpcBatch, type ComparableAttribution } from '../faults/helpers/nodeCompare.js'

/** Differences listed per kind before the rest are only counted. */
const SHOWN_PER_KIND = 6
const BATCH = 100
const ENTRY_POINT_ABIS: readonly Abi[] = [entryPoint06Abi, entryPoint07Abi, entryPoint08Abi]

/** A filter that was asked for, and the range it was asked for. */
export type ComparedFilter = { name: string; addresses: string[]; topics: string[]; range: Interval }
/** A row stored from a block that a reorg then orphaned: it must stay, marked removed. */
export type OrphanedRow = { blockNumber: number; blockHash: string; logIndex: number }

type NodeTransaction = { hash: string; from: string; to: string | null; input: Hex; blockHash: string }
type NodeReceipt = { logs: Log[] }

const short = (value: unknown): unknown =>
  typeof value === 'string' && value.length > 74 ? `${value.slice(0, 66)}…(${(value.length - 2) / 2} bytes)` : value

function show(row: object): string {
  return JSON.stringify(Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Array.isArray(v) ? v.map(short) : short(v)])))
}

/** Collects difference lines, at most `SHOWN_PER_KIND` per kind, and counts the rest. */
function createFindings() {
  const lines: string[] = []
  const counts = new Map<string, number>()
  return {
    add(kind: string, line: string) {
      const n = (counts.get(kind) ?? 0) + 1
      counts.set(kind, n)
      if (n <= SHOWN_PER_KIND) lines.push(line)
    },
    lines: () =>
      lines.length === 0
        ? []
        : [
            `in all: ${[...counts].map(([kind, n]) => `${kind} ${n}`).join(', ')}`,
            ...lines,
            ...[...counts].filter(([, n]) => n > SHOWN_PER_KIND).map(([kind, n]) => `… ${n - SHOWN_PER_KIND} more of: ${kind}`),
          ],
  }
}
type Findings = ReturnType<typeof createFindings>

/** Non-removed rows of `analytics.logs` over the range that match the filter (address and topic0, as `eth_getLogs`). */
async function indexedFilterLogs(pool: pg.Pool, filter: ComparedFilter, range: Interval): Promise<(ComparableLog & { status: string })[]> {
  const { rows } = await pool.query(
    `SELECT block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, address, topics, data, removed, status
     FROM analytics.logs
     WHERE block_number BETWEEN $1 AND $2 AND NOT removed
       AND (cardinality($3::text[]) = 0 OR address = ANY($3::text[]))
       AND (cardinality($4::text[]) = 0 OR topics[1] = ANY($4::text[]))
     ORDER BY block_number, log_index`,
    [range[0], range[1], filter.addresses, filter.topics],
  )
  return rows.map((row) => ({ ...toComparableLog(row), status: row.status }))
}

const LOG_FIELDS = ['blockHash', 'blockTimestamp', 'transactionHash', 'transactionIndex', 'address', 'topics', 'data'] as const

type LogField = (typeof LOG_FIELDS)[number]

function differingFields(expected: ComparableLog, stored: ComparableLog): LogField[] {
  return LOG_FIELDS.filter((field) => JSON.stringify(expected[field]) !== JSON.stringify(stored[field]))
}

/** The filter's logs: node against index, keyed by (block, log index). Returns the node's logs. */
async function compareFilterLogs(pool: pg.Pool, rpcUrl: string, filter: ComparedFilter, range: Interval, findings: Findings): Promise<ComparableLog[]> {
  const rpcFilter = {
    ...(filter.addresses.length > 0 ? { address: filter.addresses } : {}),
    ...(filter.topics.length > 0 ? { topics: [filter.topics] } : {}),
  }
  const [expected, stored] = await Promise.all([nodeLogs(rpcUrl, range, rpcFilter), indexedFilterLogs(pool, filter, range)])
  const key = (log: { blockNumber: number; logIndex: number }) => `${log.blockNumber}:${log.logIndex}`
  const storedByKey = new Map<string, typeof stored>()
  for (const row of stored) storedByKey.set(key(row), [...(storedByKey.get(key(row)) ?? []), row])
  const at = (log: ComparableLog) => `filter ${filter.name}: block ${log.blockNumber} log ${log.logIndex}`
  for (const log of expected) {
    const rows = storedByKey.get(key(log)) ?? []
    storedByKey.delete(key(log))
    if (rows.length === 0) {
      findings.add(`${filter.name} missing`, `${at(log)}: missing; node ${show(log)}`)
      continue
    }
    const others = rows.filter((row) => differingFields(log, row).length > 0)
    if (others.length === rows.length) {
      const row = rows[0]!
      const fields = differingFields(log, row)
      findings.add(
        `${filter.name} differing`,
        `${at(log)}: differs in ${fields.join(', ')}; node ${show(Object.fromEntries(fields.map((f) => [f, log[f]])))} stored ${show(Object.fromEntries([...fields.map((f) => [f, row[f]]), ['status', row.status]]))}`,
      )
    }
    if (rows.length > 1) {
      findings.add(`${filter.name} duplicate`, `${at(log)}: ${rows.length} rows not removed: ${rows.map((r) => `${r.blockHash} (${r.status})`).join(', ')}`)
    }
  }
  for (const rows of storedByKey.values()) {
    for (const row of rows) findings.add(`${filter.name} extra`, `${at(row)}: stored but not on the node: ${show(row)}`)
  }
  return expected
}

/** What the attribution rows must be: the decoded suffixes of the canonical transactions behind the filters' logs, and of their user operations. */
async function nodeAttributionRows(rpcUrl: string, logs: readonly ComparableLog[], entryPoints: readonly string[]): Promise<ComparableAttribution[]> {
  const blockOf = new Map(logs.map((log) => [log.transactionHash, log]))
  const hashes = [...blockOf.keys()]
  const transactions: NodeTransaction[] = []
  for (let i = 0; i < hashes.length; i += BATCH) {
    const slice = hashes.slice(i, i + BATCH)
    transactions.push(...(await rpcBatch<NodeTransaction>(rpcUrl, slice.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })))))
  }
  const rows: ComparableAttribution[] = []
  const row = (tx: NodeTransaction, sender: string, userOpHash: string | null, input: Hex) => {
    const decoded = decodeAttribution(input)
    if (!decoded?.ok) return
    const at = blockOf.get(tx.hash)!
    for (const builderCode of decoded.codes) {
      rows.push({
        txHash: tx.hash.toLowerCase(),
        userOpHash,
        builderCode,
        blockNumber: at.blockNumber,
        blockTimestamp: at.blockTimestamp,
        from: tx.from.toLowerCase(),
        sender: sender.toLowerCase(),
        to: tx.to?.toLowerCase() ?? null,
        schemaId: decoded.schemaId,
        codes: decoded.codes,
      })
    }
  }
  const bundles = transactions.filter((tx) => tx.to && entryPoints.includes(tx.to.toLowerCase()))
  const receipts = await rpcBatch<NodeReceipt>(rpcUrl, bundles.map((tx) => ({ method: 'eth_getTransactionReceipt', params: [tx.hash] })))
  for (const tx of transactions) row(tx, tx.from, null, tx.input)
  bundles.forEach((tx, i) => {
    const abi = ENTRY_POINT_ABIS[entryPoints.indexOf(tx.to!.toLowerCase())]!
    const { functionName, args } = decodeFunctionData({ abi, data: tx.input }) as { functionName: string; args: readonly unknown[] }
    if (functionName !== 'handleOps') return
    const events = parseEventLogs({ abi, logs: receipts[i]!.logs, eventName: 'UserOperationEvent' }) as unknown as {
      args: { userOpHash: Hex; sender: string; nonce: bigint }
    }[]
    for (const op of args[0] as { sender: string; nonce: bigint; callData: Hex }[]) {
      const event = events.find((e) => e.args.sender.toLowerCase() === op.sender.toLowerCase() && e.args.nonce === op.nonce)
      if (event) row(tx, op.sender, event.args.userOpHash.toLowerCase(), op.callData)
    }
  })
  return rows
}

function compareAttributions(expected: ComparableAttribution[], stored: ComparableAttribution[], findings: Findings) {
  const key = (a: ComparableAttribution) => `${a.txHash}|${a.userOpHash ?? ''}|${a.builderCode}`
  const expectedByKey = new Map(expected.map((a) => [key(a), a]))
  const storedByKey = new Map<string, ComparableAttribution[]>()
  for (const a of stored) storedByKey.set(key(a), [...(storedByKey.get(key(a)) ?? []), a])
  const what = (a: ComparableAttribution) => `attribution block ${a.blockNumber} tx ${a.txHash}${a.userOpHash ? ` user op ${a.userOpHash}` : ''} code ${a.builderCode}`
  for (const [k, a] of expectedByKey) {
    const rows = storedByKey.get(k) ?? []
    if (rows.length === 0) findings.add('attribution missing', `${what(a)}: missing; node ${show(a)}`)
    else if (!rows.some((r) => JSON.stringify(r) === JSON.stringify(a))) findings.add('attribution differing', `${what(a)}: node ${show(a)} stored ${show(rows[0]!)}`)
    if (rows.length > 1) findings.add('attribution duplicate', `${what(a)}: ${rows.length} rows not removed`)
  }
  for (const [k, rows] of storedByKey) {
    if (!expectedByKey.has(k)) findings.add('attribution extra', `${what(rows[0]!)}: stored (not removed) but no canonical transaction carries it: ${show(rows[0]!)}`)
  }
}

/** Canonical block hashes of the node by number. */
async function canonicalHashes(rpcUrl: string, numbers: readonly number[]): Promise<Map<number, string>> {
  const hashes = new Map<number, string>()
  for (let i = 0; i < numbers.length; i += BATCH) {
    const slice = numbers.slice(i, i + BATCH)
    const blocks = await rpcBatch<{ hash: string } | null>(rpcUrl, slice.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, false] })))
    slice.forEach((n, j) => blocks[j] && hashes.set(n, blocks[j]!.hash.toLowerCase()))
  }
  return hashes
}

/** Rows the index holds beyond the filters: rows of orphaned blocks not removed, leftover pending rows, orphaned rows lost, stale statuses. */
async function compareRowStates(pool: pg.Pool, rpcUrl: string, orphanedRows: readonly OrphanedRow[], findings: Findings) {
  const { rows: perBlock } = await pool.query(
    `SELECT block_number, block_hash, count(*)::int AS n FROM logs WHERE NOT removed AND status <> 'pending' GROUP BY 1, 2 ORDER BY 1`,
  )
  const canonical = await canonicalHashes(rpcUrl, [...new Set([...perBlock.map((r) => Number(r.block_number)), ...orphanedRows.map((r) => r.blockNumber)])])
  for (const r of perBlock) {
    if (canonical.get(Number(r.block_number)) !== r.block_hash) {
      findings.add('orphaned block not removed', `block ${r.block_number}: ${r.n} rows of orphaned block ${r.block_hash} not removed (canonical ${canonical.get(Number(r.block_number))})`)
    }
  }
  const { rows: pending } = await pool.query(
    `SELECT transaction_hash, block_number, count(*)::int AS n FROM logs WHERE status = 'pending' AND NOT removed GROUP BY 1, 2 ORDER BY 2`,
  )
  for (const r of pending) findings.add('pending left', `block ${r.block_number}: ${r.n} pending rows of ${r.transaction_hash} neither confirmed nor removed`)

  for (const orphan of orphanedRows) {
    if (canonical.get(orphan.blockNumber) === orphan.blockHash) continue
    const { rows } = await pool.query(`SELECT removed FROM logs WHERE block_number = $1 AND block_hash = $2 AND log_index = $3`, [
      orphan.blockNumber,
      orphan.blockHash,
      orphan.logIndex,
    ])
    if (rows.length === 0) findings.add('orphaned row lost', `block ${orphan.blockNumber} log ${orphan.logIndex}: row of orphaned block ${orphan.blockHash} was deleted`)
    else if (!rows[0].removed) findings.add('orphaned row not removed', `block ${orphan.blockNumber} log ${orphan.logIndex}: row of orphaned block ${orphan.blockHash} not marked removed`)
  }

  const { rows: stale } = await pool.query(
    `SELECT l.block_number, count(*)::int AS n, c.finalized_block FROM logs l, chain_state c
     WHERE NOT l.removed AND l.status = 'confirmed' AND l.block_number <= c.finalized_block GROUP BY 1, 3 ORDER BY 1`,
  )
  for (const r of stale) findings.add('not finalized', `block ${r.block_number}: ${r.n} rows still confirmed at or below the finalized block ${r.finalized_block}`)
}

/** Every difference between the index and the node, as lines; empty when they are equal. */
export async function compareWithNode(parameters: {
  pool: pg.Pool
  rpcUrl: string
  filters: readonly ComparedFilter[]
  orphanedRows: readonly OrphanedRow[]
  entryPoints: readonly string[]
  chainId: number
  /** Told what is compared beyond the ranges asked for. */
  note: (line: string) => void
}): Promise<string[]> {
  const { pool, rpcUrl, filters } = parameters
  const findings = createFindings()
  const covered: ComparableLog[] = []
  let top = 0
  for (const filter of filters) {
    // What the index claims to hold for the filter is compared too, asked for or not.
    const claimed = await getIntervals(pool, parameters.chainId, filterIdOf(filter))
    for (const range of intervalUnion([filter.range, ...claimed])) {
      if (range[0] < filter.range[0] || range[1] > filter.range[1]) parameters.note(`filter ${filter.name}: comparing blocks ${range[0]}–${range[1]} (claimed ${JSON.stringify(claimed)})`)
      covered.push(...(await compareFilterLogs(pool, rpcUrl, filter, range, findings)))
      top = Math.max(top, range[1])
    }
  }
  const entryPoints = parameters.entryPoints.map((a) => a.toLowerCase())
  const [expected, stored] = await Promise.all([nodeAttributionRows(rpcUrl, covered, entryPoints), indexedAttributions(pool, [0, top])])
  compareAttributions(expected, stored, findings)
  await compareRowStates(pool, rpcUrl, parameters.orphanedRows, findings)
  return findings.lines()
}
