/**
 * One deployment (a scheduler and a worker process, a config file listing two chains) following a `base`
 * devnet and a pre-confirming `op` devnet with other chain ids while both reorg, with replacement
 * transactions: at the end each chain's rows (logs, removed flags, statuses, attributions, rollups,
 * registry codes) equal its own node, by the seeded simulation's comparison run per chain.
 */
import { Queue } from 'bullmq'
import { afterAll, expect, it } from 'vitest'
import { builderCodesRegistryFilter } from '../src/attribution/registry.js'
import { createRedis, rangeQueueName } from '../src/queue/index.js'
import { createDevnet, type Devnet } from '../harness/devnet/index.js'
import { spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL } from '../harness/services.js'
import { waitFor } from './helpers/compare.js'
import { createCleanups, nodeHead, waitCaughtUp } from './faults/helpers/faultChain.js'
import { compareWithNode, type OrphanedRow } from './sim/compare.js'
import { CHAIN_IDS, EIP7702_ACCOUNT, PAST_FINALITY, type BlockPlan } from './sim/schedule.js'
import { createSimChain, type SimChain } from './sim/simChain.js'
import { writeConfigFile } from './helpers/configFile.js'

const cleanups = createCleanups()
afterAll(() => cleanups.run())

type Followed = {
  chainId: number
  devnet: Devnet
  chain: SimChain
  scope: 'logs' | 'blocks'
  from: number
  orphanedRows: OrphanedRow[]
}

/** A block of suffixed traffic (every suffix kind) on both emitters, and on even `n` a user operation of the EIP-7702 account. */
function traffic(n: number, pendingMs: number): BlockPlan {
  return {
    txs: [0, 1, 2, 3].map((i) => ({ emitter: (n + i) % 2, logs: 1 + ((n + i) % 4), suffix: (n + i) % 4, payload: n % 15 })),
    ...(n % 2 === 0
      ? { bundle: { version: '0.8' as const, ops: [{ account: EIP7702_ACCOUNT, emitter: n % 2, logs: 2, suffix: n % 3 }] } }
      : {}),
    pendingMs,
  }
}

it('follows a base and a pre-confirming op chain through reorgs on both: each chain equals its own node', {
  timeout: 300_000,
}, async () => {
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.add(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const note = () => {}
  const [base, op] = await Promise.all([
    createDevnet({ profile: 'base', blockTimeMs: 0, chainId: CHAIN_IDS[0] }),
    createDevnet({ profile: 'op', blockTimeMs: 0, refreshMs: 100, chainId: CHAIN_IDS[1] }),
  ])
  cleanups.add(
    () => base.stop(),
    () => op.stop(),
  )
  const chains: Followed[] = []
  for (const [devnet, chainId, scope] of [
    [base, CHAIN_IDS[0], 'blocks'],
    [op, CHAIN_IDS[1], 'logs'],
  ] as const) {
    const chain = await createSimChain(devnet, 2, note)
    chains.push({ chainId, devnet, chain, scope, from: chain.deployedTop + 1, orphanedRows: [] })
  }
  const mine = (followed: Followed, n: number) => followed.chain.mineBlock(traffic(n, followed.devnet.profile === 'op' ? 300 : 0))
  for (let n = 0; n < 4; n++) for (const followed of chains) await mine(followed, n)

  const configFile = writeConfigFile(
    `chains:\n${chains
      .map(
        (c) =>
          `  - { id: ${c.chainId}, name: ${c.devnet.profile}, rpc: "${c.devnet.url}", startBlock: ${c.from}, headPollMs: 100, pendingPollMs: 100, attributionScope: ${c.scope}, registry: { address: "${c.chain.registry}" } }\n`,
      )
      .join('')}`,
  )
  const env = {
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    CODETRAIL_CONFIG: configFile,
    CHUNK_BLOCKS: '3',
    JOB_LOCK_MS: '2000',
    WORKER_CONCURRENCY: '2',
  }
  const scheduler = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
  const worker = spawnTs('src/main.ts', ['--role', 'worker'], env)
  cleanups.add(
    () => scheduler.kill('SIGKILL'),
    () => worker.kill('SIGKILL'),
  )
  for (const c of chains) await waitCaughtUp(db.store.pool, c.devnet.url, undefined, c.chainId)

  /** `anvil_reorg` of the chain's last `depth` blocks with replacements; the rows stored above the fork are remembered first. */
  const reorg = (c: Followed, depth: number, salt: number) =>
    c.chain.reorg(
      {
        type: 'reorg',
        depth,
        keep: 0.5,
        salt,
        replacements: [
          { offset: 0, emitter: 0, logs: 3 },
          { offset: depth - 1, emitter: 1, logs: 2 },
        ],
      },
      async (fork) => {
        const { rows } = await db.store.pool.query(
          `SELECT block_number, block_hash, log_index FROM logs WHERE chain_id = $1 AND block_number > $2 AND status <> 'pending'`,
          [c.chainId, fork],
        )
        c.orphanedRows.push(...rows.map((r) => ({ blockNumber: Number(r.block_number), blockHash: r.block_hash, logIndex: r.log_index })))
      },
    )

  let n = 4
  for (let round = 0; round < 3; round++) {
    // Both chains move and both reorg at the same time; then each gets a block the follower must find above its new fork.
    await Promise.all(chains.map(async (c) => (await mine(c, n), await mine(c, n + 1))))
    n += 2
    for (const c of chains) await waitCaughtUp(db.store.pool, c.devnet.url, undefined, c.chainId)
    await Promise.all(chains.map((c, i) => reorg(c, 2 + ((round + i) % 3), round * 10 + i)))
    await Promise.all(chains.map((c) => mine(c, n)))
    n++
  }
  // A code registered on each chain's own registry: each chain's registry codes are its own.
  for (const c of chains) await c.chain.registryCall({ type: 'registry', call: 'register', code: 0 })
  // The registry's code 1 is the reorg replacer's: the reorg right after undoes it on the op chain only.
  await chains[1]!.chain.registryCall({ type: 'registry', call: 'register', code: 1 })
  await reorg(chains[1]!, 1, 99)
  for (const c of chains) await mine(c, n)

  const tops: number[] = []
  for (const c of chains) {
    await c.chain.mineEmpty(0)
    tops.push(await c.chain.head())
    await c.chain.mineEmpty(PAST_FINALITY)
  }
  const connection = createRedis(REDIS_URL)
  const queues = chains.map((c) => new Queue(rangeQueueName({ chains }, c.chainId), { connection, prefix: redis.prefix }))
  cleanups.add(async () => {
    await Promise.all(queues.map((queue) => queue.close()))
    connection.disconnect()
  })
  await waitFor(
    async () => {
      for (const [i, c] of chains.entries()) {
        const [head, { rows }, counts] = await Promise.all([
          nodeHead(c.devnet.url),
          db.store.pool.query('SELECT live_block, live_hash, finalized_block FROM chain_state WHERE chain_id = $1', [c.chainId]),
          queues[i]!.getJobCounts('waiting', 'active', 'delayed', 'prioritized'),
        ])
        const state = rows[0]
        if (state?.live_block !== head.number || state?.live_hash !== head.hash || Number(state?.finalized_block ?? -1) < tops[i]!)
          return false
        if (Object.values(counts).some((count) => count > 0)) return false
      }
      return (await db.store.pool.query('SELECT count(*)::int AS n FROM sync_repairs')).rows[0].n === 0
    },
    'both chains settled past finality',
    120_000,
  )

  for (const [i, c] of chains.entries()) {
    // The reorgs orphaned stored rows on both chains: the comparison holds each to its node through them.
    expect(c.orphanedRows.length).toBeGreaterThan(0)
    const differences = await compareWithNode({
      pool: db.store.pool,
      rpcUrl: c.devnet.anvilUrl,
      filters: [
        { name: 'daemon', addresses: [], topics: [], range: [c.from, tops[i]!] },
        { name: 'registry', ...builderCodesRegistryFilter(c.chain.registry), range: [0, tops[i]!] },
      ],
      orphanedRows: c.orphanedRows,
      entryPoints: c.chain.entryPoints,
      chainId: c.chainId,
      scope: c.scope,
      registry: c.chain.registry,
      note,
    })
    expect(differences, `chain ${c.chainId}`).toEqual([])
  }
  // Each chain holds its own rows: the op chain's registry lost its code 1 to the reorg, the base chain never had one.
  const { rows: codes } = await db.store.pool.query(`SELECT chain_id, builder_code FROM registry_codes ORDER BY chain_id, builder_code`)
  expect(codes.map((r) => [r.chain_id, r.builder_code])).toEqual([
    [CHAIN_IDS[0], 'sim_code_0'],
    [CHAIN_IDS[1], 'sim_code_0'],
  ])
  expect(scheduler.child.exitCode).toBeNull()
  expect(worker.child.exitCode).toBeNull()
})
