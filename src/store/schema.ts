import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  jsonb,
  numeric,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  customType,
} from 'drizzle-orm/pg-core'

/** The outbox's composite type `attribution_change`, as a compressed array; only SQL reads it. */
const attributionChangeArray = customType<{ data: string }>({ dataType: () => 'attribution_change[]' })

// Hashes and addresses are lowercase 0x hex text: COPY-friendly and exposed as-is by the views.

/** Status of a log, transaction or attribution row: pending → confirmed → finalized. */
export const STATUSES = ['pending', 'confirmed', 'finalized'] as const
export type Status = (typeof STATUSES)[number]

/** The status of a canonical block's rows: final at or below `finalizedBlock`, confirmed above it. */
export const statusBelow =
  (finalizedBlock: number | null) =>
  (blockNumber: number): Status =>
    finalizedBlock !== null && blockNumber <= finalizedBlock ? 'finalized' : 'confirmed'

export const ZERO_HASH = `0x${'0'.repeat(64)}` as const

/**
 * Why a schema-1 suffix's registry answer is unknown (`registry_verified` null): the registry's chain is
 * not one this deployment indexes; its node failed to answer; the address answered no boolean (no
 * contract there, or not a registry); or a reorg of the registry's chain removed the registration it was
 * verified against, and it is asked again.
 */
export const REGISTRY_UNVERIFIED_REASONS = ['chain_not_configured', 'node_error', 'invalid_answer', 'registry_reorg'] as const
export type RegistryUnverifiedReason = (typeof REGISTRY_UNVERIFIED_REASONS)[number]

const statusCheck = (name: string, column: { name: string }) =>
  check(name, sql.raw(`"${column.name}" in ('pending', 'confirmed', 'finalized')`))

/**
 * One row per log. Canonical rows are keyed by (chain, block hash, log index); pre-confirmed rows have
 * the zero block hash and are keyed by (chain, transaction, ordinal within the transaction), so a
 * pending log that moves between flashblocks or blocks stays one row. Rows are never deleted: a reorg
 * or a dropped pending transaction sets `removed` (retention alone deletes, src/store/retention.ts).
 * Partitioned by month of `block_timestamp` (monthly tables `logs_pYYYY_MM` and `logs_default`, made by
 * migration 0033 and src/store/partitions.ts); drizzle only reads and writes it through the parent.
 */
export const logs = pgTable(
  'logs',
  {
    chainId: integer('chain_id').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    blockTimestamp: timestamp('block_timestamp', { withTimezone: true }).notNull(),
    /** Block time in ms since the epoch where the node serves it (`timestampMs`, `blockTimestampMs`); null where it serves none. */
    blockTimestampMs: bigint('block_timestamp_ms', { mode: 'number' }),
    transactionHash: text('transaction_hash').notNull(),
    transactionIndex: integer('transaction_index').notNull(),
    logIndex: integer('log_index').notNull(),
    txLogOrdinal: integer('tx_log_ordinal').notNull(),
    address: text('address').notNull(),
    topic0: text('topic0'),
    topic1: text('topic1'),
    topic2: text('topic2'),
    topic3: text('topic3'),
    data: text('data').notNull(),
    status: text('status', { enum: STATUSES }).notNull(),
    removed: boolean('removed').notNull().default(false),
    seenAt: timestamp('seen_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Led by block number, so backfill inserts append to the btree instead of landing at random hashes. Ends with the
    // partition key, as PostgreSQL requires of a unique index on a partitioned table: a block hash fixes its time.
    uniqueIndex('logs_canonical_key')
      .on(t.chainId, t.blockNumber, t.blockHash, t.logIndex, t.blockTimestamp)
      .where(sql`status <> 'pending'`),
    // Not unique (a pending row's time changes between polls, so no key with the partition key can hold it): pending
    // writes hold the chain's tip-writes lock and update before they insert, which keeps one row (src/store/pendingLogs.ts).
    index('logs_pending_key').on(t.chainId, t.transactionHash, t.txLogOrdinal).where(sql`status = 'pending'`),
    index('logs_topic0_block').on(t.chainId, t.topic0, t.blockNumber),
    index('logs_address_block').on(t.chainId, t.address, t.blockNumber),
    // Only live pre-confirmed rows: a dropped one (pending, removed) is terminal and never scanned again.
    index('logs_live_pending').on(t.chainId, t.blockNumber).where(sql`status = 'pending' AND NOT removed`),
    // Dropped pre-confirmed rows in block order: a log list with removed rows and no address or topic0 reads them here.
    index('logs_dropped_pending').on(t.chainId, t.blockNumber).where(sql`status = 'pending' AND removed`),
    // One registry token's events, for the triggers that keep `registry_tokens` (sql/01-registry.sql).
    index('logs_registry_token')
      .on(t.chainId, t.topic1)
      .where(
        sql`topic0 IN ('0xa40b6458b572771734739539dfd7c77d6c2a8970136e92c607ca50d90dbad410', '0x579a3b4ca7558a4f7fbbe4d6d29175c8f8910f7b112a235b14564f32f9949b43')`,
      ),
    index('logs_registry_transfer')
      .on(t.chainId, t.topic3)
      .where(sql`topic0 = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef' AND topic3 IS NOT NULL`),
    statusCheck('logs_status_check', t.status),
  ],
)

/** Block headers seen by the indexer; `removed` marks orphaned blocks. */
export const blocks = pgTable(
  'blocks',
  {
    chainId: integer('chain_id').notNull(),
    number: bigint('number', { mode: 'number' }).notNull(),
    hash: text('hash').notNull(),
    parentHash: text('parent_hash'),
    timestamp: timestamp('timestamp', { withTimezone: true }).notNull(),
    /** Block time in ms since the epoch where the node serves it (`timestampMs`, `blockTimestampMs`); null where it serves none. */
    blockTimestampMs: bigint('block_timestamp_ms', { mode: 'number' }),
    status: text('status', { enum: STATUSES }).notNull(),
    removed: boolean('removed').notNull().default(false),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.hash] }),
    index('blocks_number').on(t.chainId, t.number),
    statusCheck('blocks_status_check', t.status),
  ],
)

/**
 * Transactions behind indexed logs (or every transaction of indexed blocks) with their decoded ERC-8021
 * suffix. The suffix is part of the signed input, so it is decoded once per hash; position, status and
 * `removed` follow the transaction's logs. Partitioned by month of `block_timestamp` (monthly tables
 * `transactions_pYYYY_MM` and `transactions_default`, made by migration 0037 and src/store/partitions.ts); a
 * row moves between months with its block, and {@link transactionKeys} keeps one row per hash.
 */
export const transactions = pgTable(
  'transactions',
  {
    chainId: integer('chain_id').notNull(),
    hash: text('hash').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    blockTimestamp: timestamp('block_timestamp', { withTimezone: true }).notNull(),
    /** Block time in ms since the epoch where the node serves it (`timestampMs`, `blockTimestampMs`); null where it serves none. */
    blockTimestampMs: bigint('block_timestamp_ms', { mode: 'number' }),
    transactionIndex: integer('transaction_index').notNull(),
    fromAddress: text('from_address').notNull(),
    toAddress: text('to_address'),
    inputSize: integer('input_size').notNull(),
    hasSuffix: boolean('has_suffix').notNull(),
    schemaId: smallint('schema_id'),
    codes: text('codes').array(),
    registryAddress: text('registry_address'),
    registryChainId: numeric('registry_chain_id'),
    registryVerified: boolean('registry_verified'),
    /** Why `registryVerified` is null where the suffix names a registry; null once it is known. */
    registryUnverifiedReason: text('registry_unverified_reason', { enum: REGISTRY_UNVERIFIED_REASONS }),
    cbor: jsonb('cbor'),
    malformedReason: text('malformed_reason'),
    userOperations: integer('user_operations').notNull().default(0),
    gasUsed: bigint('gas_used', { mode: 'number' }),
    status: text('status', { enum: STATUSES }).notNull(),
    removed: boolean('removed').notNull().default(false),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // block_timestamp is in the key because the table is partitioned by it; one row per hash is kept by
    // transaction_keys, which every writer writes or locks first (src/store/attributions.ts).
    primaryKey({ name: 'transactions_pk', columns: [t.chainId, t.hash, t.blockTimestamp] }),
    index('transactions_block_number').on(t.chainId, t.blockNumber),
    index('transactions_live_pending').on(t.chainId, t.blockNumber).where(sql`status = 'pending' AND NOT removed`),
    // Registry answers still unknown, asked again longest waiting first: few rows, so a partial index.
    index('transactions_registry_unknown')
      .on(t.chainId, t.registryChainId, t.updatedAt)
      .where(sql`${t.registryVerified} IS NULL AND ${t.registryAddress} IS NOT NULL AND ${t.codes} IS NOT NULL AND NOT ${t.removed}`),
    // Rows verified against a registry, found again when a reorg of its chain removes a registration.
    index('transactions_registry_verified').on(t.registryChainId, t.registryAddress).where(sql`${t.registryVerified} AND NOT ${t.removed}`),
    statusCheck('transactions_status_check', t.status),
    check(
      'transactions_registry_unverified_reason_check',
      sql.raw(`registry_unverified_reason in (${REGISTRY_UNVERIFIED_REASONS.map((reason) => `'${reason}'`).join(', ')})`),
    ),
  ],
)

/**
 * One row per stored transaction, keyed by hash alone: the unique key `transactions` cannot hold, since a
 * partitioned table's keys must include its partition column. Every writer of a transaction inserts or locks its
 * row here first, in the same database transaction, so two writers of one transaction take turns and the second
 * finds the first's row, in whichever month it is. Retention deletes a key with its transaction.
 */
export const transactionKeys = pgTable(
  'transaction_keys',
  {
    chainId: integer('chain_id').notNull(),
    hash: text('hash').notNull(),
    /** The transaction row's `block_timestamp`, set anew by every move: a read by hash looks into its month only. */
    blockTimestamp: timestamp('block_timestamp', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ name: 'transaction_keys_pk', columns: [t.chainId, t.hash] })],
)

/** Builder codes issued here (`local`) or by the upstream service (`upstream`): one per wallet, one wallet per code. */
export const builderCodes = pgTable(
  'builder_codes',
  {
    chainId: integer('chain_id').notNull(),
    builderCode: text('builder_code').notNull(),
    walletAddress: text('wallet_address').notNull(),
    source: text('source', { enum: ['local', 'upstream'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.builderCode] }),
    uniqueIndex('builder_codes_wallet').on(t.chainId, t.walletAddress),
    check('builder_codes_source_check', sql`source in ('local', 'upstream')`),
  ],
)

/** Each registered wallet's nonces as the node last reported them, for attribution coverage. */
export const walletNonces = pgTable(
  'wallet_nonces',
  {
    chainId: integer('chain_id').notNull(),
    walletAddress: text('wallet_address').notNull(),
    latestNonce: bigint('latest_nonce', { mode: 'number' }).notNull(),
    pendingNonce: bigint('pending_nonce', { mode: 'number' }).notNull(),
    checkedAt: timestamp('checked_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.walletAddress] })],
)

/** Schema-2 roles of a code (`a`, `w`, `s`); '' stands for none (schemas 0 and 1) so it can be part of a key. */
export const CODE_ROLES = ['app', 'wallet', 'service'] as const
export type CodeRole = (typeof CODE_ROLES)[number]

const roleCheck = (name: string) => check(name, sql`role in ('', 'app', 'wallet', 'service')`)

/**
 * One row per (transaction or user operation, decoded code, role). `user_op_hash` is '' for a plain
 * transaction and `role` '' for a code without one, so both can be part of the key; the views expose them as null.
 * Partitioned by month of `block_timestamp` (monthly tables `attributions_pYYYY_MM` and `attributions_default`,
 * made by migration 0036 and src/store/partitions.ts); a row moves between months with its transaction.
 */
export const attributions = pgTable(
  'attributions',
  {
    chainId: integer('chain_id').notNull(),
    txHash: text('tx_hash').notNull(),
    userOpHash: text('user_op_hash').notNull().default(''),
    builderCode: text('builder_code').notNull(),
    role: text('role', { enum: ['', ...CODE_ROLES] })
      .notNull()
      .default(''),
    codeIndex: smallint('code_index').notNull(),
    /** The registry the suffix names for this code: schema 1's, or schema 2's `r` entry for the role. */
    registryAddress: text('registry_address'),
    registryChainId: numeric('registry_chain_id'),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    blockTimestamp: timestamp('block_timestamp', { withTimezone: true }).notNull(),
    /** Block time in ms since the epoch where the node serves it (`timestampMs`, `blockTimestampMs`); null where it serves none. */
    blockTimestampMs: bigint('block_timestamp_ms', { mode: 'number' }),
    fromAddress: text('from_address').notNull(),
    sender: text('sender').notNull(),
    toAddress: text('to_address'),
    schemaId: smallint('schema_id').notNull(),
    codes: text('codes').array().notNull(),
    gasUsed: bigint('gas_used', { mode: 'number' }),
    status: text('status', { enum: STATUSES }).notNull(),
    removed: boolean('removed').notNull().default(false),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // block_timestamp is in the key because the table is partitioned by it; one row per (transaction, user
    // operation, code, role) is kept by the writers (src/store/attributions.ts).
    primaryKey({ name: 'attributions_pk', columns: [t.chainId, t.txHash, t.userOpHash, t.builderCode, t.role, t.blockTimestamp] }),
    index('attributions_code_block').on(t.chainId, t.builderCode, t.blockNumber, t.txHash),
    index('attributions_block').on(t.chainId, t.blockNumber, t.txHash),
    index('attributions_timestamp').on(t.chainId, t.blockTimestamp),
    index('attributions_live_pending').on(t.chainId, t.blockNumber).where(sql`status = 'pending' AND NOT removed`),
    // Gas used the follow-up gas fill still owes: a backfill's tail, so a partial index.
    index('attributions_gas_missing')
      .on(t.chainId, t.blockNumber, t.txHash)
      .where(sql`gas_used IS NULL AND status <> 'pending' AND NOT removed`),
    statusCheck('attributions_status_check', t.status),
    roleCheck('attributions_role_check'),
  ],
)

/**
 * Attributions not removed per code, role and UTC hour or day: the stats' split by role. Kept by the
 * triggers on `attributions` (sql/02-stats-rollup.sql) like `builder_code_buckets`.
 */
export const builderCodeRoleBuckets = pgTable(
  'builder_code_role_buckets',
  {
    chainId: integer('chain_id').notNull(),
    builderCode: text('builder_code').notNull(),
    role: text('role', { enum: ['', ...CODE_ROLES] }).notNull(),
    bucket: text('bucket', { enum: ['hour', 'day'] }).notNull(),
    start: timestamp('start', { withTimezone: true }).notNull(),
    attributions: bigint('attributions', { mode: 'number' }).notNull(),
    pending: bigint('pending', { mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'builder_code_role_buckets_pk', columns: [t.chainId, t.builderCode, t.bucket, t.start, t.role] }),
    check('builder_code_role_buckets_bucket_check', sql`bucket in ('hour', 'day')`),
    roleCheck('builder_code_role_buckets_role_check'),
  ],
)

/**
 * The BuilderCodes registry (ERC-721) whose events this chain's index reads (`BUILDER_CODES_REGISTRY`):
 * `registry_tokens` (behind `public.registry_codes` and `analytics.builder_codes`) decodes its logs that are not removed.
 */
export const builderCodeRegistries = pgTable(
  'builder_code_registries',
  {
    chainId: integer('chain_id').notNull(),
    address: text('address').notNull(),
    startBlock: bigint('start_block', { mode: 'number' }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.address] })],
)

/**
 * Each token of the configured registries as their logs that are not removed say (`public.registry_codes`
 * reads it). Kept by the row triggers on `logs` (sql/01-registry.sql), so every writer updates it in its transaction.
 */
export const registryTokens = pgTable(
  'registry_tokens',
  {
    chainId: integer('chain_id').notNull(),
    /** The token id as the logs' topic (32-byte hex). */
    tokenTopic: text('token_topic').notNull(),
    builderCode: text('builder_code').notNull(),
    tokenId: numeric('token_id').notNull(),
    owner: text('owner'),
    payoutAddress: text('payout_address'),
    registeredBlock: bigint('registered_block', { mode: 'number' }).notNull(),
    registeredAt: timestamp('registered_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'registry_tokens_pkey', columns: [t.chainId, t.tokenTopic] }),
    index('registry_tokens_code').on(t.chainId, t.builderCode),
  ],
)

/** Bucket sizes of the stats rollup: UTC hours and days. */
const STATS_BUCKETS = ['hour', 'day'] as const

const bucketCheck = (name: string) => check(name, sql`bucket in ('hour', 'day')`)

/**
 * Stats rollup of the attributions that are not removed, per code and UTC hour or day. Kept by the
 * triggers on `attributions` (sql/02-stats-rollup.sql), so every write path updates it in the same transaction.
 */
export const builderCodeBuckets = pgTable(
  'builder_code_buckets',
  {
    chainId: integer('chain_id').notNull(),
    builderCode: text('builder_code').notNull(),
    bucket: text('bucket', { enum: STATS_BUCKETS }).notNull(),
    start: timestamp('start', { withTimezone: true }).notNull(),
    attributions: bigint('attributions', { mode: 'number' }).notNull(),
    pending: bigint('pending', { mode: 'number' }).notNull(),
    gasUsed: numeric('gas_used').notNull(),
    /** Senders with at least one attribution in the bucket: rows of `builder_code_bucket_senders`. */
    senders: bigint('senders', { mode: 'number' }).notNull(),
    /** Senders whose latest attribution of the code is in the bucket: summed from a time on, the distinct senders since then. */
    latestSenders: bigint('latest_senders', { mode: 'number' }).notNull(),
    // The bucket's confirmed attributions (not pending), behind analytics.builder_code_daily (migration 0035).
    /** Distinct (transaction, user operation) pairs. */
    confirmedTxCount: bigint('confirmed_tx_count', { mode: 'number' }).notNull().default(0),
    /** Senders with a confirmed attribution in the bucket: rows of `builder_code_bucket_senders` with `n > pending`. */
    confirmedSenders: bigint('confirmed_senders', { mode: 'number' }).notNull().default(0),
    /** Distinct transactions (a bundle of several user operations counts once). */
    confirmedTransactions: bigint('confirmed_transactions', { mode: 'number' }).notNull().default(0),
    /** Rows with a user operation. */
    confirmedUserOperations: bigint('confirmed_user_operations', { mode: 'number' }).notNull().default(0),
    confirmedGasUsed: numeric('confirmed_gas_used').notNull().default('0'),
    /** Rows whose gas used is known: the view's gas used is null while there are none, as a sum of nulls is. */
    confirmedGasRows: bigint('confirmed_gas_rows', { mode: 'number' }).notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.builderCode, t.bucket, t.start] }),
    // analytics.builder_code_daily's day, so that a range of days reads only those days' buckets.
    index('builder_code_buckets_day').on(sql`((start AT TIME ZONE 'UTC')::date)`, t.chainId, t.builderCode).where(sql`bucket = 'day'`),
    // The leaderboard ranks every code's buckets of a time range. Time leads so that, statistics or
    // not, the planner never prefers this index to the key for one code's buckets; the code and its
    // count follow so the ranking reads the index alone (at 1,000 codes, 6 ms of PostgreSQL instead of 9).
    index('builder_code_buckets_time_counts').on(t.start, t.chainId, t.bucket, t.builderCode, t.attributions),
    bucketCheck('builder_code_buckets_bucket_check'),
  ],
)

/** How many counted attributions each sender has in a bucket; a row exists while that is above zero. */
export const builderCodeBucketSenders = pgTable(
  'builder_code_bucket_senders',
  {
    chainId: integer('chain_id').notNull(),
    builderCode: text('builder_code').notNull(),
    bucket: text('bucket', { enum: STATS_BUCKETS }).notNull(),
    start: timestamp('start', { withTimezone: true }).notNull(),
    sender: text('sender').notNull(),
    n: integer('n').notNull(),
    /** How many of the `n` are pending: the sender has a confirmed attribution in the bucket while `n > pending`. */
    pending: integer('pending').notNull().default(0),
  },
  (t) => [
    primaryKey({ name: 'builder_code_bucket_senders_pk', columns: [t.chainId, t.builderCode, t.bucket, t.start, t.sender] }),
    bucketCheck('builder_code_bucket_senders_bucket_check'),
  ],
)

/**
 * Each sender of a code: its counted attributions and the block time of the latest, which places the
 * sender in `builder_code_buckets.latest_senders`. A row exists while `n` is above zero.
 */
export const builderCodeSenders = pgTable(
  'builder_code_senders',
  {
    chainId: integer('chain_id').notNull(),
    builderCode: text('builder_code').notNull(),
    sender: text('sender').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
    lastSeen: timestamp('last_seen', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.builderCode, t.sender] })],
)

/** The log filters the indexer has worked for; `filter_id` is a hash of the normalised filter. */
export const syncFilters = pgTable(
  'sync_filters',
  {
    chainId: integer('chain_id').notNull(),
    filterId: text('filter_id').notNull(),
    addresses: text('addresses').array().notNull(),
    topics: text('topics').array().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.filterId] })],
)

/**
 * Block ranges whose logs are stored for a filter, merged as they grow: the union says what a
 * backfill may skip and where live indexing resumes.
 */
export const syncIntervals = pgTable(
  'sync_intervals',
  {
    chainId: integer('chain_id').notNull(),
    filterId: text('filter_id').notNull(),
    fromBlock: bigint('from_block', { mode: 'number' }).notNull(),
    toBlock: bigint('to_block', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.filterId, t.fromBlock] }), check('sync_intervals_order', sql`from_block <= to_block`)],
)

/**
 * Blocks a filter must read again: written in the same transaction that marks their rows removed and
 * takes them out of the filter's `sync_intervals`, so a crash right after still leaves the work
 * recorded. The scheduler turns them into range jobs; a repair is done once its blocks are stored
 * for the filter again.
 */
export const syncRepairs = pgTable(
  'sync_repairs',
  {
    chainId: integer('chain_id').notNull(),
    filterId: text('filter_id').notNull(),
    fromBlock: bigint('from_block', { mode: 'number' }).notNull(),
    toBlock: bigint('to_block', { mode: 'number' }).notNull(),
    reason: text('reason', { enum: ['reorg', 'orphaned'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** When a mark last (re)opened these blocks: job failures from before it are not this repair's. */
    markedAt: timestamp('marked_at', { withTimezone: true }).notNull().defaultNow(),
    /** Failed attempts to read the blocks again; at the runner's limit the repair is quarantined. */
    failures: integer('failures').notNull().default(0),
    lastError: text('last_error'),
    /** Set after a failure: the next attempt waits until then. */
    retryAt: timestamp('retry_at', { withTimezone: true }),
    /** Set when the repair stopped being retried; a new mark of the same blocks clears it. */
    quarantinedAt: timestamp('quarantined_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.filterId, t.fromBlock, t.toBlock] }),
    check('sync_repairs_order', sql`from_block <= to_block`),
  ],
)

/** Per chain: the node's head, safe and finalized blocks as last seen, and the live follower's position. */
export const chainState = pgTable('chain_state', {
  chainId: integer('chain_id').primaryKey(),
  /** The chain's name in the config file; null for a chain configured through the environment. */
  name: text('name'),
  headBlock: bigint('head_block', { mode: 'number' }),
  safeBlock: bigint('safe_block', { mode: 'number' }),
  finalizedBlock: bigint('finalized_block', { mode: 'number' }),
  liveBlock: bigint('live_block', { mode: 'number' }),
  liveHash: text('live_hash'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  /** The chain's profile as the scheduler last probed it (see `src/chains`). */
  blockTimeMs: integer('block_time_ms'),
  preconfirmations: boolean('preconfirmations'),
  preconfirmationsSource: text('preconfirmations_source', { enum: ['probe', 'config'] }),
  /** The newest scheduler lease generation claimed: tip, reorg, finality and dispatch writes of an older one are refused. */
  leaseGeneration: bigint('lease_generation', { mode: 'number' }).notNull().default(0),
})

/** Every reorg the head follower handled, for audit and metrics. */
export const reorgs = pgTable(
  'reorgs',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    chainId: integer('chain_id').notNull(),
    forkBlock: bigint('fork_block', { mode: 'number' }).notNull(),
    depth: integer('depth').notNull(),
    oldHash: text('old_hash').notNull(),
    newHash: text('new_hash').notNull(),
    logsRemoved: integer('logs_removed').notNull(),
    detectedAt: timestamp('detected_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('reorgs_chain').on(t.chainId, t.detectedAt)],
)

/** Webhook event types, one per state an attribution can reach. */
export const WEBHOOK_EVENTS = ['attribution.pending', 'attribution.confirmed', 'attribution.finalized', 'attribution.removed'] as const
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number]

const attributionEventColumns = () => ({
  type: text('type', { enum: WEBHOOK_EVENTS }).notNull(),
  chainId: integer('chain_id').notNull(),
  txHash: text('tx_hash').notNull(),
  userOpHash: text('user_op_hash').notNull(),
  builderCode: text('builder_code').notNull(),
  role: text('role'),
  sender: text('sender').notNull(),
  blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
  blockTimestamp: timestamp('block_timestamp', { withTimezone: true }).notNull(),
  blockTimestampMs: bigint('block_timestamp_ms', { mode: 'number' }),
  status: text('status', { enum: STATUSES }).notNull(),
  removed: boolean('removed').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
})

/**
 * The outbox: every change of an attribution's state, written by the triggers on `attributions`
 * (sql/03-webhook-outbox.sql) in the transaction that made it, one row per statement holding its changes as one
 * `attribution_change[]` (the view `attribution_changes` lists them one per row). Ids follow insertion,
 * not commit, so readers never page through it by id: the dispatcher moves committed rows into
 * `webhook_events` (see there).
 */
export const attributionChangeSets = pgTable(
  'attribution_change_sets',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    /** The writing transaction: the publisher nets its changes of one attribution into the final state. */
    xactId: bigint('xact_id', { mode: 'number' }).notNull().default(sql`(pg_current_xact_id()::text)::bigint`),
    /** Changes in `changes`: the publisher takes whole transactions of about its batch size without reading the arrays. */
    size: integer('size').notNull(),
    changes: attributionChangeArray('changes').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('attribution_change_sets_xact').on(t.xactId)],
)

/**
 * Published events: their id is the event id receivers see. One publisher at a time moves committed
 * changes here under a lock, so ids become visible in order and a reader may resume after any id.
 * Partitioned by month of `created_at` (monthly tables `webhook_events_pYYYY_MM` and
 * `webhook_events_default`, made by migration 0034 and src/store/partitions.ts), so retention drops
 * whole months; drizzle only reads and writes it through the parent.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    // One identity sequence for every partition: ids stay unique although the key must hold the partition key too.
    id: bigint('id', { mode: 'number' }).notNull().generatedAlwaysAsIdentity(),
    ...attributionEventColumns(),
    walletAddress: text('wallet_address'),
  },
  (t) => [
    primaryKey({ name: 'webhook_events_pkey', columns: [t.id, t.createdAt] }),
    index('webhook_events_attribution').on(t.chainId, t.txHash, t.userOpHash, t.builderCode),
    index('webhook_events_created').using('brin', t.createdAt),
  ],
)

/** A webhook subscription; null filters match everything. */
export const webhookSubscriptions = pgTable('webhook_subscriptions', {
  id: text('id').primaryKey(),
  url: text('url').notNull(),
  secret: text('secret').notNull(),
  events: text('events').array().notNull(),
  builderCodes: text('builder_codes').array(),
  walletAddresses: text('wallet_addresses').array(),
  roles: text('roles').array(),
  /** The chains whose events the subscription wants; null: every chain. */
  chainIds: integer('chain_ids').array(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  /** Failed attempts since the last success; while above zero one delivery at a time probes the receiver. */
  consecutiveFailures: integer('consecutive_failures').notNull().default(0),
  /** While failing: no attempt before this time (exponential backoff with jitter). */
  retryAt: timestamp('retry_at', { withTimezone: true }),
  disabledAt: timestamp('disabled_at', { withTimezone: true }),
  disabledReason: text('disabled_reason'),
  /** The lease of the one delivery job draining the subscription's owed events (a killed worker's lapses). */
  drainUntil: timestamp('drain_until', { withTimezone: true }),
  /** The secret a rotation replaced: it signs beside `secret` until `previousSecretUntil`. */
  previousSecret: text('previous_secret'),
  previousSecretUntil: timestamp('previous_secret_until', { withTimezone: true }),
})

/** Events owed to each subscription (written with the dispatcher's cursor), deleted when delivered: the truth the queue only schedules. */
export const webhookOutstanding = pgTable(
  'webhook_outstanding',
  {
    subscriptionId: text('subscription_id')
      .notNull()
      .references(() => webhookSubscriptions.id, { onDelete: 'cascade' }),
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    txHash: text('tx_hash').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.subscriptionId, t.eventId] }),
    index('webhook_outstanding_tx').on(t.subscriptionId, t.txHash, t.eventId),
  ],
)

/**
 * Every delivery attempt, for `GET /v1/webhooks/{id}/deliveries`. Partitioned by month of `created_at`
 * as `webhook_events` is (migration 0034), so retention drops whole months.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigint('id', { mode: 'number' }).notNull().generatedAlwaysAsIdentity(),
    subscriptionId: text('subscription_id')
      .notNull()
      .references(() => webhookSubscriptions.id, { onDelete: 'cascade' }),
    eventId: bigint('event_id', { mode: 'number' }).notNull(),
    ok: boolean('ok').notNull(),
    httpStatus: integer('http_status'),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'webhook_deliveries_pkey', columns: [t.id, t.createdAt] }),
    index('webhook_deliveries_subscription').on(t.subscriptionId, t.id),
    index('webhook_deliveries_created').using('brin', t.createdAt),
  ],
)

/** Until when a stream reader may come back for events: the outbox records every type until then. */
export const outboxDemand = pgTable('outbox_demand', {
  name: text('name').primaryKey(),
  until: timestamp('until', { withTimezone: true }).notNull(),
})

/** How far the dispatcher has handed events to delivery jobs. */
export const webhookCursor = pgTable('webhook_cursor', {
  name: text('name').primaryKey(),
  eventId: bigint('event_id', { mode: 'number' }).notNull(),
  /** The newest delivery lease generation claimed: dispatch rounds of an older one are refused. */
  leaseGeneration: bigint('lease_generation', { mode: 'number' }).notNull().default(0),
})

/** The digest of the definitions of `sql/` the database holds: the migrator applies them again only when they change. */
export const sqlDefinitions = pgTable('sql_definitions', {
  digest: text('digest').primaryKey(),
  appliedAt: timestamp('applied_at', { withTimezone: true }).notNull().defaultNow(),
})
