/**
 * The repair runner against real PostgreSQL and BullMQ on Redis: a close racing a mark that re-opens
 * the same blocks, and repairs whose jobs keep failing.
 */
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRangeQueue, createRangeWorker, rangeJobId, type RangeQueue } from '../src/queue/index.js'
import { FatalError } from '../src/rpc/index.js'
import { lockForkMarks, recordRepairs, saveFilter, takeOutOfIntervals, withTransaction, type FilterRange } from '../src/store/index.js'
import { createRepairRunner } from '../src/reorg/repairRunner.js'
import { waitFor } from './helpers/compare.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
const OTHER = 'other-filter'
const cleanups: (() => Promise<unknown>)[] = []
let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
  cleanups.push(() => db.drop())
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

function capturingLogger() {
  const lines: { msg: string; [field: string]: unknown }[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  return { logger: pino({ level: 'debug' }, stream), lines }
}

async function reset(filterId: string, intervals: [number, number][], repair: [number, number]) {
  await db.store.pool.query('DELETE FROM sync_repairs; DELETE FROM sync_intervals')
  await saveFilter(db.store.pool, { chainId: CHAIN_ID, filterId, addresses: [], topics: [] })
  for (const [from, to] of intervals) {
    await db.store.pool.query('INSERT INTO sync_intervals (chain_id, filter_id, from_block, to_block) VALUES ($1, $2, $3, $4)', [
      CHAIN_ID,
      filterId,
      from,
      to,
    ])
  }
  await db.store.pool.query(
    `INSERT INTO sync_repairs (chain_id, filter_id, from_block, to_block, reason) VALUES ($1, $2, $3, $4, 'reorg')`,
    [CHAIN_ID, filterId, ...repair],
  )
}

async function repairRow(filterId: string, [from, to]: [number, number]) {
  const { rows } = await db.store.pool.query(
    `SELECT failures, last_error, retry_at, quarantined_at FROM sync_repairs WHERE chain_id = $1 AND filter_id = $2 AND from_block = $3 AND to_block = $4`,
    [CHAIN_ID, filterId, from, to],
  )
  return rows[0] as { failures: number; last_error: string | null; retry_at: Date | null; quarantined_at: Date | null } | undefined
}

describe('closing a repair', () => {
  it('a mark that re-opens the blocks between the coverage read and the close keeps the repair open', async () => {
    await reset(OTHER, [[0, 20]], [10, 20])
    const enqueued: FilterRange[] = []
    const runner = createRepairRunner({
      pool: db.store.pool,
      logger: pino({ level: 'silent' }),
      chainId: CHAIN_ID,
      followerFilterId: 'follower',
      chunkBlocks: 100,
      processRange: async () => ({ logs: 0, inserted: 0, stored: true }),
      enqueue: async (jobs) => enqueued.push(...jobs),
      failedJobs: async () => [],
    })

    // A reorg mark above block 9, as applyReorg makes it, held open while the runner reads the (still
    // complete) intervals; the row lock is the one its upsert of the same repair takes.
    const mark = await db.store.pool.connect()
    try {
      await mark.query('BEGIN')
      await lockForkMarks(mark, CHAIN_ID, 'mark')
      await mark.query('SELECT 1 FROM sync_repairs WHERE chain_id = $1 AND filter_id = $2 FOR UPDATE', [CHAIN_ID, OTHER])
      const taken = await takeOutOfIntervals(mark, CHAIN_ID, [[10, Number.MAX_SAFE_INTEGER]])
      expect(taken.get(OTHER)).toEqual([[10, 20]])
      await recordRepairs(mark, CHAIN_ID, OTHER, taken.get(OTHER)!, 'reorg')

      const running = runner.run()
      // The runner has read the intervals and now waits on the mark's locks to close the repair.
      await waitFor(
        async () =>
          (
            await db.store.pool.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rows[0].n > 0,
        'the runner to wait for the mark',
      )
      await mark.query('COMMIT')
      expect((await running).closed).toBe(0)
    } finally {
      mark.release()
    }

    expect(await repairRow(OTHER, [10, 20])).toBeDefined()
    // The next pass reads the re-opened blocks again.
    await runner.run()
    expect(enqueued.map((job) => [job.fromBlock, job.toBlock])).toEqual([[10, 20]])
  })

  it('a repair whose blocks are stored again is closed', async () => {
    await reset(OTHER, [[0, 20]], [10, 20])
    const runner = createRepairRunner({
      pool: db.store.pool,
      logger: pino({ level: 'silent' }),
      chainId: CHAIN_ID,
      followerFilterId: 'follower',
      chunkBlocks: 100,
      processRange: async () => ({ logs: 0, inserted: 0, stored: true }),
      enqueue: async () => {},
      failedJobs: async () => [],
    })
    expect(await runner.run()).toMatchObject({ closed: 1, open: 0 })
    expect(await repairRow(OTHER, [10, 20])).toBeUndefined()
  })
})

describe('repairs whose jobs keep failing', () => {
  let queue: RangeQueue
  let processed = 0

  beforeAll(async () => {
    const redis = createTestRedisPrefix()
    queue = createRangeQueue({ redisUrl: REDIS_URL, prefix: redis.prefix })
    const worker = createRangeWorker({
      redisUrl: REDIS_URL,
      prefix: redis.prefix,
      concurrency: 1,
      lockDurationMs: 30_000,
      logger: pino({ level: 'silent' }),
      process: async () => {
        processed++
        throw new FatalError('the node refuses the filter')
      },
    })
    cleanups.push(
      () => redis.cleanup(),
      () => queue.close(),
      () => worker.close(),
    )
  })

  it('a fatal repair job is retried with backoff, then quarantined and left alone until a new mark', async () => {
    const range: [number, number] = [0, 9]
    await reset(OTHER, [], range)
    const { logger, lines } = capturingLogger()
    const runner = createRepairRunner({
      pool: db.store.pool,
      logger,
      chainId: CHAIN_ID,
      followerFilterId: 'follower',
      chunkBlocks: 100,
      processRange: async () => ({ logs: 0, inserted: 0, stored: true }),
      enqueue: queue.enqueue,
      failedJobs: async (jobs) =>
        (await queue.failedJobs(jobs.map(rangeJobId))).map((job) => ({ reason: job.failedReason, at: job.finishedOn ?? 0 })),
      maxFailures: 2,
      retryBaseMs: 3_600_000,
    })
    const jobId = rangeJobId({ chainId: CHAIN_ID, filterId: OTHER, fromBlock: 0, toBlock: 9 })
    const failed = () => waitFor(async () => (await queue.queue.getJobState(jobId)) === 'failed', 'the repair job to fail')

    expect(await runner.run()).toMatchObject({ enqueued: 1 })
    await failed()
    // The failure is counted, and the retry waits.
    await runner.run()
    expect(await repairRow(OTHER, range)).toMatchObject({
      failures: 1,
      quarantined_at: null,
      last_error: 'fatal: the node refuses the filter',
    })
    expect(lines.some((line) => line.msg === 'repair failed: retrying later' && line.failures === 1)).toBe(true)
    await runner.run()
    expect(await queue.queue.getJobState(jobId)).toBe('failed')
    expect(processed).toBe(1)

    // Once the wait is over the job runs again; its second failure quarantines the repair.
    await db.store.pool.query(`UPDATE sync_repairs SET retry_at = now() - interval '1 second'`)
    expect(await runner.run()).toMatchObject({ enqueued: 1 })
    await waitFor(async () => processed === 2 && (await queue.queue.getJobState(jobId)) === 'failed', 'the retried job to fail')
    expect(await runner.run()).toMatchObject({ quarantined: 1 })
    expect((await repairRow(OTHER, range))?.quarantined_at).toBeInstanceOf(Date)
    expect(lines.some((line) => line.msg.startsWith('repair quarantined') && line.failures === 2 && line.level === 50)).toBe(true)

    // Quarantined: still open and counted, never enqueued again, even once its wait is over.
    await db.store.pool.query(`UPDATE sync_repairs SET retry_at = now() - interval '1 second'`)
    expect(await runner.run()).toEqual({ open: 1, enqueued: 0, closed: 0, quarantined: 1 })
    expect(await queue.queue.getJobState(jobId)).toBe('failed')

    // A new mark of the same blocks starts the repair over.
    await withTransaction(db.store.pool, (client) => recordRepairs(client, CHAIN_ID, OTHER, [range], 'orphaned'))
    expect(await repairRow(OTHER, range)).toMatchObject({ failures: 0, quarantined_at: null })
    expect(await runner.run()).toMatchObject({ enqueued: 1, quarantined: 0 })
  })

  it("a fatal error of the follower filter's own repair is counted too, a retryable one is not", async () => {
    const range: [number, number] = [0, 9]
    await reset('follower', [], range)
    let error: Error = new Error('connection refused')
    const runner = createRepairRunner({
      pool: db.store.pool,
      logger: pino({ level: 'silent' }),
      chainId: CHAIN_ID,
      followerFilterId: 'follower',
      chunkBlocks: 100,
      processRange: async () => {
        throw error
      },
      enqueue: async () => {},
      failedJobs: async () => [],
      maxFailures: 1,
    })
    await expect(runner.run()).rejects.toThrow('connection refused')
    expect(await repairRow('follower', range)).toMatchObject({ failures: 0 })
    error = new FatalError('method not found')
    expect(await runner.run()).toMatchObject({ quarantined: 1 })
    expect(await repairRow('follower', range)).toMatchObject({ failures: 1, last_error: 'method not found' })
    expect((await repairRow('follower', range))?.quarantined_at).toBeInstanceOf(Date)
  })
})
