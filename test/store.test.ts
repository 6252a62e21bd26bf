import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { upsertAttributions, upsertTransactions, type TransactionDecodeRow, type TransactionPosition } from '../src/store/attributions.js'
import {
  getIntervals,
  prepareLogs,
  storeLogChunk,
  toLogRows,
  updateChainState,
  withTransaction,
  type LogInput,
} from '../src/store/index.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'
import { decodedTransaction } from './helpers/transactions.js'

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const log = (block: number, tx: number, index: number, overrides: Partial<LogInput> = {}): LogInput => ({
  address: '0x00000000000000000000000000000000000000AA',
  topics: [hash(0xabc)],
  data: '0x',
  blockNumber: `0x${block.toString(16)}`,
  blockHash: hash(block + 1_000_000),
  blockTimestamp: `0x${(1_700_000_000 + block).toString(16)}`,
  transactionHash: hash(block * 100 + tx),
  transactionIndex: `0x${tx.toString(16)}`,
  logIndex: `0x${index.toString(16)}`,
  ...overrides,
})

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

describe('storeLogChunk', () => {
  it('stores a range once, merges sync intervals and keeps overlapping ranges free of duplicates', async () => {
    const chainId = 31337
    const first = toLogRows([log(5, 0, 0), log(5, 0, 1), log(7, 1, 0)])
    expect(first.map((row) => row.txLogOrdinal)).toEqual([0, 1, 0])
    const stored = await storeLogChunk(db.store.pool, {
      chainId,
      filterId: 'all',
      range: [0, 9],
      logs: prepareLogs(first, chainId, 6),
      finalizedBlock: 6,
    })
    expect(stored).toEqual({ stored: true, inserted: 3 })

    const again = await storeLogChunk(db.store.pool, {
      chainId,
      filterId: 'all',
      range: [0, 9],
      logs: prepareLogs(first, chainId, 6),
      finalizedBlock: 6,
    })
    expect(again).toEqual({ stored: false, inserted: 0 })

    // An overlapping range for another filter meets rows already there: only the new one is added.
    const overlapping = toLogRows([log(7, 1, 0), log(12, 0, 0)])
    const other = await storeLogChunk(db.store.pool, {
      chainId,
      filterId: 'other',
      range: [7, 12],
      logs: prepareLogs(overlapping, chainId, 6),
      finalizedBlock: 6,
    })
    expect(other).toEqual({ stored: true, inserted: 1 })

    await storeLogChunk(db.store.pool, { chainId, filterId: 'all', range: [10, 19], logs: prepareLogs([], chainId, 6), finalizedBlock: 6 })
    expect(await getIntervals(db.store.pool, chainId, 'all')).toEqual([[0, 19]])

    const { rows } = await db.store.pool.query(
      `SELECT block_number, log_index, status, topics, removed, block_timestamp FROM analytics.logs ORDER BY block_number, log_index`,
    )
    expect(rows.map((row) => [row.block_number, row.log_index, row.status])).toEqual([
      [5, 0, 'finalized'],
      [5, 1, 'finalized'],
      [7, 0, 'confirmed'],
      [12, 0, 'confirmed'],
    ])
    expect(rows[0].topics).toEqual([hash(0xabc)])
    expect(rows[0].removed).toBe(false)
    expect(rows[0].block_timestamp.getTime()).toBe((1_700_000_000 + 5) * 1000)
    const blocks = await db.store.pool.query(`SELECT number, status FROM blocks ORDER BY number`)
    expect(blocks.rows).toEqual([
      { number: 5, status: 'finalized' },
      { number: 7, status: 'confirmed' },
      { number: 12, status: 'confirmed' },
    ])
  })

  it('stores a chunk of several COPY pieces whole, every row as the node served it', async () => {
    const chainId = 31338
    const logs = Array.from({ length: 4_501 }, (_, i) =>
      log(100 + Math.floor(i / 10), i % 10, i % 10, {
        topics: Array.from({ length: i % 5 }, (_, k) => hash(i * 10 + k)),
        data: `0x${'ab'.repeat(i % 40)}`,
      }),
    )
    const stored = await storeLogChunk(db.store.pool, {
      chainId,
      filterId: 'all',
      range: [100, 550],
      logs: prepareLogs(toLogRows(logs), chainId, 200),
      finalizedBlock: 200,
    })
    expect(stored).toEqual({ stored: true, inserted: 4_501 })
    const { rows } = await db.store.pool.query(
      `SELECT block_number, log_index, topics, data, status FROM analytics.logs WHERE chain_id = $1 ORDER BY block_number, log_index`,
      [chainId],
    )
    expect(rows).toHaveLength(4_501)
    rows.forEach((row, i) => {
      expect(row).toEqual({
        block_number: 100 + Math.floor(i / 10),
        log_index: i % 10,
        topics: Array.from({ length: i % 5 }, (_, k) => hash(i * 10 + k)),
        data: `0x${'ab'.repeat(i % 40)}`,
        status: 100 + Math.floor(i / 10) <= 200 ? 'finalized' : 'confirmed',
      })
    })
  })
})

describe('a range job that commits after finality passed its blocks', () => {
  it('stores the rows of blocks finality has passed since it read the finalized block as finalized', async () => {
    const chainId = 777
    // The job read finalized = 5; by its commit the follower has moved finality to 8.
    await updateChainState(db.store.pool, chainId, { finalizedBlock: 8 })
    const rows = toLogRows([log(4, 0, 0), log(6, 0, 0), log(8, 0, 0), log(9, 0, 0)])
    await storeLogChunk(db.store.pool, { chainId, filterId: 'all', range: [0, 9], logs: prepareLogs(rows, chainId, 5), finalizedBlock: 5 })
    const { rows: stored } = await db.store.pool.query(`SELECT block_number, status FROM logs WHERE chain_id = $1 ORDER BY block_number`, [
      chainId,
    ])
    expect(stored.map((row) => [row.block_number, row.status])).toEqual([
      [4, 'finalized'],
      [6, 'finalized'],
      [8, 'finalized'],
      [9, 'confirmed'],
    ])
  })
})

describe('transactions and attributions', () => {
  it('go in by COPY with every odd character intact, and move by the upsert once they are stored', async () => {
    const chainId = 31339
    const codes = ['plain', 'quo"te', 'com,ma', 'back\\slash', 'tab\there', '{brace}', 'NULL', 'ünï']
    const decoded: TransactionDecodeRow = {
      hash: hash(0xfeed),
      from: '0x00000000000000000000000000000000000000f1',
      to: null,
      inputSize: 42,
      hasSuffix: true,
      schemaId: 2,
      codes,
      registryAddress: '0x00000000000000000000000000000000000000f2',
      registryChainId: '8453',
      registryVerified: null,
      registryUnverifiedReason: 'chain_not_configured',
      cbor: { note: 'line\none\ttab "quoted" \\', list: [1, 'two'] },
      malformedReason: 'reason with\ttab\nand newline \\N',
      userOperations: 0,
    }
    const at = (blockNumber: number, status: 'confirmed' | 'pending'): Map<string, TransactionPosition> =>
      new Map([
        [
          decoded.hash,
          {
            hash: decoded.hash,
            blockNumber,
            blockHash: hash(blockNumber),
            blockTimestamp: 1_700_000_000 + blockNumber,
            transactionIndex: 3,
            status,
          },
        ],
      ])
    const entries = codes.map((builderCode, codeIndex) => ({
      txHash: decoded.hash,
      userOpHash: '',
      builderCode,
      codeIndex,
      role: null,
      registry: null,
      sender: decoded.from,
      schemaId: 2,
      codes,
      from: decoded.from,
      to: null,
    }))
    const store = (positions: Map<string, TransactionPosition>, gasUsed: Map<string, number>) =>
      withTransaction(db.store.pool, async (client) => {
        await upsertTransactions(client, chainId, [decoded], positions, gasUsed)
        await upsertAttributions(client, chainId, entries, positions, gasUsed)
      })
    const read = async () => ({
      tx: (
        await db.store.pool.query(
          `SELECT block_number, to_address, codes, registry_chain_id::text, registry_verified, cbor, malformed_reason, gas_used, status,
             extract(epoch FROM block_timestamp)::int AS ts FROM transactions WHERE chain_id = $1`,
          [chainId],
        )
      ).rows,
      attributions: (
        await db.store.pool.query(
          `SELECT builder_code, block_number, gas_used, codes FROM attributions WHERE chain_id = $1 ORDER BY code_index`,
          [chainId],
        )
      ).rows,
    })

    await store(at(7, 'pending'), new Map())
    const first = await read()
    expect(first.tx).toEqual([
      {
        block_number: 7,
        to_address: null,
        codes,
        registry_chain_id: '8453',
        registry_verified: null,
        cbor: decoded.cbor,
        malformed_reason: decoded.malformedReason,
        gas_used: null,
        status: 'pending',
        ts: 1_700_000_007,
      },
    ])
    expect(first.attributions).toEqual(codes.map((builderCode) => ({ builder_code: builderCode, block_number: 7, gas_used: null, codes })))

    // Stored already: the COPY meets the rows and the upsert moves them to the confirmed block instead.
    await store(at(9, 'confirmed'), new Map([[decoded.hash, 21_000]]))
    const moved = await read()
    expect(moved.tx).toEqual([{ ...first.tx[0], block_number: 9, gas_used: 21_000, status: 'confirmed', ts: 1_700_000_009 }])
    expect(moved.attributions).toEqual(
      codes.map((builderCode) => ({ builder_code: builderCode, block_number: 9, gas_used: 21_000, codes })),
    )
  })
  it('store every column as written, numeric chain ids of up to 32 bytes and empty code lists included', async () => {
    const chainId = 31340
    const row = (n: number, overrides: Partial<TransactionDecodeRow>): TransactionDecodeRow =>
      decodedTransaction(hash(0xbeef00 + n), {
        from: '0x00000000000000000000000000000000000000f1',
        to: '0x00000000000000000000000000000000000000f3',
        inputSize: 70_000 + n,
        userOperations: n,
        ...overrides,
      })
    const chainIds = ['0', '1', '10000', '100000000', '123456789012', String(2n ** 256n - 1n)]
    const rows = [
      row(0, {}),
      row(1, { hasSuffix: true, schemaId: 0, codes: [] }),
      ...chainIds.map((registryChainId, i) =>
        row(2 + i, {
          hasSuffix: true,
          schemaId: 1,
          codes: ['a'],
          registryAddress: '0x00000000000000000000000000000000000000f2',
          registryChainId,
          registryVerified: i % 3 === 2 ? null : i % 2 === 0,
          registryUnverifiedReason: i % 3 === 2 ? 'node_error' : null,
        }),
      ),
    ]
    const positions = new Map(
      rows.map((r, i): [string, TransactionPosition] => [
        r.hash,
        {
          hash: r.hash,
          blockNumber: 2 ** 40 + i,
          blockHash: hash(i),
          blockTimestamp: 1_700_000_000 + i,
          transactionIndex: i,
          status: 'finalized',
        },
      ]),
    )
    await withTransaction(db.store.pool, (client) =>
      upsertTransactions(client, chainId, rows, positions, new Map([[rows[0]!.hash, 2 ** 40]])),
    )
    const { rows: stored } = await db.store.pool.query(
      `SELECT hash, block_number, block_hash, extract(epoch FROM block_timestamp)::int AS ts, transaction_index, from_address, to_address, input_size,
         has_suffix, schema_id, codes, registry_address, registry_chain_id::text, registry_verified, registry_unverified_reason, cbor, malformed_reason, user_operations, gas_used, status
       FROM transactions WHERE chain_id = $1 ORDER BY transaction_index`,
      [chainId],
    )
    expect(stored).toEqual(
      rows.map((r, i) => ({
        hash: r.hash,
        block_number: 2 ** 40 + i,
        block_hash: hash(i),
        ts: 1_700_000_000 + i,
        transaction_index: i,
        from_address: r.from,
        to_address: r.to,
        input_size: r.inputSize,
        has_suffix: r.hasSuffix,
        schema_id: r.schemaId,
        codes: r.codes,
        registry_address: r.registryAddress,
        registry_chain_id: r.registryChainId,
        registry_verified: r.registryVerified,
        registry_unverified_reason: r.registryUnverifiedReason,
        cbor: null,
        malformed_reason: null,
        user_operations: r.userOperations,
        gas_used: i === 0 ? 2 ** 40 : null,
        status: 'finalized',
      })),
    )
  })
})
