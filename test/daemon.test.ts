import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Attribution } from 'ox/erc8021'
import { startAnvil, freePort, type Anvil } from '../harness/devnet/anvil.js'
import { createBuilderCodeClient } from '../src/api/index.js'
import { anvilAccount, buildChain, fixtureClient } from '../harness/fixtures/chain.js'
import { waitFor } from './helpers/compare.js'
import { spawnTs, type Spawned } from '../harness/processes.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL, type TestDatabase } from '../harness/services.js'

const cleanups: (() => Promise<unknown>)[] = []
let anvil: Anvil
let db: TestDatabase
let daemon: Spawned
let api: string

beforeAll(async () => {
  anvil = await startAnvil()
  db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => anvil.stop(),
    () => db.drop(),
    () => redis.cleanup(),
  )
  const port = await freePort()
  api = `http://127.0.0.1:${port}`
  daemon = spawnTs('src/main.ts', [], {
    RPC_URL: anvil.url,
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_PREFIX: redis.prefix,
    START_BLOCK: '0',
    HEAD_POLL_MS: '100',
    PENDING_POLL_MS: '0',
    PORT: String(port),
    LOG_LEVEL: 'info',
  })
  cleanups.push(() => daemon.kill('SIGKILL'))
  await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API')
})

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

describe('the daemon with every role', () => {
  it('registers an agent, indexes its attributed transactions from the node and serves them', async () => {
    const agent = anvilAccount(3)
    const client = createBuilderCodeClient(api)
    const registered = await client.register(agent.address.toUpperCase().replace('0X', '0x'))
    expect(registered.walletAddress).toBe(agent.address.toLowerCase())
    expect(registered.builderCode).toMatch(/^bc_[a-z0-9]{8}$/)
    expect(await client.register(agent.address)).toEqual(registered)

    const suffix = Attribution.toDataSuffix({ codes: [registered.builderCode] })
    const { txHashes } = await buildChain(anvil.url, {
      blocks: 3,
      txsPerBlock: 2,
      senders: [3],
      suffix: (i) => (i % 2 === 0 ? suffix : undefined),
    })
    const attributed = txHashes.filter((_, i) => i % 2 === 0)

    const head = Number(await fixtureClient(anvil.url).getBlockNumber())
    await waitFor(async () => {
      const response = await fetch(`${api}/v1/attributions?builderCode=${registered.builderCode}`)
      const body = (await response.json()) as { items: unknown[] }
      return body.items.length === attributed.length
    }, 'the attributions')
    const { items } = (await (await fetch(`${api}/v1/attributions?builderCode=${registered.builderCode}`)).json()) as {
      items: { txHash: string; walletAddress: string; builderCode: string; status: string; removed: boolean }[]
    }
    expect(items.map((item) => item.txHash).sort()).toEqual([...attributed].sort())
    for (const item of items)
      expect(item).toMatchObject({ walletAddress: agent.address.toLowerCase(), status: 'confirmed', removed: false })

    const detail = await fetch(`${api}/v1/transactions/${attributed[0]}/attribution`)
    expect(detail.status).toBe(200)
    expect(JSON.stringify(await detail.json())).toContain(registered.builderCode)

    await waitFor(async () => (await fetch(`${api}/readyz`)).status === 200, 'readiness')
    const ready = (await (await fetch(`${api}/readyz`)).json()) as { sync: { headBlock: number; lagBlocks: number } }
    expect(ready.sync.headBlock).toBeGreaterThanOrEqual(head)
    const metrics = await (await fetch(`${api}/metrics`)).text()
    expect(metrics).toMatch(/codetrail_logs_ingested_total\{[^}]*status="confirmed"[^}]*\} [1-9]/)
    expect(metrics).toMatch(/codetrail_rpc_calls_total\{method="eth_getLogs"\} [1-9]/)

    // Wallet coverage: the agent sent six transactions, three of them with its code.
    await waitFor(
      async () => {
        const { rows } = await db.store.pool.query(`SELECT latest_nonce FROM analytics.wallet_coverage WHERE wallet_address = $1`, [
          agent.address.toLowerCase(),
        ])
        return rows[0]?.latest_nonce === txHashes.length
      },
      'the wallet coverage',
      40_000,
      500,
    )
    const { rows: coverage } = await db.store.pool.query(`SELECT * FROM analytics.wallet_coverage WHERE wallet_address = $1`, [
      agent.address.toLowerCase(),
    ])
    expect(coverage[0]).toMatchObject({
      builder_code: registered.builderCode,
      pending_nonce: 6,
      attributed_confirmed: 3,
      attributed_with_pending: 3,
      coverage: '0.5000',
    })

    const bad = await fetch(`${api}/v1/attributions?fromBlock=nope`)
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } })
  })

  it('stops gracefully on SIGTERM', async () => {
    expect(await daemon.kill('SIGTERM')).toBe(0)
    expect(daemon.output()).toContain('"msg":"stopped"')
    await expect(fetch(`${api}/healthz`)).rejects.toThrow()
  })
})
