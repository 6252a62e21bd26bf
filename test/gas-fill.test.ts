/**
 * Gas used off the range job's critical path: a range job stores attributions without it and queues
 * a gas fill, which reads the receipts and stores gas used only where the row is still in the receipt's
 * block; a row a reorg moved is left to the repair path, whose range job queues a fill of its own.
 */
import { Attribution } from 'ox/erc8021'
import type { Address, Hash, Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { silentLogger } from '../src/internal/logger.js'
import { createGasWorker } from '../src/queue/index.js'
import { gasUsedMissing, withTransaction } from '../src/store/index.js'
import { markBlocksRemoved, takeOutOfIntervals } from '../src/store/reorgs.js'
import { planBackfill } from '../src/sync/historical.js'
import { sweepOwedGas } from '../src/sync/gasFill.js'
import { createIndexer } from '../src/indexer.js'
import { artifacts, deployContract, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { waitFor } from './helpers/compare.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
let anvil: Anvil
let db: TestDatabase
let indexer: Awaited<ReturnType<typeof createIndexer>>
let emitter: Address
let seq = 0
let redisPrefix: string

beforeAll(async () => {
  anvil = await startAnvil()
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  redisPrefix = redis.prefix
  cleanups.push(
    () => anvil.stop(),
    () => db.drop(),
    () => redis.cleanup(),
  )
  emitter = await deployContract(anvil.url, artifacts.Emitter)
  const config = loadConfig({ RPC_URL: anvil.url, DATABASE_URL: db.url, REDIS_URL, REDIS_PREFIX: redis.prefix, LOG_LEVEL: 'silent' })
  indexer = await createIndexer(config, silentLogger)
  cleanups.push(() => indexer.close())
}, 60_000)

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

/** A signed call of the Emitter (two logs) from anvil account `from`, with a builder code suffix unless `code` is null. */
const emitCall = (from: number, code: string | null) =>
  rawSignedTx(anvil.url, {
    from,
    to: emitter,
    data: encodeEmitMany(2, (seq += 2), '0x'),
    ...(code ? { suffix: Attribution.toDataSuffix({ codes: [code] }) } : {}),
  })

async function mine(raw: Hex): Promise<{ hash: Hash; block: number; blockHash: string; gasUsed: number }> {
  const client = fixtureClient(anvil.url)
  const hash = await client.sendRawTransaction({ serializedTransaction: raw })
  const receipt = await client.waitForTransactionReceipt({ hash })
  return { hash, block: Number(receipt.blockNumber), blockHash: receipt.blockHash, gasUsed: Number(receipt.gasUsed) }
}

async function storeRange(block: number): Promise<void> {
  const plan = await planBackfill(indexer.store.pool, {
    chainId: indexer.chainId,
    filter: indexer.filter,
    range: [block, block],
    chunkBlocks: 1_000,
  })
  for (const job of plan.jobs) await indexer.processRange(job)
}

async function gasOf(hash: string) {
  const { rows } = await db.store.pool.query<{ tx: string | null; attribution: string | null; block_hash: string; rollup: string }>(
    `SELECT t.gas_used AS tx, a.gas_used AS attribution, a.block_hash,
       (SELECT coalesce(sum(gas_used), 0) FROM builder_code_buckets b WHERE b.builder_code = a.builder_code AND b.bucket = 'day') AS rollup
     FROM transactions t JOIN attributions a ON a.chain_id = t.chain_id AND a.tx_hash = t.hash WHERE t.hash = $1 AND NOT a.removed`,
    [hash],
  )
  const row = rows[0]!
  return {
    tx: row.tx === null ? null : Number(row.tx),
    attribution: row.attribution === null ? null : Number(row.attribution),
    blockHash: row.block_hash,
    rollup: Number(row.rollup),
  }
}

/** Runs a gas worker until the queue holds no fill. */
async function runQueuedFills(): Promise<void> {
  const worker = createGasWorker({
    redisUrl: REDIS_URL,
    prefix: redisPrefix,
    lockDurationMs: 30_000,
    logger: silentLogger,
    process: indexer.fillGas,
  })
  try {
    await waitFor(async () => (await indexer.gasQueue.pending()) === 0, 'the gas fill to run', 30_000)
  } finally {
    await worker.close()
  }
}

describe('the gas fill', () => {
  it('fills gas used after the range job, through its queued job', async () => {
    const mined = await mine(await emitCall(1, 'gas_after_range'))
    await storeRange(mined.block)
    // The range job stored the attribution without reading a receipt, and queued the fill.
    expect(await gasOf(mined.hash)).toMatchObject({ tx: null, attribution: null, rollup: 0 })
    expect(await gasUsedMissing(db.store.pool, indexer.chainId)).toBe(1)
    expect(await indexer.gasQueue.pending()).toBe(1)

    await runQueuedFills()
    expect(await gasOf(mined.hash)).toEqual({
      tx: mined.gasUsed,
      attribution: mined.gasUsed,
      blockHash: mined.blockHash,
      rollup: mined.gasUsed,
    })
    expect(await gasUsedMissing(db.store.pool, indexer.chainId)).toBe(0)
  }, 60_000)

  it('leaves a row a reorg moved to the repair path, whose range job fills it from the new block', async () => {
    const client = fixtureClient(anvil.url)
    const raw = await emitCall(2, 'gas_after_reorg')
    const before = await mine(raw)
    await storeRange(before.block)
    expect((await gasOf(before.hash)).tx).toBeNull()

    // The block is replaced by one holding another call first and then the same transaction.
    const other = await emitCall(3, null)
    await client.request({
      method: 'anvil_reorg' as never,
      params: [
        1,
        [
          [other, 0],
          [raw, 0],
        ],
      ] as never,
    })
    const receipt = await client.getTransactionReceipt({ hash: before.hash })
    expect(receipt.blockHash).not.toBe(before.blockHash)
    expect(Number(receipt.blockNumber)).toBe(before.block)

    // The stored row still names the old block: the new block's receipt is not its gas.
    expect(await indexer.fillGas({ chainId: indexer.chainId, fromBlock: before.block, toBlock: before.block })).toEqual({
      filled: 0,
      left: 1,
    })
    expect(await gasOf(before.hash)).toMatchObject({ tx: null, attribution: null, blockHash: before.blockHash })

    // The repair path: the old block's rows removed and its range read again, which queues a fill.
    await withTransaction(indexer.store.pool, async (tx) => {
      await markBlocksRemoved(tx, indexer.chainId, [{ number: before.block, hash: before.blockHash }])
      await takeOutOfIntervals(tx, indexer.chainId, [[before.block, before.block]])
    })
    const pendingBefore = await indexer.gasQueue.pending()
    await storeRange(before.block)
    expect(await indexer.gasQueue.pending()).toBe(pendingBefore + 1)
    expect(await indexer.fillGas({ chainId: indexer.chainId, fromBlock: before.block, toBlock: before.block })).toEqual({
      filled: 1,
      left: 0,
    })
    const after = await gasOf(before.hash)
    expect(after).toMatchObject({ tx: Number(receipt.gasUsed), attribution: Number(receipt.gasUsed), blockHash: receipt.blockHash })
    expect(after.rollup).toBe(Number(receipt.gasUsed))
  }, 60_000)

  it('queues a fill again for rows whose fill was lost with Redis', async () => {
    const mined = await mine(await emitCall(4, 'gas_lost_fill'))
    await storeRange(mined.block)
    expect(await indexer.gasQueue.pending()).toBeGreaterThan(0)
    // Redis loses the queued fill (a restart without persistence, a flush).
    await indexer.gasQueue.queue.obliterate({ force: true })
    expect(await indexer.gasQueue.pending()).toBe(0)
    expect(await gasUsedMissing(db.store.pool, indexer.chainId)).toBe(1)

    const sweep = () => sweepOwedGas({ pool: db.store.pool, chainId: indexer.chainId, gasQueue: indexer.gasQueue, logger: silentLogger })
    expect(await sweep()).toEqual([mined.block, mined.block])
    // A fill on its way: the next sweep queues nothing more.
    expect(await sweep()).toBeNull()
    await runQueuedFills()
    expect(await gasOf(mined.hash)).toMatchObject({ tx: mined.gasUsed, attribution: mined.gasUsed })
    expect(await gasUsedMissing(db.store.pool, indexer.chainId)).toBe(0)
    expect(await sweep()).toBeNull()
  }, 60_000)
})
