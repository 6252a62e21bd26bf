/**
 * The end of a seed: the index against the node, for every filter that was asked for. Returns each
 * difference as one readable line (filter, block, log index, expected vs stored); none means equal.
 */
import type pg from 'pg'
import { decodeFunctionData, parseEventLogs, type Abi, type Hex, type Log } from 'viem'
import { entryPoint06Abi, entryPoint07Abi, entryPoint08Abi } from 'viem/account-abstraction'
import { codeAttributions, decodeAttribution } from '../../src/attribution/decode.js'
import { getIntervals } from '../../src/store/index.js'
import { filterIdOf } from '../../src/sync/filter.js'
import { intervalUnion, type Interval } from '../../src/utils/interval.js'
import { nodeLogs, toComparableLog, type ComparableLog } from '../helpers/compare.js'
import { rpcBatch } from '../faults/helpers/nodeCompare.js'
import { replayRegistry, type RegistryRow } from '../helpers/registry.js'

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
async function indexedFilterLogs(
  pool: pg.Pool,
  chainId: number,
  filter: ComparedFilter,
  range: Interval,
): Promise<(ComparableLog & { status: string })[]> {
  const { rows } = await pool.query(
    `SELECT block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, address, topics, data, removed, status
     FROM analytics.logs
     WHERE chain_id = $5 AND block_number BETWEEN $1 AND $2 AND NOT removed
       AND (cardinality($3::text[]) = 0 OR address = ANY($3::text[]))
       AND (cardinality($4::text[]) = 0 OR topics[1] = ANY($4::text[]))
     ORDER BY block_number, log_index`,
    [range[0], range[1], filter.addresses, filter.topics, chainId],
  )
  return rows.map((row) => ({ ...toComparableLog(row), status: row.status }))
}

const LOG_FIELDS = ['blockHash', 'blockTimestamp', 'transactionHash', 'transactionIndex', 'address', 'topics', 'data'] as const

type LogField = (typeof LOG_FIELDS)[number]

function differingFields(expected: ComparableLog, stored: ComparableLog): LogField[] {
  return LOG_FIELDS.filter((field) => JSON.stringify(expected[field]) !== JSON.stringify(stored[field]))
}

/** The filter's logs: node against index, keyed by (block, log index). Returns the node's logs. */
async function compareFilterLogs(
  pool: pg.Pool,
  chainId: number,
  rpcUrl: string,
  filter: ComparedFilter,
  range: Interval,
  findings: Findings,
): Promise<ComparableLog[]> {
  const rpcFilter = {
    ...(filter.addresses.length > 0 ? { address: filter.addresses } : {}),
    ...(filter.topics.length > 0 ? { topics: [filter.topics] } : {}),
  }
  const [expected, stored] = await Promise.all([nodeLogs(rpcUrl, range, rpcFilter), indexedFilterLogs(pool, chainId, filter, range)])
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
      findings.add(
        `${filter.name} duplicate`,
        `${at(log)}: ${rows.length} rows not removed: ${rows.map((r) => `${r.blockHash} (${r.status})`).join(', ')}`,
      )
    }
  }
  for (const rows of storedByKey.values()) {
    for (const row of rows) findings.add(`${filter.name} extra`, `${at(row)}: stored but not on the node: ${show(row)}`)
  }
  return expected
}

/** An attribution row with every field the index stores about it but gas. */
type SimAttribution = {
  txHash: string
  userOpHash: string
  builderCode: string
  role: string
  codeIndex: number
  registryAddress: string | null
  registryChainId: string | null
  blockNumber: number
  blockHash: string
  blockTimestamp: number
  from: string
  sender: string
  to: string | null
  schemaId: number
  codes: string[]
  status: string
}

/** Where a transaction is on the node. */
type Placed = { blockNumber: number; blockHash: string; blockTimestamp: number }

/**
 * What the attribution rows must be: the decoded suffixes of the given canonical transactions and of
 * their user operations, one row per code and role, at their blocks, `finalized` at or below `finalized`.
 */
async function nodeAttributionRows(
  rpcUrl: string,
  transactions: readonly (NodeTransaction & Placed)[],
  entryPoints: readonly string[],
  finalized: number,
): Promise<SimAttribution[]> {
  const rows: SimAttribution[] = []
  const row = (tx: NodeTransaction & Placed, sender: string, userOpHash: string, input: Hex) => {
    const decoded = decodeAttribution(input)
    if (!decoded?.ok) return
    for (const code of codeAttributions(decoded)) {
      rows.push({
        txHash: tx.hash.toLowerCase(),
        userOpHash,
        builderCode: code.code,
        role: code.role ?? '',
        codeIndex: code.codeIndex,
        registryAddress: code.registry?.address.toLowerCase() ?? null,
        registryChainId: code.registry?.chainId ?? null,
        blockNumber: tx.blockNumber,
        blockHash: tx.blockHash,
        blockTimestamp: tx.blockTimestamp,
        from: tx.from.toLowerCase(),
        sender: sender.toLowerCase(),
        to: tx.to?.toLowerCase() ?? null,
        schemaId: decoded.schemaId,
        codes: decoded.codes,
        status: tx.blockNumber <= finalized ? 'finalized' : 'confirmed',
      })
    }
  }
  const bundles = transactions.filter((tx) => tx.to && entryPoints.includes(tx.to.toLowerCase()))
  const receipts = await rpcBatch<NodeReceipt>(
    rpcUrl,
    bundles.map((tx) => ({ method: 'eth_getTransactionReceipt', params: [tx.hash] })),
  )
  for (const tx of transactions) row(tx, tx.from, '', tx.input)
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

/** `logs` scope: the canonical transactions behind the filters' logs. */
async function transactionsBehind(rpcUrl: string, logs: readonly ComparableLog[]): Promise<(NodeTransaction & Placed)[]> {
  const blockOf = new Map(logs.map((log) => [log.transactionHash, log]))
  const hashes = [...blockOf.keys()]
  const transactions: (NodeTransaction & Placed)[] = []
  for (let i = 0; i < hashes.length; i += BATCH) {
    const slice = hashes.slice(i, i + BATCH)
    const answers = await rpcBatch<NodeTransaction>(
      rpcUrl,
      slice.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })),
    )
    for (const tx of answers) {
      const at = blockOf.get(tx.hash)!
      transactions.push({ ...tx, blockNumber: at.blockNumber, blockHash: at.blockHash, blockTimestamp: at.blockTimestamp })
    }
  }
  return transactions
}

/** `blocks` scope: every transaction of the blocks the filters cover. */
async function transactionsOfBlocks(rpcUrl: string, ranges: readonly Interval[]): Promise<(NodeTransaction & Placed)[]> {
  const numbers = intervalUnion(ranges).flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, i) => from + i))
  const transactions: (NodeTransaction & Placed)[] = []
  for (let i = 0; i < numbers.length; i += BATCH) {
    const slice = numbers.slice(i, i + BATCH)
    const blocks = await rpcBatch<{ number: Hex; hash: string; timestamp: Hex; transactions: NodeTransaction[] } | null>(
      rpcUrl,
      slice.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, true] })),
    )
    for (const block of blocks) {
      if (!block) continue
      const placed = { blockNumber: Number(block.number), blockHash: block.hash.toLowerCase(), blockTimestamp: Number(block.timestamp) }
      for (const tx of block.transactions) transactions.push({ ...tx, ...placed })
    }
  }
  return transactions
}

/** Attribution rows not removed (pending ones are compared as left-over pending rows). */
async function indexedAttributionRows(pool: pg.Pool, chainId: number): Promise<SimAttribution[]> {
  const { rows } = await pool.query(
    `SELECT tx_hash, user_op_hash, builder_code, role, code_index, registry_address, registry_chain_id::text, block_number, block_hash, block_timestamp,
       from_address, sender, to_address, schema_id, codes, status
     FROM attributions WHERE chain_id = $1 AND NOT removed AND status <> 'pending'`,
    [chainId],
  )
  return rows.map((r) => ({
    txHash: r.tx_hash,
    userOpHash: r.user_op_hash,
    builderCode: r.builder_code,
    role: r.role,
    codeIndex: r.code_index,
    registryAddress: r.registry_address,
    registryChainId: r.registry_chain_id,
    blockNumber: Number(r.block_number),
    blockHash: r.block_hash,
    blockTimestamp: r.block_timestamp.getTime() / 1000,
    from: r.from_address,
    sender: r.sender,
    to: r.to_address,
    schemaId: r.schema_id,
    codes: r.codes,
    status: r.status,
  }))
}

function compareAttributions(expected: SimAttribution[], stored: SimAttribution[], findings: Findings) {
  const key = (a: SimAttribution) => `${a.txHash}|${a.userOpHash}|${a.builderCode}|${a.role}`
  const expectedByKey = new Map(expected.map((a) => [key(a), a]))
  const storedByKey = new Map<string, SimAttribution[]>()
  for (const a of stored) storedByKey.set(key(a), [...(storedByKey.get(key(a)) ?? []), a])
  const what = (a: SimAttribution) =>
    `attribution block ${a.blockNumber} tx ${a.txHash}${a.userOpHash ? ` user op ${a.userOpHash}` : ''} code ${a.builderCode}${a.role ? ` (${a.role})` : ''}`
  const differing = (a: SimAttribution, b: SimAttribution) =>
    (Object.keys(a) as (keyof SimAttribution)[]).filter((field) => JSON.stringify(a[field]) !== JSON.stringify(b[field]))
  for (const [k, a] of expectedByKey) {
    const rows = storedByKey.get(k) ?? []
    if (rows.length === 0) findings.add('attribution missing', `${what(a)}: missing; node ${show(a)}`)
    else if (!rows.some((r) => differing(a, r).length === 0)) {
      const fields = differing(a, rows[0]!)
      findings.add(
        'attribution differing',
        `${what(a)}: differs in ${fields.join(', ')}; node ${show(Object.fromEntries(fields.map((f) => [f, a[f]])))} stored ${show(Object.fromEntries(fields.map((f) => [f, rows[0]![f]])))}`,
      )
    }
    if (rows.length > 1) findings.add('attribution duplicate', `${what(a)}: ${rows.length} rows not removed`)
  }
  for (const [k, rows] of storedByKey) {
    if (!expectedByKey.has(k))
      findings.add(
        'attribution extra',
        `${what(rows[0]!)}: stored (not removed) but no canonical transaction carries it: ${show(rows[0]!)}`,
      )
  }
}

/**
 * The rollups the triggers keep (per code and hour or day: attributions, pending ones, senders; per code
 * and sender: attributions; `analytics.builder_code_daily`, read from the day buckets) against a recount
 * of the attribution rows they are kept from.
 */
async function compareRollups(pool: pg.Pool, chainId: number, findings: Findings) {
  const differences = await pool.query(
    `WITH live AS (SELECT * FROM attributions WHERE chain_id = $1 AND NOT removed),
     recount AS (
       SELECT l.chain_id, l.builder_code, b.bucket, date_trunc(b.bucket, l.block_timestamp, 'UTC') AS start,
         count(*)::bigint AS attributions, count(*) FILTER (WHERE l.status = 'pending')::bigint AS pending, count(DISTINCT l.sender)::bigint AS senders
       FROM live l CROSS JOIN (VALUES ('hour'), ('day')) AS b(bucket) GROUP BY 1, 2, 3, 4),
     kept AS (SELECT chain_id, builder_code, bucket, start, attributions, pending, senders FROM builder_code_buckets WHERE chain_id = $1 AND (attributions <> 0 OR pending <> 0 OR senders <> 0))
     SELECT 'bucket' AS kind, coalesce(r.builder_code, k.builder_code) AS code, coalesce(r.bucket, k.bucket) || ' ' || coalesce(r.start, k.start)::text AS at,
       row(r.attributions, r.pending, r.senders)::text AS recount, row(k.attributions, k.pending, k.senders)::text AS kept
     FROM recount r FULL JOIN kept k USING (chain_id, builder_code, bucket, start)
     WHERE (r.attributions, r.pending, r.senders) IS DISTINCT FROM (k.attributions, k.pending, k.senders)
     UNION ALL
     SELECT 'sender', coalesce(r.builder_code, k.builder_code), coalesce(r.sender, k.sender), r.n::text, k.n::text
     FROM (SELECT chain_id, builder_code, sender, count(*)::bigint AS n FROM live GROUP BY 1, 2, 3) r
       FULL JOIN (SELECT chain_id, builder_code, sender, n FROM builder_code_senders WHERE chain_id = $1 AND n <> 0) k USING (chain_id, builder_code, sender)
     WHERE r.n IS DISTINCT FROM k.n
     UNION ALL
     SELECT 'daily view', coalesce(r.builder_code, k.builder_code), coalesce(r.day, k.day)::text, row(r.*)::text, row(k.*)::text
     FROM (
       SELECT date_trunc('day', block_timestamp AT TIME ZONE 'UTC')::date AS day, chain_id, builder_code,
         count(DISTINCT (tx_hash, user_op_hash))::bigint AS tx_count, count(DISTINCT sender)::bigint AS distinct_senders,
         count(DISTINCT tx_hash)::bigint AS distinct_transactions, count(*) FILTER (WHERE user_op_hash <> '')::bigint AS user_operations,
         sum(gas_used)::numeric AS gas_used
       FROM live WHERE status <> 'pending' GROUP BY 1, 2, 3
     ) r FULL JOIN (SELECT * FROM analytics.builder_code_daily WHERE chain_id = $1) k USING (day, chain_id, builder_code)
     WHERE (r.tx_count, r.distinct_senders, r.distinct_transactions, r.user_operations, r.gas_used)
       IS DISTINCT FROM (k.tx_count, k.distinct_senders, k.distinct_transactions, k.user_operations, k.gas_used)`,
    [chainId],
  )
  for (const d of differences.rows)
    findings.add('rollup differing', `${d.kind} rollup of ${d.code} at ${d.at}: recount ${d.recount}, kept ${d.kept}`)
}

/**
 * What reads by hash rely on: one key per transaction row, holding the row's block time, and every attribution
 * at its transaction's block time (reads look into the month the key names, in both tables).
 */
async function compareTransactionKeys(pool: pg.Pool, chainId: number, findings: Findings) {
  const { rows } = await pool.query(
    `SELECT 'key' AS kind, coalesce(t.hash, k.hash) AS hash, t.block_timestamp::text AS row_time, k.block_timestamp::text AS other_time
     FROM (SELECT * FROM transactions WHERE chain_id = $1) t FULL JOIN (SELECT * FROM transaction_keys WHERE chain_id = $1) k USING (chain_id, hash)
     WHERE t.block_timestamp IS DISTINCT FROM k.block_timestamp
     UNION ALL
     SELECT 'attribution', a.tx_hash, t.block_timestamp::text, a.block_timestamp::text
     FROM attributions a LEFT JOIN transactions t ON t.chain_id = a.chain_id AND t.hash = a.tx_hash
     WHERE a.chain_id = $1 AND t.block_timestamp IS DISTINCT FROM a.block_timestamp`,
    [chainId],
  )
  for (const r of rows)
    findings.add(
      r.kind === 'key' ? 'transaction key differing' : 'attribution time differing',
      `transaction ${r.hash} at ${r.row_time ?? 'no row'}: its ${r.kind === 'key' ? 'key' : 'attribution'} at ${r.other_time ?? 'none'}`,
    )
}

/**
 * `registry_codes` against a replay of the registry's logs: at the end those on the node (all of them
 * canonical and compared with the index above); mid-run the live ones the index holds, pending ones too
 * (a lagging chain's pending window is the index's, not yet the node's canonical chain).
 */
async function compareRegistry(pool: pg.Pool, chainId: number, rpcUrl: string, registry: string, midRun: boolean, findings: Findings) {
  const logs = midRun
    ? (
        await pool.query<{ topics: string[]; data: string; block_number: string }>(
          `SELECT array_remove(ARRAY[topic0, topic1, topic2, topic3], NULL) AS topics, data, block_number::text FROM logs
           WHERE chain_id = $2 AND address = $1 AND NOT removed ORDER BY logs.block_number, logs.log_index`,
          [registry, chainId],
        )
      ).rows
    : (
        await nodeLogs(rpcUrl, [0, Number((await rpcBatch<Hex>(rpcUrl, [{ method: 'eth_blockNumber', params: [] }]))[0])], {
          address: [registry],
        })
      ).map((log) => ({
        topics: log.topics,
        data: log.data,
        block_number: String(log.blockNumber),
      }))
  const expected = replayRegistry(logs)
  const { rows: stored } = await pool.query<RegistryRow>(
    `SELECT token_id::text, builder_code, owner, payout_address, registered_block::text FROM registry_codes WHERE chain_id = $1 ORDER BY token_id::text`,
    [chainId],
  )
  const byToken = new Map(stored.map((row) => [row.token_id, row]))
  for (const row of expected) {
    const kept = byToken.get(row.token_id)
    byToken.delete(row.token_id)
    if (!kept) findings.add('registry missing', `registry code ${row.builder_code}: missing; replay ${show(row)}`)
    else if (JSON.stringify(kept) !== JSON.stringify(row))
      findings.add('registry differing', `registry code ${row.builder_code}: replay ${show(row)} stored ${show(kept)}`)
  }
  for (const row of byToken.values())
    findings.add('registry extra', `registry code ${row.builder_code}: stored but no live registration on the node: ${show(row)}`)
}

/** Canonical block hashes of the node by number. */
async function canonicalHashes(rpcUrl: string, numbers: readonly number[]): Promise<Map<number, string>> {
  const hashes = new Map<number, string>()
  for (let i = 0; i < numbers.length; i += BATCH) {
    const slice = numbers.slice(i, i + BATCH)
    const blocks = await rpcBatch<{ hash: string } | null>(
      rpcUrl,
      slice.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, false] })),
    )
    slice.forEach((n, j) => blocks[j] && hashes.set(n, blocks[j]!.hash.toLowerCase()))
  }
  return hashes
}

/** Rows the index holds beyond the filters: rows of orphaned blocks not removed, leftover pending rows, orphaned rows lost, stale statuses. */
async function compareRowStates(
  pool: pg.Pool,
  chainId: number,
  rpcUrl: string,
  orphanedRows: readonly OrphanedRow[],
  canonicalTop: number | undefined,
  findings: Findings,
) {
  const { rows: perBlock } = await pool.query(
    `SELECT block_number, block_hash, count(*)::int AS n FROM logs WHERE chain_id = $1 AND NOT removed AND status <> 'pending' GROUP BY 1, 2 ORDER BY 1`,
    [chainId],
  )
  const canonical = await canonicalHashes(rpcUrl, [
    ...new Set([...perBlock.map((r) => Number(r.block_number)), ...orphanedRows.map((r) => r.blockNumber)]),
  ])
  for (const r of perBlock) {
    if (canonical.get(Number(r.block_number)) !== r.block_hash) {
      findings.add(
        'orphaned block not removed',
        `block ${r.block_number}: ${r.n} rows of orphaned block ${r.block_hash} not removed (canonical ${canonical.get(Number(r.block_number))})`,
      )
    }
  }
  const { rows: pending } = await pool.query(
    `SELECT transaction_hash, block_number, count(*)::int AS n FROM logs WHERE chain_id = $2 AND status = 'pending' AND NOT removed AND block_number <= $1 GROUP BY 1, 2 ORDER BY 2`,
    [canonicalTop ?? Number.MAX_SAFE_INTEGER, chainId],
  )
  for (const r of pending)
    findings.add('pending left', `block ${r.block_number}: ${r.n} pending rows of ${r.transaction_hash} neither confirmed nor removed`)

  for (const orphan of orphanedRows) {
    if (canonical.get(orphan.blockNumber) === orphan.blockHash) continue
    const { rows } = await pool.query(
      `SELECT removed FROM logs WHERE chain_id = $4 AND block_number = $1 AND block_hash = $2 AND log_index = $3`,
      [orphan.blockNumber, orphan.blockHash, orphan.logIndex, chainId],
    )
    if (rows.length === 0)
      findings.add(
        'orphaned row lost',
        `block ${orphan.blockNumber} log ${orphan.logIndex}: row of orphaned block ${orphan.blockHash} was deleted`,
      )
    else if (!rows[0].removed)
      findings.add(
        'orphaned row not removed',
        `block ${orphan.blockNumber} log ${orphan.logIndex}: row of orphaned block ${orphan.blockHash} not marked removed`,
      )
  }

  const { rows: stale } = await pool.query(
    `SELECT l.block_number, count(*)::int AS n, c.finalized_block FROM logs l, chain_state c
     WHERE l.chain_id = $1 AND c.chain_id = $1 AND NOT l.removed AND l.status = 'confirmed' AND l.block_number <= c.finalized_block
     GROUP BY 1, 3 ORDER BY 1`,
    [chainId],
  )
  for (const r of stale)
    findings.add(
      'not finalized',
      `block ${r.block_number}: ${r.n} rows still confirmed at or below the finalized block ${r.finalized_block}`,
    )
}

/**
 * Every difference between chain `chainId`'s rows in the index and its node, as lines; empty when they
 * are equal. Other chains' rows in the same database are left out, so each chain of a deployment is
 * compared with its own node.
 */
export async function compareWithNode(parameters: {
  pool: pg.Pool
  rpcUrl: string
  filters: readonly ComparedFilter[]
  orphanedRows: readonly OrphanedRow[]
  entryPoints: readonly string[]
  chainId: number
  /** The BuilderCodes registry the daemon indexes. */
  registry: string
  /** The daemon's `ATTRIBUTION_SCOPE`: the transactions behind the logs, or every transaction of the blocks covered. */
  scope: 'logs' | 'blocks'
  /**
   * Mid-run: the node's canonical head (a lagging chain serves the blocks above it as pending, and their
   * pending rows are in order). Omitted at the end, when no pending row may be left.
   */
  canonicalTop?: number
  /** Told what is compared beyond the ranges asked for. */
  note: (line: string) => void
}): Promise<string[]> {
  const { pool, rpcUrl, filters, chainId } = parameters
  const findings = createFindings()
  const covered: ComparableLog[] = []
  const ranges: Interval[] = []
  for (const filter of filters) {
    // What the index claims to hold for the filter is compared too, asked for or not.
    const claimed = await getIntervals(pool, chainId, filterIdOf(filter))
    for (const range of intervalUnion([filter.range, ...claimed])) {
      if (range[0] < filter.range[0] || range[1] > filter.range[1])
        parameters.note(`filter ${filter.name}: comparing blocks ${range[0]}–${range[1]} (claimed ${JSON.stringify(claimed)})`)
      covered.push(...(await compareFilterLogs(pool, chainId, rpcUrl, filter, range, findings)))
      ranges.push(range)
    }
  }
  const entryPoints = parameters.entryPoints.map((a) => a.toLowerCase())
  const finalized = Number(
    (await pool.query('SELECT finalized_block FROM chain_state WHERE chain_id = $1', [chainId])).rows[0]?.finalized_block ?? -1,
  )
  const transactions =
    parameters.scope === 'blocks' ? await transactionsOfBlocks(rpcUrl, ranges) : await transactionsBehind(rpcUrl, covered)
  const [expected, stored] = await Promise.all([
    nodeAttributionRows(rpcUrl, transactions, entryPoints, finalized),
    indexedAttributionRows(pool, chainId),
  ])
  compareAttributions(expected, stored, findings)
  await compareRollups(pool, chainId, findings)
  await compareTransactionKeys(pool, chainId, findings)
  await compareRegistry(pool, chainId, rpcUrl, parameters.registry.toLowerCase(), parameters.canonicalTop !== undefined, findings)
  await compareRowStates(pool, chainId, rpcUrl, parameters.orphanedRows, parameters.canonicalTop, findings)
  return findings.lines()
}
