/**
 * Fault cases: Redis restarted during a backfill; PostgreSQL restarted during live follow. Both run on
 * private servers (temp dirs, free ports): the machine's shared PostgreSQL and Redis are never touched.
 * Run: npx vitest run --config vitest.faults.config.ts test/faults/services.test.ts
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { startAnvil } from '../../harness/devnet/anvil.js'
import { storedBlocks } from '../../src/sync/historical.js'
import { startFaultProxy } from '../../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode, waitFor } from '../helpers/compare.js'
import { runTs, spawnTs } from '../../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL } from '../../harness/services.js'
import { expectAttributionsMatchNode } from './helpers/nodeCompare.js'
import { buildAttributedChain, CHAIN_ID, createCleanups, mineEmpty, nodeHead, waitCaughtUp } from './helpers/faultChain.js'
import { startPrivatePostgres, startPrivateRedis } from './helpers/privateServices.js'

/** How long a waiting backfill gets to finish by itself once Redis is back. */
const SELF_RECOVERY_MS = 30_000
const PG_DOWN_MS = 3_000

const cleanups = createCleanups()
afterAll(() => cleanups.run())

describe('Redis restarted during a backfill', () => {
  it('loses no block: the range completes with every log and attribution of the node', async () => {
    const anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    const chain = await buildAttributedChain(anvil.url, { blocks: 60, txsPerBlock: 3, logsPerTx: 4 })
    await mineEmpty(anvil.url, 3)
    const range: [number, number] = [0, Number(chain.toBlock) + 3]
    const total = range[1] - range[0] + 1
    // Slow answers keep the backfill busy long enough for the restart to land in the middle of it.
    const proxy = await startFaultProxy({ upstream: anvil.url, faults: { eth_getLogs: { slow: { delayMs: 300 } } } })
    cleanups.add(() => proxy.stop())

    const redis = await startPrivateRedis()
    cleanups.add(() => redis.stop())
    const db = await createTestDatabase()
    cleanups.add(() => db.drop())
    const pool = db.store.pool
    const env = {
      RPC_URL: proxy.url,
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_PREFIX: 'faults',
      CHUNK_BLOCKS: '2',
      WORKER_CONCURRENCY: '2',
      JOB_LOCK_MS: '2000',
    }
    const done = () => storedBlocks(pool, CHAIN_ID, 'all', range)
    const worker = spawnTs('src/main.ts', ['--role', 'worker'], env)
    cleanups.add(() => worker.kill('SIGKILL'))
    const backfill = spawnTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
    cleanups.add(() => backfill.kill('SIGKILL'))

    await waitFor(async () => (await done()) >= total / 4, 'a quarter of the range', 90_000, 50)
    const atRestart = await done()
    await redis.restart(1_000)
    const restartedAt = Date.now()

    // The processes ride out the restart; the waiting backfill is given time to finish by itself.
    const selfRecovered = await Promise.race([backfill.exited.then(() => true), sleep(SELF_RECOVERY_MS).then(() => false)])
    const afterWait = await done()
    expect(worker.child.exitCode).toBeNull()
    // The waiting backfill plans the jobs Redis lost again and ends by itself, without a re-run.
    expect(
      selfRecovered,
      `the waiting backfill was still waiting ${SELF_RECOVERY_MS / 1000} s after the restart: ${backfill.output().slice(-1_500)}`,
    ).toBe(true)

    // The documented way to resume: the same command again plans only the missing blocks.
    const rerun = await runTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
    expect(rerun.code, rerun.output).toBe(0)
    expect(await backfill.exited).toBe(0)
    const recoverySeconds = (Date.now() - restartedAt) / 1000

    const logs = await expectIndexMatchesNode(pool, anvil.url, range)
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, range)
    console.info(
      `redis fault case: restarted (empty) at ${atRestart}/${total} blocks; ${SELF_RECOVERY_MS / 1000} s later ${afterWait}/${total} ` +
        `(waiting backfill ${selfRecovered ? 'finished by itself' : 'still waiting'}); complete ${recoverySeconds.toFixed(1)} s after the restart ` +
        `with a re-run; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(await worker.kill('SIGTERM')).toBe(0)
    expect(selfRecovered, 'the waiting backfill finished by itself after Redis came back without its jobs').toBe(true)
  })
})

describe('PostgreSQL restarted during live follow', () => {
  it('keeps the daemon up and catches up with every log and attribution of the node', async () => {
    const anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    const { emitter } = await buildAttributedChain(anvil.url, { blocks: 2, txsPerBlock: 2, logsPerTx: 4 })
    const postgres = await startPrivatePostgres()
    cleanups.add(() => postgres.stop())
    const { url, store } = await postgres.createDatabase()
    cleanups.add(() => store.close())
    const redis = createTestRedisPrefix()
    cleanups.add(() => redis.cleanup())
    const start = (await nodeHead(anvil.url)).number + 1
    const env = {
      RPC_URL: anvil.url,
      DATABASE_URL: url,
      REDIS_URL,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: String(start),
      HEAD_POLL_MS: '100',
      PENDING_POLL_MS: '0',
    }
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
    cleanups.add(() => daemon.kill('SIGKILL'))
    await buildAttributedChain(anvil.url, { blocks: 3, txsPerBlock: 2, logsPerTx: 4, emitter }, 10)
    await waitCaughtUp(store.pool, anvil.url)

    // Blocks keep coming while the database goes down and comes back.
    let mining = true
    let bursts = 0
    const miner = (async () => {
      while (mining) {
        await buildAttributedChain(anvil.url, { blocks: 1, txsPerBlock: 2, logsPerTx: 4, emitter }, 100 + bursts++ * 2)
        await sleep(300)
      }
    })()
    await sleep(1_000)
    await postgres.restart(PG_DOWN_MS)
    const backAt = Date.now()
    await sleep(2_000)
    mining = false
    await miner
    expect(daemon.child.exitCode).toBeNull()
    await waitCaughtUp(store.pool, anvil.url)
    const recoverySeconds = (Date.now() - backAt) / 1000

    const head = (await nodeHead(anvil.url)).number
    const logs = await expectIndexMatchesNode(store.pool, anvil.url, [start, head])
    const attributions = await expectAttributionsMatchNode(store.pool, anvil.url, [start, head])
    console.info(
      `postgres fault case: down ${PG_DOWN_MS / 1000} s (fast shutdown) while ${bursts} blocks were mined around it; ` +
        `follower at the head ${recoverySeconds.toFixed(1)} s after PostgreSQL was back; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })
})
