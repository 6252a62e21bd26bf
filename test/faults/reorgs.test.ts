/**
 * Fault cases: reorgs during a backfill, during live follow, and one that crosses the hand-off block
 * (the first block of live indexing, above a backfilled range).
 * Run: npx vitest run --config vitest.faults.config.ts test/faults/reorgs.test.ts
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { Address, Hash, Hex } from 'viem'
import { startAnvil, type Anvil } from '../../harness/devnet/anvil.js'
import { storedBlocks } from '../../src/sync/historical.js'
import { anvilAccount, fixtureClient } from '../../harness/fixtures/chain.js'
import { startFaultProxy } from '../../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode, waitFor } from '../helpers/compare.js'
import { runTs, spawnTs } from '../../harness/processes.js'
import { blocksDifferingFromNode, expectAttributionsMatchNode, rpcCall } from './helpers/nodeCompare.js'
import {
  attributedCall,
  buildAttributedChain,
  CHAIN_ID,
  createCleanups,
  mineEmpty,
  nodeHead,
  sharedEnvironment,
  waitCaughtUp,
} from './helpers/faultChain.js'

/** Anvil reports `finalized` as head − 64: mining this many blocks makes everything before final. */
const PAST_FINALITY = 70
const REPLACER = 7

const cleanups = createCleanups()
afterAll(() => cleanups.run())

type Replacement = { offset: number; code: string; raw?: Hex }

/**
 * `anvil_reorg` of the last `depth` blocks; each replacement lands in block fork + 1 + `offset`,
 * an attributed call from the replacer account (or `raw`, a transaction to include again).
 * Returns the orphaned logs' block hashes and count.
 */
async function reorg(anvil: Anvil, emitter: Address, depth: number, replacements: Replacement[]) {
  const client = fixtureClient(anvil.url)
  const head = (await nodeHead(anvil.url)).number
  const fork = head - depth
  const orphaned = await client.getLogs({ fromBlock: BigInt(fork + 1), toBlock: BigInt(head) })
  let nonce = await client.getTransactionCount({ address: anvilAccount(REPLACER).address, blockNumber: BigInt(fork) })
  const list: [Hex, number][] = []
  for (const [i, r] of replacements.entries()) {
    const raw =
      r.raw ??
      (await attributedCall(anvil.url, {
        from: REPLACER,
        emitter,
        logs: 3,
        seq: 9_000 + depth * 100 + i * 10,
        code: r.code,
        nonce: nonce++,
      }))
    list.push([raw, r.offset])
  }
  await rpcCall(anvil.url, 'anvil_reorg', [depth, list])
  return { fork, orphanedHashes: [...new Set(orphaned.map((log) => log.blockHash))], orphanedLogs: orphaned.length }
}

async function removedRows(pool: import('pg').Pool, blockHashes: string[]): Promise<number> {
  const { rows } = await pool.query(`SELECT count(*) AS n FROM logs WHERE removed AND block_hash = ANY($1::text[])`, [blockHashes])
  return rows[0].n
}

/**
 * Finality over `atLeast` and every repair closed: the finality check that finds orphaned rows records
 * their repair, which the scheduler runs after it, so finality alone may come before the logs are back.
 */
async function waitFinalizedAndRepaired(pool: import('pg').Pool, atLeast: number) {
  await waitFor(
    async () => ((await pool.query('SELECT finalized_block FROM chain_state')).rows[0]?.finalized_block ?? -1) >= atLeast,
    `finality over block ${atLeast}`,
    90_000,
  )
  await waitFor(
    async () => (await pool.query('SELECT count(*)::int AS n FROM sync_repairs')).rows[0].n === 0,
    'every repair to close',
    90_000,
  )
}

describe('reorgs', () => {
  it('during a backfill: rows read from the orphaned fork are repaired, blocks empty on the old fork included', async () => {
    const anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    // Blocks with logs, then near the tip logs and empty blocks in turn: 28 logs, 29 empty, 30 logs, 31 empty, 32–37 logs.
    const { emitter } = await buildAttributedChain(anvil.url, { blocks: 26, txsPerBlock: 3, logsPerTx: 4 })
    await buildAttributedChain(anvil.url, { blocks: 1, txsPerBlock: 3, logsPerTx: 4, emitter }, 200)
    await mineEmpty(anvil.url, 1)
    await buildAttributedChain(anvil.url, { blocks: 1, txsPerBlock: 3, logsPerTx: 4, emitter }, 210)
    await mineEmpty(anvil.url, 1)
    await buildAttributedChain(anvil.url, { blocks: 6, txsPerBlock: 3, logsPerTx: 4, emitter }, 220)
    const head = (await nodeHead(anvil.url)).number
    const range: [number, number] = [0, head]

    const proxy = await startFaultProxy({ upstream: anvil.url, faults: { eth_getLogs: { slow: { delayMs: 250 } } } })
    cleanups.add(() => proxy.stop())
    const { pool, env } = await sharedEnvironment(cleanups, proxy.url, { CHUNK_BLOCKS: '2', WORKER_CONCURRENCY: '1' })
    const backfill = spawnTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
    cleanups.add(() => backfill.kill('SIGKILL'))

    // Chunks run oldest first: once blocks up to head − 6 are stored, the last ten blocks are replaced.
    await waitFor(
      async () => (await storedBlocks(pool, CHAIN_ID, 'all', range)) >= head - 5,
      'the backfill to pass the fork point',
      90_000,
      20,
    )
    const doneAtReorg = await storedBlocks(pool, CHAIN_ID, 'all', range)
    expect(doneAtReorg).toBeLessThan(head + 1)
    const { fork, orphanedHashes, orphanedLogs } = await reorg(anvil, emitter, 10, [
      { offset: 0, code: 'bc_reorg_a' },
      // Lands in a block that was empty on the old fork, so no stored row points at it.
      { offset: 1, code: 'bc_reorg_b' },
      { offset: 5, code: 'bc_reorg_c' },
    ])
    expect(await backfill.exited).toBe(0)

    // Live indexing from the block after the range; once the node calls the range final, it has been checked.
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], { ...env, RPC_URL: anvil.url, START_BLOCK: String(head + 1) })
    cleanups.add(() => daemon.kill('SIGKILL'))
    await mineEmpty(anvil.url, PAST_FINALITY)
    await waitCaughtUp(pool, anvil.url)
    await waitFinalizedAndRepaired(pool, head)

    const tip = (await nodeHead(anvil.url)).number
    const removed = await removedRows(pool, orphanedHashes)
    console.info(
      `reorg fault case "during backfill": depth 10 (fork ${fork}) with ${doneAtReorg}/${head + 1} blocks stored; ` +
        `${orphanedLogs} logs orphaned on the node, ${removed} of them stored and marked removed; ` +
        `blocks differing from the node: ${JSON.stringify(await blocksDifferingFromNode(pool, anvil.url, [0, tip]))}`,
    )
    const logs = await expectIndexMatchesNode(pool, anvil.url, [0, tip])
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, [0, tip])
    console.info(`reorg fault case "during backfill": ${logs} logs, ${attributions} attributions equal the node's`)
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })

  it('during live follow: orphaned rows kept as removed, a re-included transaction moves, a reorg mid catch-up', async () => {
    const anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    const { emitter } = await buildAttributedChain(anvil.url, { blocks: 3, txsPerBlock: 3, logsPerTx: 4 })
    const start = (await nodeHead(anvil.url)).number + 1
    const { pool, env } = await sharedEnvironment(cleanups, anvil.url, { START_BLOCK: String(start) })
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
    cleanups.add(() => daemon.kill('SIGKILL'))
    await buildAttributedChain(anvil.url, { blocks: 6, txsPerBlock: 3, logsPerTx: 4, emitter }, 10)
    await waitCaughtUp(pool, anvil.url)

    const shallow = await reorg(anvil, emitter, 1, [{ offset: 0, code: 'bc_live_a' }])
    await waitCaughtUp(pool, anvil.url)
    expect(await removedRows(pool, shallow.orphanedHashes)).toBe(shallow.orphanedLogs)

    // An attributed transaction of the first orphaned block comes back two blocks later on the new fork.
    const client = fixtureClient(anvil.url)
    const depth = 4
    const firstOrphaned = await client.getBlock({ blockNumber: BigInt((await nodeHead(anvil.url)).number - depth + 1) })
    const again = firstOrphaned.transactions[0] as Hash
    const raw = await rpcCall<Hex>(anvil.url, 'eth_getRawTransactionByHash', [again])
    const moved = await reorg(anvil, emitter, depth, [
      { offset: 2, code: '', raw },
      { offset: 3, code: 'bc_live_b' },
    ])
    await waitCaughtUp(pool, anvil.url)
    expect(await removedRows(pool, moved.orphanedHashes)).toBe(moved.orphanedLogs)
    const { rows: movedRows } = await pool.query(
      `SELECT DISTINCT block_number, removed FROM analytics.attributed_transactions WHERE tx_hash = $1`,
      [again],
    )
    expect(movedRows).toEqual([{ block_number: moved.fork + 3, removed: false }])

    // Twenty blocks at once and a reorg of eight right after: the follower may be mid catch-up.
    await buildAttributedChain(anvil.url, { blocks: 20, txsPerBlock: 2, logsPerTx: 4, emitter }, 100)
    const midway = await reorg(anvil, emitter, 8, [{ offset: 1, code: 'bc_live_c' }])
    await waitCaughtUp(pool, anvil.url)

    const head = (await nodeHead(anvil.url)).number
    const logs = await expectIndexMatchesNode(pool, anvil.url, [start, head])
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, [start, head])
    const { rows: reorgs } = await pool.query('SELECT fork_block, depth FROM reorgs ORDER BY id')
    console.info(
      `reorg fault case "live follow": node reorgs at forks ${[shallow, moved, midway].map((r) => r.fork).join(', ')}; ` +
        `recorded ${reorgs.map((r) => `fork ${r.fork_block} depth ${r.depth}`).join('; ')}; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(reorgs.length).toBeGreaterThanOrEqual(2)
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })

  it('crossing the hand-off block: live rows and backfilled rows of the old fork are both repaired', async () => {
    const anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    const { emitter } = await buildAttributedChain(anvil.url, { blocks: 12, txsPerBlock: 3, logsPerTx: 4 })
    const backfilled = (await nodeHead(anvil.url)).number
    const { pool, env } = await sharedEnvironment(cleanups, anvil.url)
    const backfill = await runTs('scripts/backfill.ts', ['--from', '0', '--to', String(backfilled)], env)
    expect(backfill.code, backfill.output).toBe(0)

    const handOff = backfilled + 1
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], { ...env, START_BLOCK: String(handOff) })
    cleanups.add(() => daemon.kill('SIGKILL'))
    await buildAttributedChain(anvil.url, { blocks: 3, txsPerBlock: 3, logsPerTx: 4, emitter }, 100)
    await waitCaughtUp(pool, anvil.url)

    // Fork point three blocks below the hand-off: three backfilled and three live blocks are replaced.
    const crossing = await reorg(anvil, emitter, 6, [
      { offset: 1, code: 'bc_cross_a' },
      { offset: 3, code: 'bc_cross_b' },
      { offset: 5, code: 'bc_cross_c' },
    ])
    expect(crossing.fork).toBe(handOff - 4)
    await waitCaughtUp(pool, anvil.url)
    await buildAttributedChain(anvil.url, { blocks: 2, txsPerBlock: 2, logsPerTx: 4, emitter }, 200)
    await waitCaughtUp(pool, anvil.url)

    const head = (await nodeHead(anvil.url)).number
    const removed = await removedRows(pool, crossing.orphanedHashes)
    const logs = await expectIndexMatchesNode(pool, anvil.url, [0, head])
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, [0, head])
    const { rows: reorgs } = await pool.query('SELECT fork_block, depth, logs_removed FROM reorgs ORDER BY id')
    console.info(
      `reorg fault case "crossing the hand-off": node fork ${crossing.fork} (depth 6, hand-off block ${handOff}); ` +
        `recorded ${reorgs.map((r) => `fork ${r.fork_block} depth ${r.depth}, ${r.logs_removed} logs marked removed`).join('; ')}; ` +
        `${removed}/${crossing.orphanedLogs} orphaned logs kept as removed; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(removed).toBe(crossing.orphanedLogs)
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })
})
