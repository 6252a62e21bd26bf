import { afterAll, describe, expect, it } from 'vitest'
import type { Address, Hex } from 'viem'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { freePort } from '../harness/devnet/index.js'
import { anvilAccount, buildChain, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { nodeLogs, waitFor } from './helpers/compare.js'
import { runTs, spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

/** Two emitters: the daemon follows the first, a backfill reads the second (another filter). */
async function setup() {
  const anvil = await startAnvil()
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => anvil.stop(),
    () => db.drop(),
    () => redis.cleanup(),
  )
  const { emitter: followed } = await buildChain(anvil.url, { blocks: 3, txsPerBlock: 2, largeDataEvery: 0 })
  const { emitter: other } = await buildChain(anvil.url, { blocks: 3, txsPerBlock: 2, largeDataEvery: 0 })
  const env = {
    RPC_URL: anvil.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: '0',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '0',
    INDEX_ADDRESSES: followed,
    PORT: String(await freePort()),
  }
  return { anvil, db, env, followed, other }
}

function daemon(env: Record<string, string>): Spawned {
  const spawned = spawnTs('src/main.ts', ['--role', 'all'], env)
  cleanups.push(() => spawned.kill('SIGKILL'))
  return spawned
}

async function head(anvil: Anvil) {
  return Number(await fixtureClient(anvil.url).getBlockNumber())
}

/** The index's live rows of one contract over the range equal the node's, field by field. */
async function matchesNode(db: TestDatabase, anvil: Anvil, address: Address, range: readonly [number, number]): Promise<boolean> {
  const expected = await nodeLogs(anvil.url, range, { address: [address] })
  const { rows } = await db.store.pool.query(
    `SELECT block_number AS "blockNumber", block_hash AS "blockHash", log_index AS "logIndex", data FROM analytics.logs
     WHERE address = $1 AND block_number BETWEEN $2 AND $3 AND NOT removed ORDER BY block_number, log_index`,
    [address.toLowerCase(), range[0], range[1]],
  )
  return (
    rows.length === expected.length &&
    rows.every(
      (row, i) => row.blockHash === expected[i]!.blockHash && row.logIndex === expected[i]!.logIndex && row.data === expected[i]!.data,
    )
  )
}

/** Reorgs the top `depth` blocks away; the replacement block carries a call to `emitter`. */
async function reorg(anvil: Anvil, emitter: Address, depth: number, seq: number) {
  const client = fixtureClient(anvil.url)
  const replacer = anvilAccount(8)
  const top = await head(anvil)
  const nonce = await client.getTransactionCount({ address: replacer.address, blockNumber: BigInt(top - depth) })
  const replacement: Hex = await rawSignedTx(anvil.url, { from: replacer, to: emitter, data: encodeEmitMany(3, seq, '0xabcd'), nonce })
  await client.request({ method: 'anvil_reorg' as never, params: [depth, [[replacement, 0]]] as never })
}

describe('repairs after a reorg', () => {
  it('a tip reorg makes another filter read its unfinalized blocks again (defect: other filters lost logs)', async () => {
    const { anvil, db, env, followed, other } = await setup()
    const backfill = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(await head(anvil)), '--address', other], env)
    expect(backfill.code, backfill.output).toBe(0)
    daemon(env)
    const range = [0, await head(anvil)] as const
    await waitFor(() => matchesNode(db, anvil, followed, range), 'the follower to catch up')

    await reorg(anvil, other, 3, 7)
    const after = [0, await head(anvil)] as const
    await waitFor(
      async () => (await matchesNode(db, anvil, other, after)) && (await matchesNode(db, anvil, followed, after)),
      'both filters to equal the node',
    )
    const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE address = $1 AND removed`, [other.toLowerCase()])
    expect(rows[0].n).toBeGreaterThan(0)
    await waitFor(async () => (await db.store.pool.query(`SELECT count(*) AS n FROM sync_repairs`)).rows[0].n === 0, 'the repair to close')

    // Running the same backfill again finds nothing missing and changes nothing.
    const again = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(after[1]), '--address', other, '--json'], env)
    expect(again.code, again.output).toBe(0)
    expect(await matchesNode(db, anvil, other, after)).toBe(true)
  })

  it('a crash right after rows are marked removed still repairs them at restart (defect: orphan repair was not crash-safe)', async () => {
    const { anvil, db, env, followed, other } = await setup()
    const backfill = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(await head(anvil)), '--address', other], env)
    expect(backfill.code, backfill.output).toBe(0)
    const doomed = daemon({ ...env, CODETRAIL_CRASH_AT: 'reorg-marked' })
    await waitFor(async () => matchesNode(db, anvil, followed, [0, await head(anvil)]), 'the follower to catch up')

    await reorg(anvil, other, 2, 9)
    expect(await doomed.exited, doomed.output()).toBe('SIGKILL')
    // The marks and the repair committed together: the rows are removed and the repair is recorded.
    const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM sync_repairs WHERE reason = 'reorg'`)
    expect(rows[0].n).toBeGreaterThan(0)

    daemon(env)
    const after = [0, await head(anvil)] as const
    await waitFor(
      async () => (await matchesNode(db, anvil, other, after)) && (await matchesNode(db, anvil, followed, after)),
      'both filters to equal the node',
    )
  })
})
