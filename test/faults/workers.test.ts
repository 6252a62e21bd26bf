/**
 * Fault case: worker processes SIGKILLed at random moments during a backfill, several times.
 * Run: npx vitest run --config vitest.faults.config.ts test/faults/workers.test.ts
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { Queue } from 'bullmq'
import { startAnvil } from '../../harness/devnet/anvil.js'
import { createRangeEvents, createRedis, RANGE_QUEUE } from '../../src/queue/index.js'
import { storedBlocks } from '../../src/sync/historical.js'
import { startFaultProxy } from '../../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode, waitFor } from '../helpers/compare.js'
import { runTs, spawnTs, type Spawned } from '../../harness/processes.js'
import { REDIS_URL } from '../../harness/services.js'
import { expectAttributionsMatchNode } from './helpers/nodeCompare.js'
import {
  buildAttributedChain,
  CHAIN_ID,
  createCleanups,
  mineEmpty,
  runSeed,
  seededRandom,
  sharedEnvironment,
} from './helpers/faultChain.js'

const KILLS = 6
/** Every answer of eth_getLogs waits this long, so each chunk job is in flight long enough to be killed in. */
const GET_LOGS_DELAY_MS = 400

const cleanups = createCleanups()
afterAll(() => cleanups.run())

describe('workers SIGKILLed at random moments during a backfill', () => {
  it('completes the range with every log and attribution of the node, no gap and no duplicate', async () => {
    const seed = runSeed()
    const random = seededRandom(seed)
    console.info(`workers fault case: FAULT_SEED=${seed}`)

    const anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    const chain = await buildAttributedChain(anvil.url, { blocks: 80, txsPerBlock: 3, logsPerTx: 6 })
    await mineEmpty(anvil.url, 4)
    const range: [number, number] = [0, Number(chain.toBlock) + 4]
    const total = range[1] - range[0] + 1

    // Slow but correct answers: the node is fine, the jobs just last long enough to die mid-way.
    const proxy = await startFaultProxy({ upstream: anvil.url, faults: { eth_getLogs: { slow: { delayMs: GET_LOGS_DELAY_MS } } } })
    cleanups.add(() => proxy.stop())
    const { pool, env } = await sharedEnvironment(cleanups, proxy.url, { CHUNK_BLOCKS: '2', WORKER_CONCURRENCY: '2' })

    const events = createRangeEvents({ redisUrl: REDIS_URL, prefix: env.REDIS_PREFIX! })
    cleanups.add(() => events.close())
    let stalled = 0
    events.events.on('stalled', () => stalled++)
    await events.events.waitUntilReady()
    const connection = createRedis(REDIS_URL)
    const queue = new Queue(RANGE_QUEUE, { connection, prefix: env.REDIS_PREFIX! })
    cleanups.add(async () => {
      await queue.close()
      connection.disconnect()
    })

    const enqueue = await runTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1]), '--no-wait'], env)
    expect(enqueue.code, enqueue.output).toBe(0)
    const done = () => storedBlocks(pool, CHAIN_ID, 'all', range)

    const started = Date.now()
    const spawnWorker = (): Spawned => {
      const worker = spawnTs('src/main.ts', ['--role', 'worker'], env)
      cleanups.add(() => worker.kill('SIGKILL'))
      return worker
    }
    const workers = [spawnWorker(), spawnWorker()]
    const kills: { blocksDone: number; activeJobs: number }[] = []
    let progress = 0
    for (let k = 0; k < KILLS; k++) {
      // A random moment once the workers make progress again, so the kills spread over the whole backfill.
      await waitFor(async () => (await done()) > progress, 'progress since the last kill', 60_000, 20)
      await sleep(Math.floor(random() * 800))
      const [blocksDone, activeJobs] = await Promise.all([done(), queue.getActiveCount()])
      if (blocksDone === total) break
      const victim = Math.floor(random() * workers.length)
      expect(await workers[victim]!.kill('SIGKILL')).toBe('SIGKILL')
      kills.push({ blocksDone, activeJobs })
      progress = blocksDone
      workers[victim] = spawnWorker()
    }
    await waitFor(async () => (await done()) === total, 'the whole range', 120_000)
    const seconds = (Date.now() - started) / 1000

    console.info(
      `workers fault case: ${kills.length} SIGKILLs at ${kills.map((k) => `${k.blocksDone}/${total} (${k.activeJobs} jobs running)`).join(', ')} blocks; ` +
        `${stalled} stalled jobs taken over; range done in ${seconds.toFixed(1)} s`,
    )
    expect(kills.length).toBeGreaterThanOrEqual(3)
    expect(stalled).toBeGreaterThan(0)
    expect(await queue.getFailedCount()).toBe(0)

    // The same command afterwards finds nothing to do: the progress records are whole.
    const again = await runTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
    expect(again.code, again.output).toBe(0)
    expect(again.output).toMatch(/already indexed/)

    const logs = await expectIndexMatchesNode(pool, anvil.url, range)
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, range)
    console.info(`workers fault case: ${logs} logs and ${attributions} attribution rows equal the node's`)
    for (const worker of workers) expect(await worker.kill('SIGTERM')).toBe(0)
  })
})
