import type pg from 'pg'
import { numberToHex, type Address } from 'viem'
import type { Logger } from '../internal/logger.js'
import {
  knownTransactions,
  storeRegistryAnswers,
  unverifiedTransactions,
  upsertAttributions,
  upsertTransactions,
  type KnownTransaction,
  type TransactionDecodeRow,
  type TransactionPosition,
} from '../store/attributions.js'
import type { Status, TransactionRow } from '../store/index.js'
import {
  getBlocksWithTransactions,
  getBlockTransactionCounts,
  getCodes,
  getTransactions,
  missingBlock,
  type BlockWithTransactions,
  type CodeRead,
} from '../rpc/index.js'
import type { Interval } from '../utils/interval.js'
import { attributeTransaction, type TransactionAttribution, type TransactionInput } from './transaction.js'
import { eip7702Delegate } from './userOps.js'
import { sleep } from '../utils/loop.js'
import {
  BATCH_SIZE,
  BATCHES_IN_FLIGHT,
  blockWeight,
  createReceiptReader,
  inSlices,
  readsWholeBlock,
  type AttributionRpc,
} from './nodeReads.js'
import type { RegistryAnswer } from './registryCheck.js'
import { createRegistryResolver, questionKey, type RegistryQuestion, type RegistryResolver } from './registryResolver.js'

/** Stored registry answers still unknown asked again per pass, and how long after the last ask. */
const REGISTRY_RECHECKS_PER_PASS = BATCH_SIZE
const REGISTRY_RECHECK_AFTER_MS = 60_000

/** Asks for a confirmed log's transaction (or an EIP-7702 sender's delegation) the node does not show this many more times, doubling the wait. */
const MISSING_TRANSACTION_RETRIES = 5
const MISSING_TRANSACTION_DELAY_MS = 100

/** A block read with its transactions, header decoded (hashes lowercase), transactions as the node sent them. */
export type FetchedBlock = {
  number: number
  hash: string
  parentHash: string
  timestamp: number
  timestampMs?: number | null
  transactions: readonly TransactionInput[]
}

export type Writes = (client: pg.PoolClient) => Promise<void>

/** A block's header with its transactions already decoded (their inputs are not kept). */
export type AttributedBlock = {
  number: number
  hash: string
  parentHash: string
  timestamp: number
  timestampMs: number | null
  /** Every transaction of the block, deposits included (flagged), at their indexes. */
  transactions: TransactionAttribution[]
}

export type AttributorContext = {
  rpc: AttributionRpc
  chainId: number
  logger: Logger
  pool: pg.Pool
  /** `ATTRIBUTION_SCOPE`: transactions behind logs, or every transaction of the stored blocks. */
  scope: 'logs' | 'blocks'
  /** How long a registry answer that stayed unknown waits before a later pass asks again. @default 60_000 */
  registryRecheckAfterMs?: number
  /**
   * Answers schema-1 registry questions, on this chain and on the other chains of the deployment; unset:
   * one that serves this chain alone (through `rpc` and `pool`), so a registry elsewhere stays unknown.
   */
  registries?: RegistryResolver
  /**
   * Whether range jobs (`attribute`) leave gas used to the follow-up gas fill: receipts are the one
   * fetch of a backfill that storing logs does not need. The tip and pending paths are not affected.
   */
  deferRangeGas?: boolean
  /** Called once per newly stored transaction whose suffix has a schema id of 3 or above (stored without codes). */
  onLaterSchema?: (schemaId: number) => void
}

/** The position of each transaction behind `rows` (logs), taken from its first log. */
function positionsOfRows(rows: readonly TransactionRow[], statusOf: (blockNumber: number) => Status): Map<string, TransactionPosition> {
  const positions = new Map<string, TransactionPosition>()
  for (const row of rows) {
    if (positions.has(row.transactionHash)) continue
    positions.set(row.transactionHash, {
      hash: row.transactionHash,
      blockNumber: row.blockNumber,
      blockHash: row.blockHash,
      blockTimestamp: row.blockTimestamp,
      blockTimestampMs: row.blockTimestampMs,
      transactionIndex: row.transactionIndex,
      status: statusOf(row.blockNumber),
    })
  }
  return positions
}

/** `blocks`, checked to be the blocks of the logs `rows`; otherwise the chain moved between the reads and the caller reads again. */
function blocksOfRows(blocks: AttributedBlock[], rows: readonly TransactionRow[]): AttributedBlock[] {
  const hashAt = new Map(blocks.map((block) => [block.number, block.hash]))
  const stray = rows.find((row) => hashAt.get(row.blockNumber) !== row.blockHash)
  if (stray)
    throw new Error(`log of block ${stray.blockNumber} (${stray.blockHash}) is not from the blocks read for attribution; reading again`)
  return blocks
}

/** The fewest transactions the block of `hashes` can hold: one more than the highest index among them. */
function leastSize(hashes: readonly string[], positions: ReadonlyMap<string, TransactionPosition>): number {
  return Math.max(...hashes.map((hash) => positions.get(hash)!.transactionIndex + 1))
}

/**
 * Attribution of indexed transactions: takes their inputs (by hash in JSON-RPC batches, or from whole
 * blocks), decodes their ERC-8021 suffixes and user operations, checks schema-1 codes against a
 * registry on this chain, fetches gas used of attributed ones, and returns the writes that store them
 * beside the logs, in the same database transaction.
 */
export function createAttributor(context: AttributorContext) {
  const { rpc, chainId, logger, registryRecheckAfterMs = REGISTRY_RECHECK_AFTER_MS } = context
  const gasUsedOf = createReceiptReader(rpc)
  const registries =
    context.registries ??
    (() => {
      const alone = createRegistryResolver()
      alone.serve({ chainId, rpc, node: rpc, pool: context.pool })
      return alone
    })()

  /**
   * `attributions` with the hashes of their EIP-7702 user operations: each sender's delegate is read
   * from its code (`0xef0100 ∥ address`) at the transaction's block with `eth_getCode` in JSON-RPC
   * batches, and the transaction is decoded again with them.
   */
  async function withEip7702Delegates(
    attributions: readonly TransactionAttribution[],
    positions: ReadonlyMap<string, TransactionPosition>,
  ): Promise<TransactionAttribution[]> {
    // The state after the transaction's block: a bundle may carry the authorization that delegates its sender.
    const blockOf = (hash: string) => {
      const position = positions.get(hash)!
      return position.status === 'pending' ? 'pending' : numberToHex(position.blockNumber)
    }
    const reads = new Map<string, CodeRead>()
    for (const a of attributions) {
      for (const sender of a.eip7702?.senders ?? []) reads.set(`${sender}@${blockOf(a.hash)}`, [sender, blockOf(a.hash)])
    }
    if (reads.size === 0) return [...attributions]
    // A node behind the others may not show the delegation yet: a miss is asked again, the wait doubling.
    const delegateAt = new Map<string, Address>()
    let ask = [...reads.keys()]
    for (let attempt = 0; ask.length > 0; attempt++) {
      const codes = await inSlices(ask, BATCH_SIZE, BATCHES_IN_FLIGHT, (slice) =>
        getCodes(
          rpc,
          slice.map((key) => reads.get(key)!),
        ),
      )
      ask.forEach((key, i) => {
        const delegate = eip7702Delegate(codes[i])
        if (delegate) delegateAt.set(key, delegate)
      })
      ask = ask.filter((key) => !delegateAt.has(key))
      if (ask.length === 0 || attempt >= MISSING_TRANSACTION_RETRIES) break
      await sleep(MISSING_TRANSACTION_DELAY_MS * 2 ** attempt)
    }
    return attributions.map((a) => {
      if (!a.eip7702) return a
      const delegates = new Map<Address, Address>()
      for (const sender of a.eip7702.senders) {
        const delegate = delegateAt.get(`${sender}@${blockOf(a.hash)}`)
        if (delegate) delegates.set(sender as Address, delegate)
        else logger.warn({ tx_hash: a.hash, sender }, 'EIP-7702 user operation sender has no delegation; its hash is unknown')
      }
      return attributeTransaction(a.eip7702.tx, chainId, delegates)
    })
  }

  /**
   * The writes for transactions at `positions`: `decoded` holds at least those not stored yet (`known`
   * ones only move). Gas used is fetched for attributed, non-pending ones that lack it; `blockSizes`
   * (transactions per block hash, where known exactly: a block read whole, a header that listed them)
   * decides how their receipts are read.
   */
  async function prepare(
    decoded: readonly TransactionAttribution[],
    positions: ReadonlyMap<string, TransactionPosition>,
    known: ReadonlyMap<string, KnownTransaction>,
    blockSizes: ReadonlyMap<string, number>,
    gasRead: ReadonlyMap<string, number> | 'deferred' = new Map(),
  ): Promise<Writes> {
    const fresh = await withEip7702Delegates(
      decoded.filter((a) => !known.has(a.hash) && positions.has(a.hash)),
      positions,
    )
    const freshAttributed = new Set(fresh.filter((a) => a.entries.length > 0).map((a) => a.hash))
    const lacksGas = (hash: string) => {
      const stored = known.get(hash)
      return stored ? stored.attributed && stored.gasUsed === null : freshAttributed.has(hash)
    }
    // A pending transaction has no receipt yet; deferred gas is read by the gas fill after the range is stored.
    const needGas = [...positions.values()]
      .filter((p) => gasRead !== 'deferred' && p.status !== 'pending' && lacksGas(p.hash) && !gasRead.has(p.hash))
      .map((p) => ({ hash: p.hash, blockHash: p.blockHash, blockTransactions: blockSizes.get(p.blockHash) }))
    // Stored transactions whose registry answer is still unknown are asked again with this pass's.
    const unverified = await unverifiedTransactions(context.pool, chainId, {
      registryChainIds: registries.chainIds(),
      olderThanMs: registryRecheckAfterMs,
      limit: REGISTRY_RECHECKS_PER_PASS,
    })
    const questions: RegistryQuestion[] = []
    const ask = (registry: { chainId: string; address: string }, codes: readonly string[], asOf: number, fresh = false) => {
      for (const code of codes) questions.push({ chainId: registry.chainId, registry: registry.address, code, asOf, fresh })
    }
    for (const a of fresh) if (a.registry) ask(a.registry, a.codes ?? [], positions.get(a.hash)!.blockTimestamp)
    for (const tx of unverified) ask({ chainId: tx.registryChainId, address: tx.registryAddress }, tx.codes, tx.blockTimestamp, tx.reorged)
    const [gasFetched, answers] = await Promise.all([gasUsedOf(needGas), registries.resolve(chainId, questions)])
    const gasUsed = gasRead !== 'deferred' && gasRead.size > 0 ? new Map([...gasRead, ...gasFetched]) : gasFetched
    /** All codes registered: true; one not: false; one unknown: unknown, with its reason. */
    const verdict = (registry: { chainId: string; address: string }, codes: readonly string[]): RegistryAnswer => {
      const each = codes.map((code) => answers.get(questionKey({ chainId: registry.chainId, registry: registry.address, code }))!)
      return (
        each.find((answer) => answer.registered === null) ??
        ({ registered: each.every((answer) => answer.registered), reason: null } as RegistryAnswer)
      )
    }
    const answersAgain = unverified.map((tx) => {
      const { registered, reason } = verdict({ chainId: tx.registryChainId, address: tx.registryAddress }, tx.codes)
      return { hash: tx.hash, verified: registered, reason }
    })

    const rows = fresh.map((a): TransactionDecodeRow => {
      const answer = a.registry ? verdict(a.registry, a.codes ?? []) : null
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
        registryVerified: answer?.registered ?? null,
        registryUnverifiedReason: answer?.reason ?? null,
        cbor: a.cbor,
        malformedReason: a.malformedReason,
        userOperations: a.userOperations,
      }
    })
    const entries = fresh.flatMap((a) => a.entries.map((entry) => ({ ...entry, txHash: a.hash, from: a.from, to: a.to })))
    for (const a of fresh) if (a.schemaId !== null && a.schemaId > 2 && a.malformedReason === null) context.onLaterSchema?.(a.schemaId)
    return async (client) => {
      const { decodedStored } = await upsertTransactions(client, chainId, rows, positions, gasUsed)
      await upsertAttributions(client, chainId, entries, positions, gasUsed, { transactionsStored: decodedStored })
      // Last, and skipping rows others hold: this transaction then never waits on another while holding them.
      await storeRegistryAnswers(client, chainId, answersAgain)
    }
  }

  /**
   * Transactions by hash, in order, decoded as each batch arrives so the node's objects (inputs
   * included) die young; null where the node has none. A `required` transaction the node does not know
   * yet — one behind a load balancer may lag the others — is asked for again.
   */
  async function fetchTransactions(
    hashes: readonly string[],
    required: (hash: string) => boolean,
  ): Promise<(TransactionAttribution | null)[]> {
    const found = new Map<string, TransactionAttribution>()
    let ask = [...hashes]
    for (let attempt = 0; ask.length > 0; attempt++) {
      const slice = ask
      const answers = await inSlices(slice, BATCH_SIZE, BATCHES_IN_FLIGHT, async (part) =>
        (await getTransactions(rpc, part)).map((tx) => (tx ? attributeTransaction(tx, chainId) : null)),
      )
      answers.forEach((tx, i) => {
        if (tx) found.set(slice[i]!, tx)
      })
      ask = slice.filter((hash) => !found.has(hash) && required(hash))
      if (ask.length === 0 || attempt >= MISSING_TRANSACTION_RETRIES) break
      await sleep(MISSING_TRANSACTION_DELAY_MS * 2 ** attempt)
    }
    return hashes.map((hash) => found.get(hash) ?? null)
  }

  /**
   * The transaction counts of these blocks (by hash, so the count is of the very block the logs name),
   * in batches; a block the node does not know under that hash is left out (its transactions are then asked by hash).
   */
  async function countTransactions(blockHashes: readonly string[]): Promise<Map<string, number>> {
    const counts = await inSlices(blockHashes, BATCH_SIZE, BATCHES_IN_FLIGHT, (slice) => getBlockTransactionCounts(rpc, slice))
    const sizes = new Map<string, number>()
    counts.forEach((count, i) => {
      if (count !== null) sizes.set(blockHashes[i]!, count)
    })
    return sizes
  }

  /**
   * The transactions `missing` (hashes at `positions`), read the way that takes fewest calls: a block
   * whose size is known (`sizes`, transactions per block hash) and whose missing transactions are a
   * large share of it is read whole with `eth_getBlockByNumber(n, true)`, the rest by hash (so are
   * pending ones). A block's highest log position is only a lower bound of its size: where that bound
   * allows a whole read, the real count is asked first (`countTransactions`). Returns them decoded
   * (null where the node has none) and the sizes learnt (blocks counted or read whole).
   */
  async function fetchForLogs(
    missing: readonly string[],
    positions: ReadonlyMap<string, TransactionPosition>,
    sizes: ReadonlyMap<string, number>,
  ) {
    const missingPerBlock = Map.groupBy(
      missing.filter((hash) => positions.get(hash)!.status !== 'pending'),
      (hash) => positions.get(hash)!.blockHash,
    )
    const counted = await countTransactions(
      [...missingPerBlock]
        .filter(([blockHash, hashes]) => !sizes.has(blockHash) && readsWholeBlock(hashes.length, leastSize(hashes, positions)))
        .map(([blockHash]) => blockHash),
    )
    const sizeOf = (blockHash: string) => sizes.get(blockHash) ?? counted.get(blockHash)
    const whole = [...missingPerBlock].filter(([blockHash, hashes]) => readsWholeBlock(hashes.length, sizeOf(blockHash)))
    const inWhole = new Set(whole.flatMap(([, hashes]) => hashes))
    const byHash = missing.filter((hash) => !inWhole.has(hash))
    const wanted = (hash: string) => inWhole.has(hash)
    const wholeNumbers = whole.map(([, hashes]) => positions.get(hashes[0]!)!.blockNumber)
    const sizeAt = new Map(whole.map(([blockHash], i) => [wholeNumbers[i]!, sizeOf(blockHash)]))
    const [blocks, transactions] = await Promise.all([
      readBlocks(
        wholeNumbers,
        (block) => ({
          hash: block.hash,
          size: block.transactions.length,
          transactions: block.transactions.filter((tx) => wanted(tx.hash.toLowerCase())).map((tx) => attributeTransaction(tx, chainId)),
        }),
        (n) => sizeAt.get(n),
      ),
      fetchTransactions(byHash, (hash) => positions.get(hash)!.status !== 'pending'),
    ])
    const found = new Map<string, TransactionAttribution>()
    blocks.forEach((block, i) => {
      // The chain moved between the logs and the block: the caller reads both again.
      if (block.hash !== whole[i]![0])
        throw new Error(
          `block ${positions.get(whole[i]![1][0]!)!.blockNumber} is ${block.hash} on the node, not ${whole[i]![0]} as its logs say; reading again`,
        )
      for (const tx of block.transactions) found.set(tx.hash, tx)
    })
    transactions.forEach((tx, i) => {
      if (tx) found.set(byHash[i]!, tx)
    })
    return {
      transactions: missing.map((hash) => found.get(hash) ?? null),
      blockSizes: new Map([...counted, ...blocks.map((block) => [block.hash, block.size] as const)]),
    }
  }

  /**
   * Prepares the attribution of the transactions behind `rows` (fetching and decoding happen now,
   * outside any database transaction); the returned writes store them with the logs. Inputs not
   * decoded yet are fetched whole block or by hash (`fetchForLogs`); `blockSizes` holds the exact
   * transaction count of the blocks whose headers were read (by block hash).
   */
  async function forLogs(
    rows: readonly TransactionRow[],
    statusOf: (blockNumber: number) => Status,
    blockSizes: ReadonlyMap<string, number> = new Map(),
    gas: 'read' | 'deferred' = 'read',
  ): Promise<Writes> {
    const positions = positionsOfRows(rows, statusOf)
    const known = await knownTransactions(context.pool, chainId, [...positions.keys()])
    const missing = [...positions.keys()].filter((hash) => !known.has(hash))
    const { transactions, blockSizes: readSizes } = await fetchForLogs(missing, positions, blockSizes)
    const decoded: TransactionAttribution[] = []
    transactions.forEach((tx, i) => {
      const hash = missing[i]!
      // A deposit's logs are indexed, but it is no user transaction: neither stored nor attributed.
      if (tx?.deposit) positions.delete(hash)
      else if (tx) decoded.push(tx)
      // A canonical log's transaction must exist: a lagging node is asked again (the caller retries), never skipped.
      else if (positions.get(hash)!.status !== 'pending') throw new Error(`node has no transaction ${hash} behind a stored log`)
      // A pre-confirmed transaction the node no longer knows was dropped: it is not attributed.
      else logger.debug({ tx_hash: hash }, 'pending transaction not found for attribution')
    })
    return prepare(decoded, positions, known, new Map([...blockSizes, ...readSizes]), gas === 'deferred' ? 'deferred' : new Map())
  }

  /**
   * Blocks with every transaction by number (`eth_getBlockByNumber(n, true)` in batches of about
   * `BATCH_SIZE` transactions where `sizeOf` knows how many a block holds), each turned by `read` as its
   * batch arrives so the node's objects die young.
   */
  async function readBlocks<B>(
    numbers: readonly number[],
    read: (block: BlockWithTransactions) => B,
    sizeOf: (n: number) => number | undefined = () => undefined,
  ): Promise<B[]> {
    return inSlices(
      numbers,
      BATCH_SIZE,
      BATCHES_IN_FLIGHT,
      async (slice) => (await getBlocksWithTransactions(rpc, slice)).map((block, i) => read(block ?? missingBlock(slice[i]!))),
      (n) => blockWeight(sizeOf(n)),
    )
  }

  /** A block read with its transactions, each attributed from its input. */
  function decodeBlock(block: FetchedBlock): AttributedBlock {
    return {
      number: block.number,
      hash: block.hash,
      parentHash: block.parentHash,
      timestamp: block.timestamp,
      timestampMs: block.timestampMs ?? null,
      transactions: block.transactions.map((tx) => attributeTransaction(tx, chainId)),
    }
  }

  /** Blocks read by number, with every transaction decoded. */
  async function fetchBlocks(numbers: readonly number[]): Promise<AttributedBlock[]> {
    return readBlocks(numbers, decodeBlock)
  }

  /** Decodes blocks read with their transactions (`eth_getBlockByNumber(n, true)`) by someone else, e.g. the head follower. */
  function decodeBlocks(blocks: readonly FetchedBlock[]): AttributedBlock[] {
    return blocks.map(decodeBlock)
  }

  /** Attributed transactions of decoded blocks: the gas used attribution will want, for a caller that reads receipts with its other calls. */
  function gasWanted(blocks: readonly AttributedBlock[]): string[] {
    return blocks.flatMap((block) => block.transactions.filter((tx) => tx.entries.length > 0).map((tx) => tx.hash))
  }

  /**
   * Prepares the attribution of blocks already read whole and decoded (`decodeBlocks`), with no
   * transaction asked again: in `blocks` scope every transaction, in `logs` scope those behind `rows`
   * (which must be logs of these very blocks). `gasRead` holds gas used the caller already read.
   */
  async function forFetched(
    blocks: readonly AttributedBlock[],
    rows: readonly TransactionRow[],
    statusOf: (blockNumber: number) => Status,
    gasRead: ReadonlyMap<string, number> = new Map(),
  ): Promise<Writes> {
    blocksOfRows([...blocks], rows)
    if (context.scope === 'blocks') return forBlocks(blocks, statusOf, gasRead)
    const positions = positionsOfRows(rows, statusOf)
    // A deposit's logs are indexed, but it is no user transaction: neither stored nor attributed.
    for (const block of blocks) for (const tx of block.transactions) if (tx.deposit) positions.delete(tx.hash)
    const known = await knownTransactions(context.pool, chainId, [...positions.keys()])
    const decoded = blocks.flatMap((block) => block.transactions.filter((tx) => positions.has(tx.hash) && !known.has(tx.hash)))
    const found = new Set(decoded.map((tx) => tx.hash))
    const lost = [...positions.keys()].find((hash) => !known.has(hash) && !found.has(hash))
    if (lost) throw new Error(`transaction ${lost} behind a log is not in its block as read; reading again`)
    return prepare(decoded, positions, known, new Map(blocks.map((block) => [block.hash, block.transactions.length])), gasRead)
  }

  /** Prepares the attribution of every transaction of `blocks` (`ATTRIBUTION_SCOPE=blocks`). */
  async function forBlocks(
    blocks: readonly AttributedBlock[],
    statusOf: (blockNumber: number) => Status,
    gasRead?: ReadonlyMap<string, number> | 'deferred',
  ): Promise<Writes> {
    const positions = new Map<string, TransactionPosition>()
    for (const block of blocks) {
      block.transactions.forEach((tx, transactionIndex) => {
        if (tx.deposit) return
        positions.set(tx.hash, {
          hash: tx.hash,
          blockNumber: block.number,
          blockHash: block.hash,
          blockTimestamp: block.timestamp,
          blockTimestampMs: block.timestampMs,
          transactionIndex,
          status: statusOf(block.number),
        })
      })
    }
    // Only a transaction with a suffix or codes can lack a stored part (gas used, a delegate, a
    // registry answer) or count as new: any other goes in as fresh, and if it is stored already (first
    // seen pending, or a range read again) it only moves, by upsertTransactions' ON CONFLICT. At Base's
    // density this asks the database for 2 % of the hashes instead of all of them.
    const worthAsking = blocks.flatMap((block) =>
      block.transactions.filter((tx) => tx.hasSuffix || tx.entries.length > 0 || tx.eip7702).map((tx) => tx.hash),
    )
    const known = await knownTransactions(context.pool, chainId, worthAsking)
    return prepare(
      blocks.flatMap((block) => block.transactions),
      positions,
      known,
      new Map(blocks.map((block) => [block.hash, block.transactions.length])),
      gasRead,
    )
  }

  /**
   * Prepares the attribution of every transaction of every block of `range`, logs or not (`blocks`
   * scope); `rows` are the range's logs.
   */
  async function forRange(
    [from, to]: Interval,
    rows: readonly TransactionRow[],
    statusOf: (blockNumber: number) => Status,
    headers: ReadonlyMap<number, string> = new Map(),
    gas: 'read' | 'deferred' = 'read',
  ): Promise<Writes> {
    const blocks = await fetchBlocks(Array.from({ length: to - from + 1 }, (_, i) => from + i))
    // Blocks without logs too: a backend lagging on an old fork must not have its blocks attributed beside the headers stored.
    const stray = blocks.find((block) => headers.has(block.number) && headers.get(block.number) !== block.hash)
    if (stray) throw new Error(`block ${stray.number} (${stray.hash}) read whole is not the header read for the range; reading again`)
    return forBlocks(blocksOfRows(blocks, rows), statusOf, gas === 'deferred' ? 'deferred' : undefined)
  }

  /**
   * The attribution of a stored range: in `logs` scope the transactions behind `rows`, in `blocks`
   * scope every transaction of every block of `range`. `blockSizes`: transactions per block hash where
   * known exactly (headers read with the range); `headers`: the hash of each unfinalized block as its header was read.
   */
  function attribute(
    rows: readonly TransactionRow[],
    statusOf: (blockNumber: number) => Status,
    range: Interval,
    blockSizes?: ReadonlyMap<string, number>,
    headers?: ReadonlyMap<number, string>,
  ): Promise<Writes> {
    const gas = context.deferRangeGas ? 'deferred' : 'read'
    return context.scope === 'blocks' ? forRange(range, rows, statusOf, headers, gas) : forLogs(rows, statusOf, blockSizes, gas)
  }

  return { attribute, forLogs, forRange, forFetched, decodeBlocks, gasWanted }
}
