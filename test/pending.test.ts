import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Address, Hash } from 'viem'
import { createDevnet, freePort, ZERO_HASH, type Devnet } from '../harness/devnet/index.js'
import { artifacts, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { expectIndexMatchesNode, nodeLogs, waitFor, type ComparableLog } from './helpers/compare.js'
import { deployOnDevnet } from './helpers/devnet.js'
import { spawnTs } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
let devnet: Devnet
let db: TestDatabase
let emitter: Address
let env: Record<string, string>

async function send(from: number, logs: number, seq: number): Promise<Hash> {
  const raw = await rawSignedTx(devnet.url, { from, to: emitter, data: encodeEmitMany(logs, seq, '0xbeef'), gas: 500_000n })
  return fixtureClient(devnet.url).sendRawTransaction({ serializedTransaction: raw })
}

async function rowsOf(hash: Hash) {
  const { rows } = await db.store.pool.query(
    `SELECT block_hash, block_number, log_index, status, removed, data FROM analytics.logs WHERE transaction_hash = $1 ORDER BY log_index`,
    [hash],
  )
  return rows
}

beforeAll(async () => {
  devnet = await createDevnet({ profile: 'op', blockTimeMs: 0 })
  cleanups.push(() => devnet.stop())
  const client = fixtureClient(devnet.url)
  emitter = await deployOnDevnet(devnet, artifacts.Emitter)
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  const head = await client.getBlockNumber()
  env = {
    RPC_URL: devnet.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: String(head),
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '100',
  }
  const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
  cleanups.push(() => daemon.kill('SIGKILL'))
  await waitFor(
    async () => (await db.store.pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block === Number(head),
    'the follower to start',
  )
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('pre-confirmed logs', () => {
  it('are readable as pending before their block, then confirmed in place with the real block hash', async () => {
    const hash = await send(1, 3, 0)
    await waitFor(async () => (await rowsOf(hash)).length === 3, 'the pending rows')
    const pending = await rowsOf(hash)
    const head = await fixtureClient(devnet.url).getBlockNumber()
    for (const row of pending) {
      expect(row).toMatchObject({ block_hash: ZERO_HASH, status: 'pending', removed: false, block_number: Number(head) + 1 })
    }

    const mined = await devnet.mine()
    await waitFor(async () => (await rowsOf(hash)).every((row) => row.status === 'confirmed'), 'the confirmation')
    const confirmed = await rowsOf(hash)
    expect(confirmed).toHaveLength(3)
    for (const row of confirmed) expect(row).toMatchObject({ block_hash: mined.hash, block_number: Number(mined.number), removed: false })
    expect(confirmed.map((row) => row.data)).toEqual(pending.map((row) => row.data))
  })

  it('marks the pending logs of a dropped transaction removed when the next block arrives without it', async () => {
    const kept = await send(2, 2, 100)
    const dropped = await send(3, 2, 200)
    await waitFor(async () => (await rowsOf(dropped)).length === 2 && (await rowsOf(kept)).length === 2, 'both pending')
    expect(await devnet.dropTransaction(dropped)).toBe(true)
    const mined = await devnet.mine()
    await waitFor(async () => (await rowsOf(dropped)).every((row) => row.removed), 'the dropped rows to be removed')
    expect(await rowsOf(dropped)).toEqual([
      expect.objectContaining({ status: 'pending', removed: true, block_hash: ZERO_HASH }),
      expect.objectContaining({ status: 'pending', removed: true, block_hash: ZERO_HASH }),
    ])
    await waitFor(async () => (await rowsOf(kept)).every((row) => row.status === 'confirmed'), 'the kept rows to confirm')
    expect((await rowsOf(kept)).every((row) => row.block_hash === mined.hash)).toBe(true)
  })

  it('leaves the confirmed index equal to the node, with one row per log', async () => {
    for (let i = 0; i < 5; i++) await send(4 + (i % 3), 2 + i, 1000 + i * 10)
    await waitFor(async () => {
      const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE status = 'pending' AND NOT removed`)
      return rows[0].n >= 20
    }, 'the pending rows')
    await devnet.mine()
    const head = Number(await fixtureClient(devnet.url).getBlockNumber())
    await waitFor(
      async () => (await db.store.pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block === head,
      'the follower',
    )
    await expectIndexMatchesNode(db.store.pool, devnet.anvilUrl, [Number(env.START_BLOCK) + 1, head])
    const { rows } = await db.store.pool.query(`SELECT count(*) AS n FROM logs WHERE status = 'pending' AND NOT removed`)
    expect(rows[0].n).toBe(0)
  })
})

describe('the pending poll', () => {
  it('also reads the head, so a new block is stored without waiting for the head poll', async () => {
    const quiet = await createTestDatabase()
    const redis = createTestRedisPrefix()
    cleanups.push(
      () => quiet.drop(),
      () => redis.cleanup(),
    )
    const client = fixtureClient(devnet.url)
    const start = Number(await client.getBlockNumber())
    const liveBlock = async () => (await quiet.store.pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block
    // The head poll is the longest allowed: only the pending poll can wake the follower within the wait below.
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], {
      ...env,
      DATABASE_URL: quiet.url,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: String(start),
      HEAD_POLL_MS: '60000',
    })
    cleanups.push(() => daemon.kill('SIGKILL'))
    await waitFor(async () => (await liveBlock()) === start, 'the follower to start')

    // Empty blocks: no pending log announces them.
    for (let i = 0; i < 3; i++) {
      const mined = await devnet.mine()
      await waitFor(async () => (await liveBlock()) === Number(mined.number), `block ${mined.number} to be stored`, 20_000)
    }
  })
})

describe('a node whose canonical chain lags the flashblocks by 3 blocks, a fifth of them guessed wrong', () => {
  it("confirms each block's rows as the node seals it, the sealed content winning, counted by the metric", async () => {
    const lagging = await createDevnet({ profile: 'op', blockTimeMs: 0, canonicalLag: 3, divergence: 0.2 })
    cleanups.push(() => lagging.stop())
    const target = await deployOnDevnet(lagging, artifacts.Emitter)
    for (let i = 0; i < 3; i++) await lagging.mine()
    const node = fixtureClient(lagging.url)
    const start = Number(await node.getBlockNumber())
    const database = await createTestDatabase()
    const redis = createTestRedisPrefix()
    cleanups.push(
      () => database.drop(),
      () => redis.cleanup(),
    )
    const port = await freePort()
    const daemon = spawnTs('src/main.ts', ['--role', 'all'], {
      ...env,
      RPC_URL: lagging.url,
      DATABASE_URL: database.url,
      REDIS_PREFIX: redis.prefix,
      START_BLOCK: String(start),
      PORT: String(port),
    })
    cleanups.push(() => daemon.kill('SIGKILL'))
    const pool = database.store.pool
    const liveBlock = async () => (await pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block
    await waitFor(async () => (await liveBlock()) === start, 'the follower to start')
    // anvil is 3 blocks ahead of the node: the window's first block comes after those.
    const first = start + 4

    // Three sealed blocks the node does not have yet, and the pool: a pending window over four block numbers.
    const blocks: Hash[][] = []
    for (let b = 0; b < 4; b++) {
      const hashes: Hash[] = []
      for (let i = 0; i < 5; i++) {
        const raw = await rawSignedTx(lagging.url, {
          from: 1 + i,
          to: target,
          data: encodeEmitMany(1 + ((b + i) % 3), 5000 + b * 10 + i, '0xbeef'),
          gas: 500_000n,
        })
        hashes.push(await node.sendRawTransaction({ serializedTransaction: raw }))
      }
      blocks.push(hashes)
      if (b < 3) await lagging.mine()
    }
    const logCount = (b: number) => blocks[b]!.reduce((sum, _, i) => sum + 1 + ((b + i) % 3), 0)
    const rowsOfBlock = async (b: number) =>
      (
        await pool.query(
          `SELECT transaction_hash, block_number, block_hash, transaction_index, log_index, data, status, removed FROM analytics.logs
           WHERE transaction_hash = ANY($1) ORDER BY transaction_hash, log_index`,
          [blocks[b]],
        )
      ).rows
    await waitFor(async () => {
      const counts = await Promise.all(blocks.map(async (_, b) => (await rowsOfBlock(b)).filter((r) => r.status === 'pending').length))
      return counts.every((count, b) => count === logCount(b))
    }, 'the pending window to be stored')
    for (let b = 0; b < 4; b++) {
      for (const row of await rowsOfBlock(b)) expect(row).toMatchObject({ block_number: first + b, block_hash: ZERO_HASH, removed: false })
    }
    // The index holds what the node served, guesses included, until the blocks are sealed.
    const served = await nodePendingLogs(lagging.url)
    expect(new Set(served.map((log) => log.blockNumber)).size).toBe(4)
    const stored = (await Promise.all(blocks.map((_, b) => rowsOfBlock(b)))).flat()
    expect(stored.map((r) => [r.transaction_hash, r.block_number, r.transaction_index, r.log_index, r.data].join()).sort()).toEqual(
      served.map((log) => [log.transactionHash, log.blockNumber, log.transactionIndex, log.logIndex, log.data].join()).sort(),
    )

    // Each mine hands the node one more block: exactly that block's rows confirm, the later ones stay pending.
    for (let b = 0; b < 4; b++) {
      await lagging.mine()
      await waitFor(async () => (await liveBlock()) === first + b, `block ${first + b} to be stored`)
      const sealed = await nodeLogs(lagging.url, [first + b, first + b])
      const rows = await rowsOfBlock(b)
      expect(rows).toHaveLength(logCount(b))
      const byPosition = (a: { log_index: number }, c: { log_index: number }) => a.log_index - c.log_index
      expect(
        rows.sort(byPosition).map((r) => [r.transaction_hash, r.block_hash, r.transaction_index, r.log_index, r.data, r.status, r.removed]),
      ).toEqual(sealed.map((log) => [log.transactionHash, log.blockHash, log.transactionIndex, log.logIndex, log.data, 'confirmed', false]))
      for (let later = b + 1; later < 4; later++) {
        const pending = await rowsOfBlock(later)
        expect(pending).toHaveLength(logCount(later))
        expect(pending.every((r) => r.status === 'pending' && !r.removed && r.block_number === first + later)).toBe(true)
      }
    }
    const end = first + 3
    await expectIndexMatchesNode(pool, lagging.url, [start + 1, end])
    const { rows: removed } = await pool.query(`SELECT count(*)::int AS n FROM logs WHERE removed OR status = 'pending'`)
    expect(removed[0].n).toBe(0)

    // What was served pending and what was sealed, paired by (transaction, position in it).
    const sealed = await nodeLogs(lagging.url, [start + 1, end])
    const ordinalKey = (logs: ComparableLog[]) => {
      const seen = new Map<string, number>()
      return logs.map((log) => {
        const ordinal = seen.get(log.transactionHash) ?? 0
        seen.set(log.transactionHash, ordinal + 1)
        return [`${log.transactionHash}:${ordinal}`, log] as const
      })
    }
    const sealedByKey = new Map(ordinalKey([...sealed].sort((a, c) => a.blockNumber - c.blockNumber || a.logIndex - c.logIndex)))
    const pendingByKey = ordinalKey(
      [...served].sort((a, c) => a.blockNumber - c.blockNumber || a.transactionIndex - c.transactionIndex || a.logIndex - c.logIndex),
    )
    expect(pendingByKey).toHaveLength(sealedByKey.size)
    const content = (log: ComparableLog) => [log.blockNumber, log.transactionIndex, log.logIndex, log.address, log.topics, log.data]
    const changed = pendingByKey.filter(
      ([key, log]) => JSON.stringify(content(log)) !== JSON.stringify(content(sealedByKey.get(key)!)),
    ).length
    expect(changed).toBeGreaterThan(0)
    expect(changed).toBeLessThan(sealed.length)

    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    const counted = (content: string) =>
      Number(new RegExp(`codetrail_pending_logs_confirmed_total\\{[^}]*content="${content}"[^}]*\\} (\\d+)`).exec(metrics)?.[1])
    expect(counted('changed')).toBe(changed)
    expect(counted('unchanged')).toBe(sealed.length - changed)
  })
})

/** The node's pending window (`eth_getLogs` pending to pending), in comparable form. */
async function nodePendingLogs(url: string): Promise<ComparableLog[]> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [{ fromBlock: 'pending', toBlock: 'pending' }] }),
  })
  const { result } = (await response.json()) as { result: Array<Record<string, string>> }
  return result.map((log) => ({
    blockNumber: Number(log.blockNumber),
    blockHash: log.blockHash!,
    blockTimestamp: Number(log.blockTimestamp),
    transactionHash: log.transactionHash!,
    transactionIndex: Number(log.transactionIndex),
    logIndex: Number(log.logIndex),
    address: log.address!.toLowerCase(),
    topics: log.topics as unknown as string[],
    data: log.data!,
    removed: false,
  }))
}
