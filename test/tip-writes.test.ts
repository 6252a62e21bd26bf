import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPendingPoller } from '../src/sync/pendingPoller.js'
import { createPendingLogBuffer } from '../src/sync/subscription.js'
import { lockTipWrites, toLogRows, upsertPendingLogs, updateChainState, ZERO_HASH, type LogInput } from '../src/store/index.js'
import { createLogger } from '../src/internal/logger.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const pendingLog = (tx: number, logIndex: number, block = 10): LogInput => ({
  address: '0x00000000000000000000000000000000000000aa',
  topics: [hash(0xabc)],
  data: `0x${logIndex.toString(16).padStart(2, '0')}`,
  blockNumber: `0x${block.toString(16)}`,
  blockHash: ZERO_HASH,
  blockTimestamp: '0x6553f100',
  transactionHash: hash(tx),
  transactionIndex: '0x0',
  logIndex: `0x${logIndex.toString(16)}`,
})

let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  await db?.drop()
})

async function pendingRows(tx: number) {
  const { rows } = await db.store.pool.query(
    `SELECT tx_log_ordinal AS ordinal, log_index AS "logIndex", status, removed FROM logs WHERE transaction_hash = $1 ORDER BY tx_log_ordinal`,
    [hash(tx)],
  )
  return rows
}

describe('pending identity', () => {
  it('keeps one row per log when a transaction’s pendingLogs notifications are split across flushes (defect: ordinals restarted per batch)', async () => {
    const poller = createPendingPoller({
      pool: db.store.pool,
      logger: createLogger('silent'),
      chainId: CHAIN_ID,
      fetchPendingLogs: async () => ({ logs: [], head: 0 }),
    })
    const buffer = createPendingLogBuffer(16)
    buffer.add(pendingLog(1, 4))
    await poller.store(buffer.take())
    buffer.add(pendingLog(1, 5))
    buffer.add(pendingLog(1, 6))
    await poller.store(buffer.take())
    expect(await pendingRows(1)).toEqual([
      { ordinal: 0, logIndex: 4, status: 'pending', removed: false },
      { ordinal: 1, logIndex: 5, status: 'pending', removed: false },
      { ordinal: 2, logIndex: 6, status: 'pending', removed: false },
    ])
    // The poll answers the whole transaction: same identities, nothing added.
    await poller.store([pendingLog(1, 4), pendingLog(1, 5), pendingLog(1, 6)])
    expect(await pendingRows(1)).toHaveLength(3)
  })

  it('retries a failed pending attribution with backoff, then gives up on it', async () => {
    const calls: string[][] = []
    let failuresLeft = 2
    const poller = createPendingPoller({
      pool: db.store.pool,
      logger: createLogger('silent'),
      chainId: CHAIN_ID,
      fetchPendingLogs: async () => ({ logs: [], head: 0 }),
      attributePending: async (rows) => {
        calls.push(rows.map((row) => row.transactionHash))
        if (failuresLeft-- > 0) throw new Error('connection refused')
      },
    })
    await poller.store([pendingLog(21, 0), pendingLog(22, 0)])
    await poller.settled()
    // Two failures, then the same transactions attributed.
    expect(calls.map((hashes) => [...hashes].sort())).toEqual([0, 1, 2].map(() => [hash(21), hash(22)]))

    // A batch that keeps failing is dropped after its attempts, and the poller goes on.
    failuresLeft = Number.POSITIVE_INFINITY
    calls.length = 0
    await poller.store([pendingLog(23, 0)])
    await poller.settled()
    expect(calls).toEqual([[hash(23)], [hash(23)], [hash(23)], [hash(23)]])
  })

  it('bounds what the subscription holds, forgetting the oldest transactions first', () => {
    const buffer = createPendingLogBuffer(2)
    for (let tx = 1; tx <= 5; tx++) buffer.add(pendingLog(tx, 0))
    expect(buffer.take().map((log) => log.transactionHash)).toEqual([hash(4), hash(5)])
    expect(buffer.hasChanges()).toBe(false)
    // A transaction seen in a newer pending block starts over there.
    buffer.add(pendingLog(5, 1, 11))
    expect(buffer.take().map((log) => [log.blockNumber, log.logIndex])).toEqual([['0xb', '0x1']])
  })
})

describe('tip writes and pending polls', () => {
  it('a pending poll racing a tip commit never re-inserts a pending twin of the transaction just confirmed (defect: no lock between them)', async () => {
    const chainId = 4242
    await updateChainState(db.store.pool, chainId, { liveBlock: 9, liveHash: hash(9) })
    const rows = toLogRows([pendingLog(7, 0)])
    await upsertPendingLogs(db.store.pool, chainId, rows)

    // A tip commit is half done: it holds the chain's tip lock, has claimed the pending row as the
    // confirmed log of block 10, recorded the transaction and moved the live block, and not committed.
    const tip = await db.store.pool.connect()
    await tip.query('BEGIN')
    await lockTipWrites(tip, chainId)
    await tip.query(`UPDATE logs SET status = 'confirmed', block_hash = $3 WHERE chain_id = $1 AND transaction_hash = $2`, [
      chainId,
      hash(7),
      hash(0x10),
    ])
    await tip.query(
      `INSERT INTO transactions (chain_id, hash, block_number, block_hash, block_timestamp, transaction_index, from_address, input_size, has_suffix, status)
       VALUES ($1, $2, 10, $3, now(), 0, '0x00000000000000000000000000000000000000bb', 4, false, 'confirmed')`,
      [chainId, hash(7), hash(0x10)],
    )
    await tip.query(`UPDATE chain_state SET live_block = 10 WHERE chain_id = $1`, [chainId])
    // The poll's answer still has the transaction as pending; it lands while the tip commit is in flight.
    const polled = upsertPendingLogs(db.store.pool, chainId, rows)
    await new Promise((resolve) => setTimeout(resolve, 200))
    await tip.query('COMMIT')
    tip.release()
    await polled

    const { rows: after } = await db.store.pool.query(
      `SELECT status, block_hash AS "blockHash", removed FROM logs WHERE chain_id = $1 AND transaction_hash = $2 ORDER BY status`,
      [chainId, hash(7)],
    )
    expect(after).toEqual([{ status: 'confirmed', blockHash: hash(0x10), removed: false }])
  })

  it('serves the reorg, orphan and pending-drop queries from indexes however long the history (defect: scans that grow with history)', async () => {
    const client = await db.store.pool.connect()
    try {
      await client.query('BEGIN')
      // A long history: many dropped pending rows (terminal) and confirmed rows, a few live pending ones.
      await client.query(
        `INSERT INTO logs (chain_id, block_number, block_hash, block_timestamp, transaction_hash, transaction_index, log_index, tx_log_ordinal,
           address, data, status, removed)
         SELECT 1, n, CASE WHEN n % 2 = 0 THEN $1 ELSE lpad(to_hex(n), 66, '0x0') END, now(), lpad(to_hex(n), 66, '0x0'), 0, 0, 0, '0xaa', '0x',
           CASE WHEN n % 2 = 0 THEN 'pending' ELSE 'confirmed' END, n % 2 = 0 AND n < 19990
         FROM generate_series(1, 20000) AS n`,
        [ZERO_HASH],
      )
      await client.query('ANALYZE logs')
      // logs is partitioned: each partition's index is named after the index of logs it belongs to.
      const { rows: indexes } = await client.query<{ partition: string; parent: string }>(
        `SELECT c.relname AS partition, p.relname AS parent FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           JOIN pg_class p ON p.oid = i.inhparent WHERE c.relkind = 'i' ORDER BY length(c.relname) DESC`,
      )
      const plan = async (sql: string, params: unknown[]) =>
        indexes.reduce(
          (text, { partition, parent }) => text.replaceAll(`using ${partition} `, `using ${parent} `),
          (await client.query(`EXPLAIN ${sql}`, params)).rows.map((row) => row['QUERY PLAN']).join('\n'),
        )
      // Dropping pending rows at a new block reads only live pending rows.
      expect(
        await plan(
          `UPDATE logs SET removed = true WHERE chain_id = $1 AND status = 'pending' AND NOT removed AND block_number <= $2`,
          [1, 10],
        ),
      ).toMatch(/logs_live_pending/)
      // Orphan marks are keyed by (number, hash), which the block-led unique key serves.
      expect(
        await plan(
          `UPDATE logs t SET removed = true FROM unnest($2::bigint[], $3::text[]) AS o(number, hash)
           WHERE t.chain_id = $1 AND t.block_number = o.number AND t.block_hash = o.hash AND status <> 'pending' AND NOT t.removed`,
          [1, [5], [hash(5)]],
        ),
      ).toMatch(/logs_canonical_key/)
      await client.query('ROLLBACK')
    } finally {
      client.release()
    }
  })
})
