/**
 * Fault case: the node unreachable (connections refused) for 30 s during live follow, then back.
 * Run: npx vitest run --config vitest.faults.config.ts test/faults/outage.test.ts
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { startAnvil } from '../../harness/devnet/anvil.js'
import { expectIndexMatchesNode } from '../helpers/compare.js'
import { spawnTs } from '../../harness/processes.js'
import { expectAttributionsMatchNode } from './helpers/nodeCompare.js'
import { buildAttributedChain, createCleanups, nodeHead, sharedEnvironment, waitCaughtUp } from './helpers/faultChain.js'
import { startNodeGate } from './helpers/endpoints.js'

const OUTAGE_MS = 30_000
/** While the node is unreachable, the chain goes on: a burst of blocks every this long. */
const BURST_EVERY_MS = 5_000

const cleanups = createCleanups()
afterAll(() => cleanups.run())

describe('the node unreachable for 30 s during live follow', () => {
  it('keeps the daemon up, then catches up with every log and attribution of the node', async () => {
    const anvil = await startAnvil()
    cleanups.add(() => anvil.stop())
    const { emitter } = await buildAttributedChain(anvil.url, { blocks: 3, txsPerBlock: 2, logsPerTx: 4 })
    const gate = await startNodeGate(anvil.url)
    cleanups.add(() => gate.stop())
    const start = (await nodeHead(anvil.url)).number + 1
    const { pool, env } = await sharedEnvironment(cleanups, gate.url, { START_BLOCK: String(start), LOG_LEVEL: 'warn' })
    const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
    cleanups.add(() => daemon.kill('SIGKILL'))

    await buildAttributedChain(anvil.url, { blocks: 4, txsPerBlock: 2, logsPerTx: 4, emitter }, 10)
    await waitCaughtUp(pool, anvil.url)
    const before = (await nodeHead(anvil.url)).number

    await gate.cut()
    const cutAt = Date.now()
    let bursts = 0
    while (Date.now() - cutAt < OUTAGE_MS - BURST_EVERY_MS) {
      await buildAttributedChain(anvil.url, { blocks: 3, txsPerBlock: 2, logsPerTx: 4, emitter }, 100 + bursts * 6)
      bursts++
      await sleep(BURST_EVERY_MS)
    }
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - cutAt)))
    const { rows } = await pool.query('SELECT live_block FROM chain_state')
    // Nothing could be read while the node was unreachable, and the daemon did not give up.
    expect(rows[0].live_block).toBe(before)
    expect(daemon.child.exitCode).toBeNull()
    const duringOutage = (await nodeHead(anvil.url)).number - before

    await gate.restore()
    const restoredAt = Date.now()
    await waitCaughtUp(pool, anvil.url, 120_000)
    const recoverySeconds = (Date.now() - restoredAt) / 1000

    const head = (await nodeHead(anvil.url)).number
    const logs = await expectIndexMatchesNode(pool, anvil.url, [start, head])
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, [start, head])
    console.info(
      `outage fault case: node unreachable ${((restoredAt - cutAt) / 1000).toFixed(1)} s while ${duringOutage} blocks were mined; ` +
        `caught up ${recoverySeconds.toFixed(1)} s after it came back; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })
})
