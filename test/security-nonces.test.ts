/**
 * Public registration must not cost node calls for ever: the scheduler's nonce refresh reads only
 * wallets active recently (registered, or sending with their code, within a day), least recently
 * checked first, at most its per-minute budget. Against anvil, counting the calls the client sends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NONCE_WALLETS_PER_MINUTE, refreshWalletNonces } from '../src/attribution/coverage.js'
import { startAnvil, type Anvil } from '../harness/devnet/anvil.js'
import { createRpcClient } from '../src/rpc/index.js'
import { createTestDatabase, type TestDatabase } from '../harness/services.js'

const CHAIN_ID = 31337
let db: TestDatabase
let anvil: Anvil

beforeAll(async () => {
  ;[db, anvil] = await Promise.all([createTestDatabase(), startAnvil()])
})

afterAll(async () => {
  await anvil?.stop()
  await db?.drop()
})

const wallet = (n: number) => `0x${n.toString(16).padStart(40, '0')}`
const code = (n: number) => `bc_${n.toString(16).padStart(8, '0')}`

describe('wallet nonce refresh', () => {
  it('reads only recently active wallets, least recently checked first, at most the budget per refresh', async () => {
    const pool = db.store.pool
    // 40 registered just now, 5 registered two days ago that sent with their code an hour ago, 50 idle for two days.
    const insert = (from: number, to: number, createdAgo: string) =>
      pool.query(
        `INSERT INTO builder_codes (chain_id, builder_code, wallet_address, source, created_at)
         SELECT $1, 'bc_' || lpad(to_hex(i), 8, '0'), '0x' || lpad(to_hex(i), 40, '0'), 'local', now() - $4::interval
         FROM generate_series($2::int, $3::int) AS i`,
        [CHAIN_ID, from, to, createdAgo],
      )
    await insert(1, 40, '0 seconds')
    await insert(41, 45, '2 days')
    await insert(46, 95, '2 days')
    for (let n = 41; n <= 45; n++)
      await pool.query(
        `INSERT INTO builder_code_senders (chain_id, builder_code, sender, n, last_seen) VALUES ($1, $2, $3, 1, now() - interval '1 hour')`,
        [CHAIN_ID, code(n), wallet(n)],
      )
    // An idle wallet that did send, but long ago.
    await pool.query(
      `INSERT INTO builder_code_senders (chain_id, builder_code, sender, n, last_seen) VALUES ($1, $2, $3, 1, now() - interval '3 days')`,
      [CHAIN_ID, code(46), wallet(46)],
    )

    let calls = 0
    const rpc = createRpcClient({
      url: anvil.url,
      onRequest: (event) => (calls += event.method === 'eth_getTransactionCount' ? event.calls : 0),
    })
    const context = { pool, chainId: CHAIN_ID, batch: <T>(batch: Parameters<typeof rpc.batch>[0]) => rpc.batch<T>(batch) }
    const checked = async () =>
      (
        await pool.query<{ wallet_address: string }>(
          `SELECT wallet_address FROM wallet_nonces WHERE chain_id = $1 ORDER BY wallet_address`,
          [CHAIN_ID],
        )
      ).rows.map((row) => row.wallet_address)

    const perRefresh = Math.ceil(NONCE_WALLETS_PER_MINUTE / 4)
    expect(await refreshWalletNonces(context, perRefresh)).toBe(perRefresh)
    expect(calls).toBe(2 * perRefresh)
    // The next refresh takes the 15 active wallets never checked first, then the oldest checks.
    expect(await refreshWalletNonces(context, perRefresh)).toBe(perRefresh)
    expect(calls).toBe(4 * perRefresh)
    const active = Array.from({ length: 45 }, (_, i) => wallet(i + 1)).sort()
    expect(await checked()).toEqual(active)

    // Idle wallets never cost a call, however many refreshes run.
    for (let i = 0; i < 3; i++) await refreshWalletNonces(context, perRefresh)
    expect((await checked()).filter((address) => !active.includes(address))).toEqual([])
    expect(calls).toBe(10 * perRefresh)
  })
})
