/**
 * Base since Denim, on the devnet's `base` profile (200 ms blocks, `timestampMs`/`blockTimestampMs`,
 * two system deposits opening every block): the backfill and the daemon store the node's milliseconds
 * everywhere and serve them back (views, API, webhook and stream payloads); deposits are never attributed.
 */
import { createServer } from 'node:http'
import { Attribution } from 'ox/erc8021'
import type { Address, Hash, Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDevnet, freePort, type Devnet } from '../harness/devnet/index.js'
import { artifacts, encodeEmitMany, fixtureClient, rawSignedTx } from '../harness/fixtures/chain.js'
import { expectIndexMatchesNode, waitFor } from './helpers/compare.js'
import { deployOnDevnet } from './helpers/devnet.js'
import { runTs, spawnTs } from '../harness/processes.js'
import { openSse } from './helpers/sse.js'
import { createTestDatabase, createTestRedisPrefix, REDIS_URL } from '../harness/services.js'

const ADMIN_TOKEN = 'test-admin-token-0123456789'

type NodeTx = { hash: Hash; type: Hex; blockTimestampMs?: Hex }
type NodeBlock = { number: Hex; hash: Hash; timestamp: Hex; timestampMs?: Hex; transactions: NodeTx[] }
type NodeLog = { blockNumber: Hex; blockHash: Hash; logIndex: Hex; transactionHash: Hash; blockTimestampMs?: Hex }

const cleanups: (() => Promise<unknown>)[] = []
let devnet: Devnet
let emitter: Address

async function rpc<T>(method: string, params: unknown[]): Promise<T> {
  const response = await fetch(devnet.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return ((await response.json()) as { result: T }).result
}

const nodeBlock = (n: number) => rpc<NodeBlock>('eth_getBlockByNumber', [`0x${n.toString(16)}`, true])
const hexToNumber = (value: Hex | undefined) => (value === undefined ? null : Number(value))

/** Mines a block holding one transaction with `code`'s suffix and one without, after the block's deposits. */
async function mineBlock(seq: number, code: string): Promise<{ attributed: Hash; plain: Hash; block: NodeBlock }> {
  const client = fixtureClient(devnet.url)
  const attributed = await client.sendRawTransaction({
    serializedTransaction: await rawSignedTx(devnet.url, {
      from: 1,
      to: emitter,
      data: encodeEmitMany(2, seq, '0x01'),
      suffix: Attribution.toDataSuffix({ codes: [code] }),
      gas: 300_000n,
    }),
  })
  const plain = await client.sendRawTransaction({
    serializedTransaction: await rawSignedTx(devnet.url, { from: 2, to: emitter, data: encodeEmitMany(1, seq + 2, '0x02'), gas: 300_000n }),
  })
  const mined = await devnet.mine()
  return { attributed, plain, block: await nodeBlock(Number(mined.number)) }
}

beforeAll(async () => {
  devnet = await createDevnet({ profile: 'base', blockTimeMs: 0 })
  cleanups.push(() => devnet.stop())
  emitter = await deployOnDevnet(devnet, artifacts.Emitter)
}, 120_000)

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

async function environment(extra: Record<string, string> = {}) {
  const db = await createTestDatabase()
  const redis = createTestRedisPrefix()
  cleanups.push(
    () => db.drop(),
    () => redis.cleanup(),
  )
  return { db, env: { RPC_URL: devnet.url, DATABASE_URL: db.url, REDIS_URL, REDIS_PREFIX: redis.prefix, JOB_LOCK_MS: '2000', ...extra } }
}

describe('block milliseconds on a Base (Denim) node', () => {
  it('npm run backfill in blocks scope stores the node’s milliseconds on every row and attributes no deposit', async () => {
    const mined = [await mineBlock(0, 'bc_backfill'), await mineBlock(10, 'bc_backfill')]
    const range: [number, number] = [Number(mined[0]!.block.number), Number(mined[1]!.block.number)]
    const { db, env } = await environment({ ATTRIBUTION_SCOPE: 'blocks' })
    const run = await runTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
    expect(run.code, run.output).toBe(0)
    await expectIndexMatchesNode(db.store.pool, devnet.url, range)
    const pool = db.store.pool

    const nodeLogs = await rpc<NodeLog[]>('eth_getLogs', [
      { fromBlock: `0x${range[0].toString(16)}`, toBlock: `0x${range[1].toString(16)}` },
    ])
    const { rows: logs } = await pool.query(
      `SELECT block_hash, log_index, block_timestamp_ms FROM analytics.logs ORDER BY block_number, log_index`,
    )
    expect(logs.map((row) => [row.block_hash, row.log_index, row.block_timestamp_ms])).toEqual(
      nodeLogs.map((log) => [log.blockHash, Number(log.logIndex), hexToNumber(log.blockTimestampMs)]),
    )
    expect(logs.every((row) => row.block_timestamp_ms !== null)).toBe(true)
    // The read-only role keeps its grants on the views redefined with the new column.
    const reader = await pool.connect()
    try {
      await reader.query('SET ROLE analytics_reader')
      const { rows: counted } = await reader.query(
        `SELECT (SELECT count(block_timestamp_ms)::int FROM analytics.logs) AS logs, (SELECT count(block_timestamp_ms)::int FROM analytics.attributed_transactions) AS attributed`,
      )
      expect(counted).toEqual([{ logs: nodeLogs.length, attributed: 2 }])
    } finally {
      await reader.query('RESET ROLE')
      reader.release()
    }

    const blocks = mined.map((m) => m.block)
    const { rows: stored } = await pool.query(
      `SELECT hash, block_timestamp_ms FROM blocks WHERE number BETWEEN $1 AND $2 ORDER BY number`,
      range,
    )
    expect(stored).toEqual(blocks.map((b) => ({ hash: b.hash, block_timestamp_ms: hexToNumber(b.timestampMs) })))

    // Every block opens with two deposits: none is a stored transaction, none is attributed.
    const deposits = blocks.flatMap((b) => b.transactions.filter((tx) => tx.type === '0x7e').map((tx) => tx.hash))
    expect(deposits).toHaveLength(4)
    const users = blocks.flatMap((b) =>
      b.transactions.filter((tx) => tx.type !== '0x7e').map((tx) => [tx.hash, hexToNumber(tx.blockTimestampMs)]),
    )
    const { rows: transactions } = await pool.query(
      `SELECT hash, block_timestamp_ms FROM transactions ORDER BY block_number, transaction_index`,
    )
    expect(transactions.map((row) => [row.hash, row.block_timestamp_ms])).toEqual(users)
    const { rows: attributed } = await pool.query(
      `SELECT tx_hash, block_timestamp_ms FROM analytics.attributed_transactions ORDER BY block_number`,
    )
    expect(attributed).toEqual(mined.map((m) => ({ tx_hash: m.attributed, block_timestamp_ms: hexToNumber(m.block.timestampMs) })))
  })

  it('a bridged deposit that emits logs and ends with a suffix: its logs are indexed, it is neither a stored transaction nor attributed', async () => {
    const client = fixtureClient(devnet.url)
    const user = await client.sendRawTransaction({
      serializedTransaction: await rawSignedTx(devnet.url, {
        from: 1,
        to: emitter,
        data: encodeEmitMany(1, 30, '0x01'),
        suffix: Attribution.toDataSuffix({ codes: ['bc_user'] }),
        gas: 300_000n,
      }),
    })
    const deposit = await rpc<Hash>('eth_sendTransaction', [
      {
        from: '0x00000000000000000000000000000000000b71d6',
        to: emitter,
        sourceHash: `0x${'5d'.repeat(32)}`,
        mint: '0x0',
        value: '0x0',
        gas: '0x493e0',
        isSystemTx: false,
        input: `${encodeEmitMany(2, 31, '0x02')}${Attribution.toDataSuffix({ codes: ['bc_deposit'] }).slice(2)}`,
      },
    ])
    const mined = await devnet.mine()
    const block = await nodeBlock(Number(mined.number))
    expect(block.transactions.find((tx) => tx.hash === deposit)?.type).toBe('0x7e')
    const range: [number, number] = [Number(block.number), Number(block.number)]
    const { db, env } = await environment()
    const run = await runTs('scripts/backfill.ts', ['--from', String(range[0]), '--to', String(range[1])], env)
    expect(run.code, run.output).toBe(0)
    await expectIndexMatchesNode(db.store.pool, devnet.url, range)
    const { rows: logs } = await db.store.pool.query(`SELECT DISTINCT transaction_hash FROM logs`)
    expect(logs.map((row) => row.transaction_hash).sort()).toEqual([user, deposit].sort())
    const { rows: transactions } = await db.store.pool.query(`SELECT hash FROM transactions`)
    expect(transactions).toEqual([{ hash: user }])
    const { rows: attributed } = await db.store.pool.query(`SELECT tx_hash, builder_code FROM attributions`)
    expect(attributed).toEqual([{ tx_hash: user, builder_code: 'bc_user' }])
  })

  it('the daemon stores the node’s milliseconds at the tip and serves them in the API, webhooks and the stream', async () => {
    const port = await freePort()
    const api = `http://127.0.0.1:${port}`
    const received: any[] = []
    const receiver = createServer((request, response) => {
      let raw = ''
      request.on('data', (chunk: Buffer) => (raw += chunk.toString()))
      request.on('end', () => (received.push(JSON.parse(raw)), response.writeHead(204).end()))
    })
    const receiverPort = await freePort()
    await new Promise<void>((resolve) => receiver.listen(receiverPort, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => (receiver.closeAllConnections(), receiver.close(resolve))))
    const { db, env } = await environment({
      START_BLOCK: String(Number(await fixtureClient(devnet.url).getBlockNumber()) + 1),
      HEAD_POLL_MS: '100',
      PORT: String(port),
      ADMIN_TOKEN,
      // The receiver listens on 127.0.0.1.
      WEBHOOK_ALLOW_PRIVATE: '1',
    })
    const daemon = spawnTs('src/main.ts', [], env)
    cleanups.push(() => daemon.kill('SIGKILL'))
    await waitFor(async () => (await fetch(`${api}/healthz`).catch(() => null))?.ok === true, 'the API')
    const created = await fetch(`${api}/v1/webhooks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`, events: ['attribution.confirmed'] }),
    })
    expect(created.status).toBe(201)
    const stream = openSse(`${api}/v1/stream?builderCode=bc_tip`)
    cleanups.push(async () => stream.close())
    await stream.opened

    const { attributed, block } = await mineBlock(20, 'bc_tip')
    const ms = hexToNumber(block.timestampMs)
    expect(ms).not.toBeNull()
    await waitFor(async () => received.some((event) => event.data.txHash === attributed), 'the webhook', 30_000)
    await waitFor(async () => stream.messages.some((m) => m.data.type === 'attribution.confirmed'), 'the stream', 30_000)

    expect(received.find((event) => event.data.txHash === attributed).data).toMatchObject({
      blockNumber: Number(block.number),
      blockTimestampMs: ms,
    })
    expect(stream.messages.find((m) => m.data.type === 'attribution.confirmed')!.data.data).toMatchObject({
      txHash: attributed,
      blockTimestampMs: ms,
    })
    const items = (await (await fetch(`${api}/v1/attributions?builderCode=bc_tip`)).json()).items
    expect(items.map((item: any) => [item.txHash, item.blockTimestamp, item.blockTimestampMs])).toEqual([
      [attributed, new Date(Number(block.timestamp) * 1000).toISOString(), ms],
    ])
    const tx = await (await fetch(`${api}/v1/transactions/${attributed}/attribution`)).json()
    expect(tx).toMatchObject({ hash: attributed, blockTimestampMs: ms })
    const logs = (await (await fetch(`${api}/v1/logs?fromBlock=${Number(block.number)}&toBlock=${Number(block.number)}`)).json()).items
    expect(logs).toHaveLength(3)
    expect(logs.map((log: any) => log.blockTimestampMs)).toEqual([ms, ms, ms])
    const { rows } = await db.store.pool.query(`SELECT block_timestamp_ms FROM blocks WHERE hash = $1`, [block.hash])
    expect(rows).toEqual([{ block_timestamp_ms: ms }])
  })
})
