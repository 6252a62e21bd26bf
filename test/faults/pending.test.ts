/**
 * Fault cases: pre-confirmed (pending) logs dropped, moved to another index, and confirmed in a later
 * block than announced, on the devnet's pre-confirmed layer answering in no particular order.
 * Run: npx vitest run --config vitest.faults.config.ts test/faults/pending.test.ts
 */
import { afterAll, describe, expect, it } from 'vitest'
import { encodeDeployData, type Address, type Hash, type Hex } from 'viem'
import { createDevnet, ZERO_HASH, type Devnet } from '../../harness/devnet/index.js'
import { artifacts, fixtureClient, rawSignedTx } from '../../harness/fixtures/chain.js'
import { expectIndexMatchesNode, waitFor } from '../helpers/compare.js'
import { spawnTs } from '../../harness/processes.js'
import { expectAttributionsMatchNode } from './helpers/nodeCompare.js'
import { attributedCall, createCleanups, sharedEnvironment, waitCaughtUp } from './helpers/faultChain.js'

const cleanups = createCleanups()
afterAll(() => cleanups.run())

type Row = { block_hash: string; block_number: number; log_index: number; status: string; removed: boolean }

describe('pending logs', () => {
  it('dropped, moved to another index, confirmed a block later than announced: the index ends equal to the node', async () => {
    const devnet: Devnet = await createDevnet({ profile: 'op', blockTimeMs: 0, shuffle: true })
    cleanups.add(() => devnet.stop())
    const client = fixtureClient(devnet.url)
    const deploy = await rawSignedTx(devnet.url, {
      from: 0,
      data: encodeDeployData({ abi: artifacts.Emitter.abi, bytecode: artifacts.Emitter.bytecode }),
      gas: 3_000_000n,
    })
    const deployHash = await client.sendRawTransaction({ serializedTransaction: deploy })
    await devnet.mine()
    const emitter: Address = (await client.getTransactionReceipt({ hash: deployHash })).contractAddress!
    const start = Number(await client.getBlockNumber())
    const { pool, env } = await sharedEnvironment(cleanups, devnet.url, { START_BLOCK: String(start), PENDING_POLL_MS: '100' })
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
    cleanups.add(() => daemon.kill('SIGKILL'))
    await waitCaughtUp(pool, devnet.anvilUrl)

    const rowsOf = async (hash: Hash): Promise<Row[]> =>
      (
        await pool.query(
          `SELECT block_hash, block_number, log_index, status, removed FROM analytics.logs WHERE transaction_hash = $1 ORDER BY log_index`,
          [hash],
        )
      ).rows
    const attributionOf = async (hash: Hash) =>
      (await pool.query(`SELECT block_number, status, removed FROM analytics.attributed_transactions WHERE tx_hash = $1`, [hash])).rows
    const send = async (raw: Hex) => client.sendRawTransaction({ serializedTransaction: raw })
    const call = (from: number, logs: number, seq: number, code: string, tipGwei?: bigint) =>
      attributedCall(devnet.url, { from, emitter, logs, seq, code, ...(tipGwei ? { tipGwei } : {}) })

    // Four transactions announced for block N = start + 1.
    const announced = start + 1
    const t0 = await send(await call(1, 2, 0, 'bc_pending_dropped'))
    const t1 = await send(await call(2, 3, 10, 'bc_pending_moved'))
    const raw2 = await call(3, 2, 20, 'bc_pending_later')
    const t2 = await send(raw2)
    const raw3 = await call(4, 2, 30, 'bc_pending_later')
    const t3 = await send(raw3)
    // Pending attribution is written beside the polls, after the logs it belongs to: wait for both.
    await waitFor(async () => {
      const counts = await Promise.all(
        [t0, t1, t2, t3].map(async (hash) => (await rowsOf(hash)).filter((r) => r.status === 'pending').length),
      )
      const attributed = await Promise.all([t0, t1, t2, t3].map(async (hash) => (await attributionOf(hash)).length))
      return counts.join() === '2,3,2,2' && attributed.join() === '1,1,1,1'
    }, 'the pending rows and attributions of four transactions')
    for (const hash of [t0, t1, t2, t3]) {
      for (const row of await rowsOf(hash)) expect(row).toMatchObject({ block_hash: ZERO_HASH, block_number: announced, removed: false })
      expect(await attributionOf(hash)).toEqual([{ block_number: announced, status: 'pending', removed: false }])
    }
    const indexes = async (hash: Hash) => (await rowsOf(hash)).map((r) => r.log_index).join()
    const firstIndexes = await indexes(t1)

    // Dropping the transaction ahead moves t1's logs up; a higher tip sent after moves them down.
    expect(await devnet.dropTransaction(t0)).toBe(true)
    await waitFor(async () => (await indexes(t1)) !== firstIndexes, 't1 moved up after the drop ahead of it')
    const movedUp = await indexes(t1)
    const tHigh = await send(await call(5, 4, 40, 'bc_pending_tip', 5n))
    await waitFor(async () => (await indexes(t1)) !== movedUp && (await rowsOf(tHigh)).length === 4, 't1 moved down behind the higher tip')
    const movedDown = await indexes(t1)
    expect((await rowsOf(t1)).length).toBe(3)

    // Block N comes without t0 (dropped), t2 and t3 (pulled from the pool; they come back later).
    expect(await devnet.dropTransaction(t2)).toBe(true)
    expect(await devnet.dropTransaction(t3)).toBe(true)
    const blockN = await devnet.mine()
    await waitCaughtUp(pool, devnet.anvilUrl)
    for (const hash of [t0, t2, t3]) {
      for (const row of await rowsOf(hash)) expect(row).toMatchObject({ status: 'pending', removed: true, block_hash: ZERO_HASH })
      expect(await attributionOf(hash)).toEqual([{ block_number: announced, status: 'pending', removed: true }])
    }
    for (const hash of [t1, tHigh]) {
      for (const row of await rowsOf(hash)) expect(row).toMatchObject({ status: 'confirmed', removed: false, block_hash: blockN.hash })
    }

    // t2 is announced again for N + 1 before it is mined; t3 is mined without the poller seeing it again.
    await send(raw2)
    await waitFor(
      async () => (await rowsOf(t2)).every((r) => !r.removed && r.block_number === announced + 1),
      't2 announced again for N + 1',
    )
    await send(raw3)
    const later = await devnet.mine()
    await waitCaughtUp(pool, devnet.anvilUrl)
    for (const hash of [t2, t3]) {
      const rows = await rowsOf(hash)
      expect(rows).toHaveLength(2)
      for (const row of rows)
        expect(row).toMatchObject({ status: 'confirmed', removed: false, block_hash: later.hash, block_number: Number(later.number) })
      expect(await attributionOf(hash)).toEqual([{ block_number: Number(later.number), status: 'confirmed', removed: false }])
    }

    const head = Number(later.number)
    const logs = await expectIndexMatchesNode(pool, devnet.anvilUrl, [start + 1, head])
    const attributions = await expectAttributionsMatchNode(pool, devnet.anvilUrl, [start + 1, head])
    const { rows: leftPending } = await pool.query(`SELECT count(*) AS n FROM logs WHERE status = 'pending' AND NOT removed`)
    expect(leftPending[0].n).toBe(0)
    console.info(
      `pending fault case: t1 log indexes ${firstIndexes} → ${movedUp} (drop ahead) → ${movedDown} (higher tip ahead); t0 dropped, ` +
        `t2/t3 announced for ${announced} and confirmed in ${head}; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })
})
