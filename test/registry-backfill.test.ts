/**
 * The BuilderCodes registry's backfill against anvil, PostgreSQL and Redis with the daemon's roles in
 * separate processes: the range is completed even when Redis loses the jobs the scheduler enqueued.
 */
import { encodeFunctionData } from 'viem'
import { afterAll, describe, expect, it } from 'vitest'
import { startAnvil } from '../harness/devnet/anvil.js'
import { clearRedisPrefix } from '../src/queue/index.js'
import { anvilAccount, deployContract, fixtureClient, loadArtifact, sendWithSuffix } from '../harness/fixtures/chain.js'
import { waitFor } from './helpers/compare.js'
import { spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL } from '../harness/services.js'

const BuilderCodes = loadArtifact('BuilderCodes')
const cleanups: (() => Promise<unknown>)[] = []

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('the registry backfill', () => {
  it('completes the registry range after Redis lost its jobs', async () => {
    const anvil = await startAnvil()
    const db = await createTestDatabase()
    const redis = createTestRedisPrefix()
    cleanups.push(
      () => anvil.stop(),
      () => db.drop(),
      () => redis.cleanup(),
    )
    const registry = await deployContract(anvil.url, BuilderCodes)
    const lower = (index: number) => anvilAccount(index).address.toLowerCase()
    const data = encodeFunctionData({ abi: BuilderCodes.abi, functionName: 'register', args: ['seller', lower(1), lower(3)] })
    await sendWithSuffix(anvil.url, { from: 5, to: registry, data })
    // Blocks after the registration: the head follower starts above it, only the backfill can find it.
    await fixtureClient(anvil.url).request({ method: 'anvil_mine' as never, params: ['0x3'] as never })
    const env = {
      RPC_URL: anvil.url,
      DATABASE_URL: db.url,
      REDIS_URL,
      REDIS_PREFIX: redis.prefix,
      BUILDER_CODES_REGISTRY: registry,
      HEAD_POLL_MS: '100',
      PENDING_POLL_MS: '0',
      LOG_LEVEL: 'info',
    }

    // A scheduler without workers: its backfill jobs wait in Redis…
    const scheduler = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
    cleanups.push(() => scheduler.kill('SIGKILL'))
    await waitFor(
      async () => scheduler.output().includes('builder codes registry backfill enqueued'),
      'the registry backfill to be enqueued',
      120_000,
    )
    // …until Redis loses every key of the deployment (as a FLUSHALL or a new Redis would), the lease too.
    expect(await clearRedisPrefix(REDIS_URL, redis.prefix)).toBeGreaterThan(0)

    const worker = spawnTs('src/main.ts', ['--role', 'worker'], env)
    cleanups.push(() => worker.kill('SIGKILL'))
    const registered = async () =>
      (await db.store.pool.query(`SELECT 1 FROM analytics.builder_codes WHERE builder_code = 'seller' AND source = 'registry'`))
        .rowCount === 1
    await waitFor(registered, 'the registration to be backfilled', 150_000)
    expect(scheduler.child.exitCode).toBeNull()
  }, 300_000)
})
