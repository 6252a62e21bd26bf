import type pg from 'pg'
import type { Queryable } from './client.js'
import { BinaryCopyWriter, copyLine, copyOrMerge } from './copy.js'
import { isoTimestamp } from './logRows.js'
import { inKeyMonths } from './transactionKeys.js'
import type { CodeRole, RegistryUnverifiedReason, Status } from './schema.js'

// A stale pre-confirmed answer (the incoming row `source`) must never pull a confirmed, canonical row back to pending.
const NOT_BACK_TO_PENDING_FROM = (table: string, source: string) =>
  `NOT (${source}.status = 'pending' AND ${table}.status <> 'pending' AND NOT ${table}.removed)`
const NOT_BACK_TO_PENDING = (table: string) => NOT_BACK_TO_PENDING_FROM(table, 'EXCLUDED')

/**
 * What one attribution is: a transaction (or user operation) attributed to a code in a role. The table's
 * primary key adds `block_timestamp`, its partition column; the writers keep one row per key across months.
 */
const ATTRIBUTION_KEY = ['chain_id', 'tx_hash', 'user_op_hash', 'builder_code', 'role'] as const

/** An attribution row moved to the position and status of `source` (the incoming row), not removed. */
const MOVE_ATTRIBUTION = (source: string) => `block_number = ${source}.block_number, block_hash = ${source}.block_hash,
  block_timestamp = ${source}.block_timestamp, block_timestamp_ms = ${source}.block_timestamp_ms, status = ${source}.status,
  gas_used = COALESCE(${source}.gas_used, attributions.gas_used), removed = false, updated_at = now()`

/** A transaction row moved to the position and status of `source` (the incoming row), not removed. */
const MOVE_TRANSACTION = (source: string) => `block_number = ${source}.block_number, block_hash = ${source}.block_hash,
  block_timestamp = ${source}.block_timestamp, block_timestamp_ms = ${source}.block_timestamp_ms,
  transaction_index = ${source}.transaction_index, status = ${source}.status,
  gas_used = COALESCE(${source}.gas_used, transactions.gas_used), removed = false, updated_at = now()`

/** Where known transactions move to (`u`, with the tables' column names), from parameters `$2` on (`$1` is the chain id). */
const MOVES = `(SELECT hash, block_number, block_hash, to_timestamp(ts) AS block_timestamp, ts_ms AS block_timestamp_ms,
    tx_index AS transaction_index, status, gas_used
  FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::int[], $7::text[], $8::bigint[], $9::bigint[])
    AS m(hash, block_number, block_hash, ts, tx_index, status, ts_ms, gas_used)) u`

/** Where a transaction is now: its block (zero hash while pending), position and status. */
export type TransactionPosition = {
  hash: string
  blockNumber: number
  blockHash: string
  blockTimestamp: number
  /** The node's milliseconds; null where it served none. */
  blockTimestampMs?: number | null
  transactionIndex: number
  status: Status
}

/** A transaction's decoded suffix; the same for every position it ever takes. */
export type TransactionDecodeRow = {
  hash: string
  from: string
  to: string | null
  inputSize: number
  hasSuffix: boolean
  schemaId: number | null
  codes: string[] | null
  registryAddress: string | null
  /** Decimal: schema 1 allows a chain id of up to 32 bytes. */
  registryChainId: string | null
  registryVerified: boolean | null
  /** Why `registryVerified` is null where the suffix names a registry. */
  registryUnverifiedReason: RegistryUnverifiedReason | null
  cbor: unknown
  malformedReason: string | null
  userOperations: number
}

export type AttributionRow = {
  txHash: string
  userOpHash: string
  builderCode: string
  codeIndex: number
  /** Schema 2's role for the code; null (stored as '') for schemas 0 and 1. */
  role: CodeRole | null
  registry: { address: string; chainId: string } | null
  sender: string
  schemaId: number
  codes: string[]
}

/** What is stored about a transaction decoded earlier. */
export type KnownTransaction = { attributed: boolean; gasUsed: number | null }

/**
 * The transactions among `hashes` already decoded and stored, by hash. Read through `transaction_keys`: asked
 * for a range's thousands of hashes at once, `transactions` itself was planned as a sequential scan of every
 * month (the planner expects each month to hold its share of the list), 1.1 s for 3,000 hashes over 1,600,000
 * transactions in thirteen months. Through the keys each hash is one probe, and only a stored one looks into
 * the one month its key names (a lookup per key, however the months are estimated), in `transactions` and in
 * `attributions`, which move with their transaction.
 */
export async function knownTransactions(db: Queryable, chainId: number, hashes: readonly string[]): Promise<Map<string, KnownTransaction>> {
  if (hashes.length === 0) return new Map()
  const { rows } = await db.query<{ hash: string; attributed: boolean; gasUsed: number | null }>(
    `SELECT t.hash, t.gas_used AS "gasUsed",
       EXISTS (SELECT 1 FROM attributions a WHERE a.chain_id = k.chain_id AND a.tx_hash = k.hash AND a.block_timestamp = k.block_timestamp) AS attributed
     FROM transaction_keys k
     CROSS JOIN LATERAL (
       SELECT t.hash, t.gas_used FROM transactions t
       WHERE t.chain_id = k.chain_id AND t.hash = k.hash AND t.block_timestamp = k.block_timestamp LIMIT 1
     ) t
     WHERE k.chain_id = $1 AND k.hash = ANY($2::text[])`,
    [chainId, hashes],
  )
  return new Map(rows.map(({ hash, attributed, gasUsed }) => [hash, { attributed, gasUsed }]))
}

/** A stored transaction whose schema-1 registry answer is not known yet. */
export type UnverifiedTransaction = {
  hash: string
  registryAddress: string
  /** Decimal. */
  registryChainId: string
  codes: string[]
  /** Its block's time, seconds since the epoch. */
  blockTimestamp: number
  /** A reorg of the registry's chain removed a registration it was verified against: asked again without waiting. */
  reorged: boolean
}

/**
 * Stored transactions (not removed) naming a registry on one of `registryChainIds` whose answer is still
 * unknown: asked last more than `olderThanMs` ago (a node error, a chain not indexed until now), or
 * unverified by a reorg of the registry's chain (at once); longest waiting first. Served by the partial
 * index `transactions_registry_unknown`.
 */
export async function unverifiedTransactions(
  db: Queryable,
  chainId: number,
  { registryChainIds, olderThanMs, limit }: { registryChainIds: readonly number[]; olderThanMs: number; limit: number },
): Promise<UnverifiedTransaction[]> {
  const { rows } = await db.query<UnverifiedTransaction>(
    `SELECT hash, registry_address AS "registryAddress", registry_chain_id::text AS "registryChainId", codes,
       extract(epoch FROM block_timestamp)::float8 AS "blockTimestamp", registry_unverified_reason IS NOT DISTINCT FROM 'registry_reorg' AS reorged
     FROM transactions
     WHERE chain_id = $1 AND registry_chain_id = ANY($2::numeric[]) AND registry_verified IS NULL AND registry_address IS NOT NULL
       AND codes IS NOT NULL AND NOT removed
       AND (updated_at < now() - make_interval(secs => $3 / 1000.0) OR registry_unverified_reason = 'registry_reorg')
     ORDER BY registry_unverified_reason IS NOT DISTINCT FROM 'registry_reorg' DESC, updated_at LIMIT $4`,
    [chainId, registryChainIds, olderThanMs, limit],
  )
  return rows
}

/**
 * Stores registry answers asked again for transactions still unknown: `null` (unknown again, with its
 * reason) only marks them asked now, so others come first next time. Rows another transaction holds are
 * left to it.
 */
export async function storeRegistryAnswers(
  client: pg.PoolClient,
  chainId: number,
  answers: readonly { hash: string; verified: boolean | null; reason: RegistryUnverifiedReason | null }[],
): Promise<void> {
  if (answers.length === 0) return
  await client.query(
    `UPDATE transactions t SET registry_verified = u.verified, registry_unverified_reason = u.reason, updated_at = now()
     FROM unnest($2::text[], $3::boolean[], $4::text[]) AS u(hash, verified, reason)
     WHERE t.chain_id = $1 AND t.hash = u.hash AND ${inKeyMonths('t.block_timestamp', '$2::text[]')} AND t.hash IN (
       SELECT hash FROM transactions WHERE chain_id = $1 AND hash = ANY($2::text[]) AND ${inKeyMonths('block_timestamp', '$2::text[]')}
         AND registry_verified IS NULL FOR UPDATE SKIP LOCKED)`,
    [chainId, answers.map((a) => a.hash), answers.map((a) => a.verified), answers.map((a) => a.reason)],
  )
}

/**
 * Inserts decoded transactions at their positions; ones already stored keep their decode and move to
 * the given position and status (not removed), with their attributions, from whichever month they are stored
 * in. `gasUsed` fills gas used where it is not known yet (a transaction first seen pending has no receipt).
 * Returns whether any of `decoded` was stored already: only then may its attributions be too
 * ({@link upsertAttributions}).
 *
 * `transactions` is partitioned by block time, so its key holds the time and cannot say that a hash is stored
 * at another one: `transaction_keys` (the hash alone) does. Its rows are written, or locked where they exist,
 * first: they hold off any other writer of the same transactions until this one commits, so no two writers
 * both find a transaction missing, nor move one row at once (PostgreSQL refuses an update of a row another
 * transaction moved to another partition meanwhile).
 */
export async function upsertTransactions(
  client: pg.PoolClient,
  chainId: number,
  decoded: readonly TransactionDecodeRow[],
  positions: ReadonlyMap<string, TransactionPosition>,
  gasUsed: ReadonlyMap<string, number>,
): Promise<{ decodedStored: boolean }> {
  const rows = decoded.filter((row) => positions.has(row.hash))
  let decodedStored = false
  if (rows.length > 0) {
    // Keys of a fresh range are all new and go in by COPY. When one is there, the merge's update locks each one
    // stored (and inserts one retention deleted meanwhile, which DO NOTHING would leave out unlocked).
    const keys = await copyOrMerge(client, 'transaction_keys', TRANSACTION_KEY_COLUMNS, transactionKeyCopyData(chainId, rows, positions), {
      rows: rows.length,
      binary: true,
      onConflict: 'ON CONFLICT (chain_id, hash) DO UPDATE SET hash = EXCLUDED.hash',
    })
    decodedStored = keys.merged
    // New transactions go in by COPY; stored ones (found by hash, in any month) move to the given position.
    await copyOrMerge(client, 'transactions', TRANSACTION_COLUMNS, transactionCopyData(chainId, rows, positions, gasUsed), {
      rows: rows.length,
      binary: true,
      copyFirst: !decodedStored,
      updateStored: { key: ['chain_id', 'hash'], set: MOVE_TRANSACTION('i'), where: NOT_BACK_TO_PENDING_FROM('transactions', 'i') },
      onConflict: '',
    })
    if (decodedStored)
      await followMovedKeys(
        client,
        chainId,
        rows.map((row) => row.hash),
      )
  }
  // Transactions decoded earlier (e.g. while pending) only move.
  const inserted = new Set(rows.map((row) => row.hash))
  const moved = [...positions.values()].filter((p) => !inserted.has(p.hash))
  if (moved.length > 0) {
    // The months the rows are in now, read from their keys as they are locked: the first statement moves the keys.
    const storedAt = await lockTransactionKeys(
      client,
      chainId,
      moved.map((p) => p.hash),
    )
    const arrays = [chainId, ...positionArrays(moved), moved.map((p) => gasUsed.get(p.hash) ?? null), storedAt]
    await client.query(
      `WITH moved AS (
         UPDATE transactions SET ${MOVE_TRANSACTION('u')} FROM ${MOVES}
         WHERE transactions.chain_id = $1 AND transactions.hash = u.hash AND transactions.block_timestamp = ANY($10::timestamptz[])
           AND ${NOT_BACK_TO_PENDING_FROM('transactions', 'u')}
         RETURNING transactions.hash, transactions.block_timestamp)
       UPDATE transaction_keys k SET block_timestamp = moved.block_timestamp FROM moved WHERE k.chain_id = $1 AND k.hash = moved.hash`,
      arrays,
    )
    await client.query(
      `UPDATE attributions SET ${MOVE_ATTRIBUTION('u')} FROM ${MOVES}
       WHERE attributions.chain_id = $1 AND attributions.tx_hash = u.hash AND attributions.block_timestamp = ANY($10::timestamptz[])
         AND ${NOT_BACK_TO_PENDING_FROM('attributions', 'u')}`,
      arrays,
    )
  }
  return { decodedStored }
}

/**
 * Locks the keys of stored transactions among `hashes`, in hash order as keys are written, so writers of
 * overlapping sets take them in one order. Returns the block times they name, each once, as PostgreSQL writes
 * them (microseconds and offset kept, so they read back exactly): the months their rows are in.
 */
async function lockTransactionKeys(client: pg.PoolClient, chainId: number, hashes: readonly string[]): Promise<string[]> {
  const { rows } = await client.query<{ stored_at: string }>(
    `SELECT block_timestamp::text AS stored_at FROM transaction_keys WHERE chain_id = $1 AND hash = ANY($2::text[]) ORDER BY hash FOR UPDATE`,
    [chainId, hashes],
  )
  return [...new Set(rows.map((row) => row.stored_at))]
}

/**
 * Sets the keys of `hashes` (locked by this writer) to the block time their rows have after a merge: moved to
 * the incoming position, or left where a stale pre-confirmation may not pull them back.
 */
async function followMovedKeys(client: pg.PoolClient, chainId: number, hashes: readonly string[]): Promise<void> {
  await client.query(
    `UPDATE transaction_keys k SET block_timestamp = stored.block_timestamp
     FROM (SELECT u.hash, (SELECT t.block_timestamp FROM transactions t WHERE t.chain_id = $1 AND t.hash = u.hash LIMIT 1) AS block_timestamp
           FROM unnest($2::text[]) AS u(hash)) stored
     WHERE k.chain_id = $1 AND k.hash = stored.hash AND k.block_timestamp IS DISTINCT FROM stored.block_timestamp`,
    [chainId, hashes],
  )
}

const TRANSACTION_KEY_COLUMNS = ['chain_id', 'hash', 'block_timestamp'] as const

/** `transaction_keys` rows in the binary `COPY` format, in hash order: the order a writer takes their locks in. */
function transactionKeyCopyData(
  chainId: number,
  rows: readonly TransactionDecodeRow[],
  positions: ReadonlyMap<string, TransactionPosition>,
): Buffer[] {
  const copy = new BinaryCopyWriter()
  const hashes = rows.map((row) => row.hash).sort()
  for (const hash of hashes)
    copy.row(TRANSACTION_KEY_COLUMNS.length).int32(chainId).text(hash).timestamp(positions.get(hash)!.blockTimestamp)
  return copy.pieces()
}

const TRANSACTION_COLUMNS = [
  'chain_id',
  'hash',
  'block_number',
  'block_hash',
  'block_timestamp',
  'transaction_index',
  'from_address',
  'to_address',
  'input_size',
  'has_suffix',
  'schema_id',
  'codes',
  'registry_address',
  'registry_chain_id',
  'registry_verified',
  'registry_unverified_reason',
  'cbor',
  'malformed_reason',
  'user_operations',
  'gas_used',
  'status',
  'block_timestamp_ms',
] as const

/** Rows in the binary `COPY` format, in the order of TRANSACTION_COLUMNS. */
function transactionCopyData(
  chainId: number,
  rows: readonly TransactionDecodeRow[],
  positions: ReadonlyMap<string, TransactionPosition>,
  gasUsed: ReadonlyMap<string, number>,
): Buffer[] {
  const copy = new BinaryCopyWriter()
  for (const r of rows) {
    const p = positions.get(r.hash)!
    copy
      .row(TRANSACTION_COLUMNS.length)
      .int32(chainId)
      .text(r.hash)
      .int64(p.blockNumber)
      .text(p.blockHash)
      .timestamp(p.blockTimestamp)
      .int32(p.transactionIndex)
      .text(r.from)
      .text(r.to)
      .int32(r.inputSize)
      .bool(r.hasSuffix)
      .int16(r.schemaId)
      .textArray(r.codes)
      .text(r.registryAddress)
      .numeric(r.registryChainId)
      .bool(r.registryVerified)
      .text(r.registryUnverifiedReason)
      .jsonb(r.cbor === null || r.cbor === undefined ? null : JSON.stringify(r.cbor))
      .text(r.malformedReason)
      .int32(r.userOperations)
      .int64(gasUsed.get(r.hash) ?? null)
      .text(p.status)
      .int64(p.blockTimestampMs ?? null)
  }
  return copy.pieces()
}

const ATTRIBUTION_COLUMNS = [
  'chain_id',
  'tx_hash',
  'user_op_hash',
  'builder_code',
  'role',
  'code_index',
  'registry_address',
  'registry_chain_id',
  'block_number',
  'block_hash',
  'block_timestamp',
  'from_address',
  'sender',
  'to_address',
  'schema_id',
  'codes',
  'gas_used',
  'status',
  'block_timestamp_ms',
] as const

function positionArrays(positions: readonly TransactionPosition[]) {
  return [
    positions.map((p) => p.hash),
    positions.map((p) => p.blockNumber),
    positions.map((p) => p.blockHash),
    positions.map((p) => p.blockTimestamp),
    positions.map((p) => p.transactionIndex),
    positions.map((p) => p.status),
    positions.map((p) => p.blockTimestampMs ?? null),
  ]
}

/**
 * Inserts attribution rows at their transaction's position; existing ones move there (not removed), from
 * whichever month they are stored in. `transactionsStored` says whether their transactions may have been
 * stored before this write ({@link upsertTransactions}' answer, in the same database transaction; unknown
 * counts as stored): when none was, none of their attributions can be either, and the rows go in by `COPY`.
 */
export async function upsertAttributions(
  client: pg.PoolClient,
  chainId: number,
  rows: readonly (AttributionRow & { from: string; to: string | null })[],
  positions: ReadonlyMap<string, TransactionPosition>,
  gasUsed: ReadonlyMap<string, number>,
  { transactionsStored = true }: { transactionsStored?: boolean } = {},
): Promise<void> {
  const placed = rows.filter((row) => positions.has(row.txHash))
  if (placed.length === 0) return
  const lines = placed.map((r) => {
    const p = positions.get(r.txHash)!
    return copyLine([
      chainId,
      r.txHash,
      r.userOpHash,
      r.builderCode,
      r.role ?? '',
      r.codeIndex,
      r.registry?.address ?? null,
      r.registry?.chainId ?? null,
      p.blockNumber,
      p.blockHash,
      isoTimestamp(p.blockTimestamp),
      r.from,
      r.sender,
      r.to,
      r.schemaId,
      r.codes,
      gasUsed.get(r.txHash) ?? null,
      p.status,
      p.blockTimestampMs ?? null,
    ])
  })
  // COPY while every transaction is new, the merge when one was stored: a stored row at another block time sits
  // under another primary key (the key holds the partition column), so a COPY would not meet it. The merge finds
  // stored rows by the attribution's key alone, updates them (moving them between months) and inserts the others,
  // in two statements: the stats rollup's triggers count a transaction's distinct rows from what the table holds
  // after each statement, which an upsert mixing both would count wrong (sql/02-stats-rollup.sql).
  await copyOrMerge(client, 'attributions', ATTRIBUTION_COLUMNS, lines, {
    rows: lines.length,
    copyFirst: !transactionsStored,
    updateStored: { key: ATTRIBUTION_KEY, set: MOVE_ATTRIBUTION('i'), where: NOT_BACK_TO_PENDING_FROM('attributions', 'i') },
    onConflict: `ON CONFLICT (${ATTRIBUTION_KEY.join(', ')}, block_timestamp) DO UPDATE SET ${MOVE_ATTRIBUTION('EXCLUDED')}
     WHERE ${NOT_BACK_TO_PENDING('attributions')}`,
  })
}
