/**
 * A range job that read the old fork must not move a transaction the index holds canonical in another
 * block onto the old fork's block: the tip orphans that block later, and the repair of its height reads
 * the new fork there, where the transaction is not, so the transaction and its attributions would stay
 * removed for good while its logs stay live in the block it really is in.
 */
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { prepareLogs, storeLogChunk, storeTipBlocks, toLogRows } from '../src/store/index.js'
import { StaleForkError } from '../src/store/chunks.js'
import { upsertAttributions, upsertTransactions, type TransactionPosition } from '../src/store/attributions.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'
import { decodedTransaction } from './helpers/transactions.js'

const CHAIN = 8453
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
/** Block `n` of fork `fork`. */
const header = (n: number, fork: number) => ({
  number: n,
  hash: hash(fork * 1_000 + n),
  parentHash: hash(fork * 1_000 + n - 1),
  timestamp: 1_700_000_000 + n,
})
const TX = hash(0x7777)
const SENDER = `0x${'aa'.repeat(20)}`
const EMITTER = `0x${'cc'.repeat(20)}`

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

/** The transaction's one log, in block `n` of `fork`. */
const logOf = (n: number, fork: number) =>
  toLogRows([
    {
      address: EMITTER,
      topics: [hash(0xabc)],
      data: '0x',
      blockNumber: n,
      blockHash: header(n, fork).hash,
      blockTimestamp: header(n, fork).timestamp,
      transactionHash: TX,
      transactionIndex: 0,
      logIndex: 0,
    },
  ])

/** What attribution writes for the transaction in block `n` of `fork`: its decode, its one attribution, both at that position. */
function attributionWrites(n: number, fork: number) {
  const position: TransactionPosition = {
    hash: TX,
    blockNumber: n,
    blockHash: header(n, fork).hash,
    blockTimestamp: header(n, fork).timestamp,
    transactionIndex: 0,
    status: 'confirmed',
  }
  const positions = new Map([[TX, position]])
  const gas = new Map([[TX, 21_000]])
  return async (client: pg.PoolClient) => {
    await upsertTransactions(
      client,
      CHAIN,
      [decodedTransaction(TX, { from: SENDER, to: EMITTER, inputSize: 40, hasSuffix: true, schemaId: 0, codes: ['bc_moved'] })],
      positions,
      gas,
    )
    await upsertAttributions(
      client,
      CHAIN,
      [
        {
          txHash: TX,
          userOpHash: '',
          builderCode: 'bc_moved',
          codeIndex: 0,
          role: null,
          registry: null,
          sender: SENDER,
          schemaId: 0,
          codes: ['bc_moved'],
          from: SENDER,
          to: EMITTER,
        },
      ],
      positions,
      gas,
    )
  }
}

const where = async () => ({
  transaction: (
    await db.store.pool.query(
      `SELECT block_number::int AS n, block_hash AS hash, removed FROM transactions WHERE chain_id = $1 AND hash = $2`,
      [CHAIN, TX],
    )
  ).rows,
  attributions: (
    await db.store.pool.query(
      `SELECT block_number::int AS n, block_hash AS hash, removed FROM attributions WHERE chain_id = $1 AND tx_hash = $2`,
      [CHAIN, TX],
    )
  ).rows,
})

describe('a stale range write against a transaction that moved in a reorg', () => {
  it('refuses to move a canonical transaction onto a block of the old fork above the follower, and the transaction survives the orphaning of that block', async () => {
    const pool = db.store.pool
    // The new fork: the transaction was re-included a block earlier, in block 9; the follower stored it there.
    await storeTipBlocks(pool, {
      chainId: CHAIN,
      filterId: 'f',
      blocks: [header(9, 2)],
      rows: logOf(9, 2),
      finalizedBlock: null,
      extraWrites: attributionWrites(9, 2),
    })
    const canonical = { n: 9, hash: header(9, 2).hash, removed: false }
    expect(await where()).toEqual({ transaction: [canonical], attributions: [canonical] })

    // A range job of another filter read block 10 of the old fork (the transaction in it) before the reorg, and commits now.
    const stale = storeLogChunk(pool, {
      chainId: CHAIN,
      filterId: 'g',
      range: [10, 10],
      logs: prepareLogs(logOf(10, 1), CHAIN, null),
      blocks: [header(10, 1)],
      finalizedBlock: null,
      extraWrites: attributionWrites(10, 1),
    })
    await expect(stale).rejects.toThrow(StaleForkError)
    expect(await where()).toEqual({ transaction: [canonical], attributions: [canonical] })

    // The follower stores block 10 of the new fork (without the transaction); the range job's retry reads it too.
    await storeTipBlocks(pool, { chainId: CHAIN, filterId: 'f', blocks: [header(10, 2)], rows: [], finalizedBlock: null })
    await storeLogChunk(pool, {
      chainId: CHAIN,
      filterId: 'g',
      range: [10, 10],
      logs: prepareLogs([], CHAIN, null),
      blocks: [header(10, 2)],
      finalizedBlock: null,
    })
    expect(await where()).toEqual({ transaction: [canonical], attributions: [canonical] })
    const { rows } = await pool.query(`SELECT block_number::int AS n, removed FROM logs WHERE chain_id = $1 AND transaction_hash = $2`, [
      CHAIN,
      TX,
    ])
    expect(rows).toEqual([{ n: 9, removed: false }])
  })

  it('still moves a transaction off a block the index holds as orphaned (a repair reading the new fork)', async () => {
    const pool = db.store.pool
    const other = hash(0x8888)
    await storeTipBlocks(pool, { chainId: CHAIN, filterId: 'f', blocks: [header(20, 1)], rows: [], finalizedBlock: null })
    await pool.query(
      `INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix, status, removed)
       VALUES ($1, $2, 20, $3, to_timestamp(0), 0, $4, 0, false, 'confirmed', true)`,
      [CHAIN, other, header(20, 1).hash, SENDER],
    )
    const moved = toLogRows([
      {
        address: EMITTER,
        topics: [hash(0xabc)],
        data: '0x',
        blockNumber: 21,
        blockHash: header(21, 1).hash,
        blockTimestamp: header(21, 1).timestamp,
        transactionHash: other,
        transactionIndex: 0,
        logIndex: 0,
      },
    ])
    const result = await storeLogChunk(pool, {
      chainId: CHAIN,
      filterId: 'g',
      range: [21, 21],
      logs: prepareLogs(moved, CHAIN, null),
      blocks: [header(21, 1)],
      finalizedBlock: null,
    })
    expect(result.stored).toBe(true)
  })
})
