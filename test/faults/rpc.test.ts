/**
 * Fault cases: a faulty node interface. Range caps with and without a suggested range, 10 % HTTP 429,
 * answers slower than the client's timeout, result-size refusals, malformed JSON, whole batches refused
 * for any call over a rate limit, and a node lagging behind another behind a load balancer. Each backfill
 * or follower goes through the fault and ends compared with the node itself.
 * Run: npx vitest run --config vitest.faults.config.ts test/faults/rpc.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Address } from 'viem'
import { startAnvil, type Anvil } from '../../harness/devnet/anvil.js'
import { startFaultProxy, type Faults } from '../../harness/fixtures/faultProxy.js'
import { expectIndexMatchesNode, waitFor } from '../helpers/compare.js'
import { runTs, spawnTs } from '../../harness/processes.js'
import { blocksDifferingFromNode, expectAttributionsMatchNode } from './helpers/nodeCompare.js'
import { buildAttributedChain, createCleanups, mineEmpty, nodeHead, sharedEnvironment, waitCaughtUp } from './helpers/faultChain.js'
import { startFlakyEdge, startLaggingNode, startLoadBalancer, type EdgeFaults } from './helpers/endpoints.js'

const cleanups = createCleanups()
let anvil: Anvil
let emitter: Address
let range: [number, number]

beforeAll(async () => {
  anvil = await startAnvil()
  cleanups.add(() => anvil.stop())
  const chain = await buildAttributedChain(anvil.url, { blocks: 40, txsPerBlock: 3, logsPerTx: 6 })
  emitter = chain.emitter
  await mineEmpty(anvil.url, 3)
  range = [0, Number(chain.toBlock) + 3]
})
afterAll(() => cleanups.run())

/** Backfills `range` through `rpcUrl`; resolves once the backfill exited 0 and the index equals the node. */
async function backfillThrough(rpcUrl: string, extraEnv: Record<string, string> = {}) {
  const { pool, env } = await sharedEnvironment(cleanups, rpcUrl, { CHUNK_BLOCKS: '10', ...extraEnv })
  const started = Date.now()
  const result = await runTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
  const seconds = (Date.now() - started) / 1000
  expect(result.code, result.output).toBe(0)
  const logs = await expectIndexMatchesNode(pool, anvil.url, range)
  const attributions = await expectAttributionsMatchNode(pool, anvil.url, range)
  return { pool, env, logs, attributions, seconds }
}

/** A backfill through the fault proxy (faults per JSON-RPC call, `eth_getLogs` ranges and results). */
async function backfillThroughProxy(faults: Faults, extraEnv: Record<string, string> = {}) {
  const proxy = await startFaultProxy({ upstream: anvil.url, faults, seed: 7 })
  cleanups.add(() => proxy.stop())
  return { proxy, ...(await backfillThrough(proxy.url, extraEnv)) }
}

/** A backfill through an edge failing a share of HTTP requests. */
async function backfillThroughEdge(faults: EdgeFaults, extraEnv: Record<string, string> = {}) {
  const edge = await startFlakyEdge({ upstream: anvil.url, faults, seed: 7 })
  cleanups.add(() => edge.stop())
  // Small chunks: more requests, so a 10 % fault meets the backfill several times.
  return { edge, ...(await backfillThrough(edge.url, { CHUNK_BLOCKS: '3', ...extraEnv })) }
}

/** A scheduler following the chain from `start` through `rpcUrl` into a fresh database (killed at the end if still running). */
async function followThrough(rpcUrl: string, start: number) {
  const { pool, env } = await sharedEnvironment(cleanups, rpcUrl, { START_BLOCK: String(start) })
  const daemon = spawnTs('src/main.ts', ['--role', 'scheduler'], env)
  cleanups.add(() => daemon.kill('SIGKILL'))
  return { pool, daemon }
}

function report(name: string, outcome: { logs: number; attributions: number; seconds: number }, faults: Partial<Record<string, number>>) {
  const injected = Object.entries(faults)
    .map(([fault, n]) => `${fault} ×${n}`)
    .join(', ')
  console.info(
    `rpc fault case "${name}": ${injected}; backfill exited 0 in ${outcome.seconds.toFixed(1)} s; ${outcome.logs} logs, ${outcome.attributions} attributions equal the node's`,
  )
}

describe('a faulty node interface during a backfill', () => {
  it.each([
    ['suggested range (Alchemy wording)', { suggestedRange: { maxBlocks: 3 } }, 'suggestedRange'],
    ['suggested range (Infura wording)', { suggestedRange: { maxBlocks: 3, style: 'infura' } }, 'suggestedRange'],
    ['fixed cap named in the error', { fixedCap: { maxBlocks: 4 } }, 'fixedCap'],
    ['cap without any hint', { hintlessCap: { maxBlocks: 4 } }, 'hintlessCap'],
  ] as const)('range cap: %s', async (name, getLogsFaults, fault) => {
    const outcome = await backfillThroughProxy({ eth_getLogs: getLogsFaults })
    const refusals = outcome.proxy.faultCount(fault)
    report(name, outcome, { [fault]: refusals })
    expect(refusals).toBeGreaterThan(0)
    // Every log came from an answered range no wider than the cap.
    const answered = outcome.proxy.stats.getLogsRanges.filter((r) => r.fault === undefined)
    expect(answered.every((r) => r.toBlock - r.fromBlock + 1 <= (name.startsWith('suggested') ? 3 : 4))).toBe(true)
  })

  it('10 % of HTTP requests answered 429', async () => {
    const outcome = await backfillThroughEdge({ rateLimit: 0.1 })
    report('10 % HTTP 429', outcome, { rateLimit: outcome.edge.injected.rateLimit, requests: outcome.edge.requests() })
    expect(outcome.edge.injected.rateLimit).toBeGreaterThan(0)
  })

  it('answers slower than the client timeout', async () => {
    const outcome = await backfillThroughEdge({ slow: { probability: 0.1, delayMs: 2_500 } }, { RPC_TIMEOUT_MS: '800' })
    report('slow answers beyond the 800 ms timeout', outcome, { slow: outcome.edge.injected.slow, requests: outcome.edge.requests() })
    expect(outcome.edge.injected.slow).toBeGreaterThan(0)
  })

  it('result-size refusals: too many results and too many bytes', async () => {
    const outcome = await backfillThroughProxy({ eth_getLogs: { maxResults: 60, maxResponseBytes: 15_000 } })
    const counts = { maxResults: outcome.proxy.faultCount('maxResults'), maxResponseBytes: outcome.proxy.faultCount('maxResponseBytes') }
    report('result-size refusals', outcome, counts)
    expect(counts.maxResults).toBeGreaterThan(0)
    expect(counts.maxResponseBytes).toBeGreaterThan(0)
  })

  it('malformed JSON in 10 % of answers', async () => {
    const outcome = await backfillThroughEdge({ malformed: 0.1 })
    report('malformed JSON', outcome, { malformed: outcome.edge.injected.malformed, requests: outcome.edge.requests() })
    expect(outcome.edge.injected.malformed).toBeGreaterThan(0)
  })

  it('live follow through 10 % HTTP 429 and 5 % malformed answers', async () => {
    const edge = await startFlakyEdge({ upstream: anvil.url, faults: { rateLimit: 0.1, malformed: 0.05 }, seed: 11 })
    cleanups.add(() => edge.stop())
    const start = (await nodeHead(anvil.url)).number + 1
    const { pool, daemon } = await followThrough(edge.url, start)
    for (let burst = 0; burst < 8; burst++) {
      await buildAttributedChain(anvil.url, { blocks: 2, txsPerBlock: 2, logsPerTx: 4, emitter }, 100 + burst * 4)
      await waitCaughtUp(pool, anvil.url)
    }
    const head = (await nodeHead(anvil.url)).number
    const logs = await expectIndexMatchesNode(pool, anvil.url, [start, head])
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, [start, head])
    console.info(
      `rpc fault case "live follow": rateLimit ×${edge.injected.rateLimit}, malformed ×${edge.injected.malformed} of ${edge.requests()} requests; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(edge.injected.rateLimit).toBeGreaterThan(0)
    expect(edge.injected.malformed).toBeGreaterThan(0)
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })

  it('live follow catching up through a node that refuses a whole batch when any of its calls is over the limit', async () => {
    // A quarter of eth_getBlockByNumber calls over the limit, each refusing the request it came in (HTTP 429):
    // the catch-up's batch of every block behind gets through whole about once in a million tries.
    const proxy = await startFaultProxy({
      upstream: anvil.url,
      faults: { eth_getBlockByNumber: { rateLimit: { probability: 0.25 } } },
      seed: 5,
    })
    cleanups.add(() => proxy.stop())
    const start = range[0] + 1
    const { pool, daemon } = await followThrough(proxy.url, start)
    await waitCaughtUp(pool, anvil.url)
    const head = (await nodeHead(anvil.url)).number
    const logs = await expectIndexMatchesNode(pool, anvil.url, [start, head])
    const attributions = await expectAttributionsMatchNode(pool, anvil.url, [start, head])
    const refused = proxy.faultCount('rateLimit')
    console.info(
      `rpc fault case "batches refused whole": rateLimit ×${refused} of ${proxy.stats.httpRequests} requests; caught up ${head - start + 1} blocks; ${logs} logs, ${attributions} attributions equal the node's`,
    )
    expect(refused).toBeGreaterThan(0)
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })
})

describe('a node lagging behind another, behind a load balancer', () => {
  const LAG = 8

  it('backfill up to the leading node’s head never records a block done with missing logs', async () => {
    await buildAttributedChain(anvil.url, { blocks: LAG + 4, txsPerBlock: 2, logsPerTx: 4, emitter }, 500)
    const lagging = await startLaggingNode({ upstream: anvil.url, lagBlocks: LAG })
    const balancer = await startLoadBalancer([anvil.url, lagging.url])
    cleanups.add(
      () => lagging.stop(),
      () => balancer.stop(),
    )
    const head = (await nodeHead(anvil.url)).number
    const { pool, env } = await sharedEnvironment(cleanups, balancer.url, { CHUNK_BLOCKS: '1', WORKER_CONCURRENCY: '3' })
    const result = await runTs('scripts/backfill.ts', ['--from', String(head - 2 * LAG), '--to', String(head)], env)
    expect(result.code, result.output).toBe(0)
    console.info(
      `rpc fault case "lagging node, backfill": ${lagging.logsBeyondHead} eth_getLogs answered past the lagging head, ${lagging.nullsBeyondHead} nulls; ` +
        `requests per upstream ${balancer.requests.join('/')}; blocks differing from the node: ${JSON.stringify(await blocksDifferingFromNode(pool, anvil.url, [head - 2 * LAG, head]))}`,
    )
    expect(lagging.logsBeyondHead).toBeGreaterThan(0)
    await expectIndexMatchesNode(pool, anvil.url, [head - 2 * LAG, head])
    await expectAttributionsMatchNode(pool, anvil.url, [head - 2 * LAG, head])
  })

  it('live follow never records a block done with missing logs', async () => {
    const lagging = await startLaggingNode({ upstream: anvil.url, lagBlocks: 2 })
    const balancer = await startLoadBalancer([anvil.url, lagging.url])
    cleanups.add(
      () => lagging.stop(),
      () => balancer.stop(),
    )
    const start = (await nodeHead(anvil.url)).number + 1
    const { pool, daemon } = await followThrough(balancer.url, start)
    const liveBlock = async () => (await pool.query('SELECT live_block FROM chain_state')).rows[0]?.live_block ?? -1
    // Blocks with logs one at a time until the follower has asked the lagging node past its head a few times.
    for (let burst = 0; burst < 40 && lagging.logsBeyondHead < 3; burst++) {
      await buildAttributedChain(anvil.url, { blocks: 1, txsPerBlock: 2, logsPerTx: 3, emitter }, 700 + burst * 2)
      const laggingHead = (await nodeHead(anvil.url)).number - 2
      await waitFor(async () => (await liveBlock()) >= laggingHead, 'the follower to reach the lagging head')
    }
    // The lagging node catches up; so must the follower.
    lagging.setLag(0)
    await waitCaughtUp(pool, anvil.url)
    const head = (await nodeHead(anvil.url)).number
    console.info(
      `rpc fault case "lagging node, live follow": ${lagging.logsBeyondHead} eth_getLogs answered past the lagging head, ${lagging.nullsBeyondHead} nulls; ` +
        `requests per upstream ${balancer.requests.join('/')}; blocks differing from the node: ${JSON.stringify(await blocksDifferingFromNode(pool, anvil.url, [start, head]))}`,
    )
    expect(lagging.logsBeyondHead).toBeGreaterThan(0)
    await expectIndexMatchesNode(pool, anvil.url, [start, head])
    await expectAttributionsMatchNode(pool, anvil.url, [start, head])
    expect(await daemon.kill('SIGTERM')).toBe(0)
  })
})
