/**
 * The machine's own limits on the fixture, measured with the plainest clients: `eth_getLogs` plus the
 * bodies of the transactions behind the logs (what any indexer with attribution must fetch), and
 * PostgreSQL `COPY` of the very rows codetrail stores. Both run as concurrently as codetrail's workers
 * do, so each is a ceiling for the backfill, not a strawman.
 */
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import copyStreams from 'pg-copy-streams'
import { readsWholeBlock, slicesOf } from '../../src/attribution/nodeReads.js'
import { copyStatement, LOG_COPY_COLUMNS, toCopyData, toLogRows, type LogInput } from '../../src/store/logRows.js'
import { cpuSecondsOf, startCpuCount } from './processStats.js'
import { blockChunks, createRawRpc, hex } from './rawRpc.js'

/**
 * How transaction bodies are read: by hash (`eth_getTransactionByHash`, 100 per batch), whole blocks
 * (`eth_getBlockByNumber(n, true)`, about 100 transactions per batch), or each block the way its share
 * of indexed transactions makes cheaper, by codetrail's rule (`readsWholeBlock`).
 */
export type BodyRead = 'by-hash' | 'by-block' | 'by-share'
const TRANSACTIONS_PER_BATCH = 100

export type RpcLimitParameters = {
  rpcUrl: string
  range: [number, number]
  chunkBlocks: number
  /** Requests in flight at once, logs and bodies alike: codetrail's WORKER_CONCURRENCY. */
  concurrency: number
  bodies: BodyRead
  /** The node's pid, to count its CPU time. */
  nodePid?: number | undefined
}

export type RpcLimit = {
  bodies: BodyRead
  logs: number
  transactions: number
  /** JSON-RPC calls and HTTP requests sent. */
  calls: number
  requests: number
  ms: number
  /** Logs of the whole range per second. */
  logsPerSec: number
  /** CPU seconds the node spent answering, when its pid was given. */
  nodeCpuSec: number | undefined
  /** CPU seconds of this client (receiving and parsing). */
  clientCpuSec: number
}

type Task = () => Promise<void>

/**
 * `eth_getLogs` over the range in chunks and the bodies of the transactions behind each chunk's logs,
 * overlapped: `concurrency` runners take requests from one queue in which a chunk's body batches go
 * ahead of the chunks not asked for yet, so logs and bodies are in flight together as in codetrail's
 * workers, and what is held in memory stays a few chunks.
 */
export async function measureRpcLimit({ rpcUrl, range, chunkBlocks, concurrency, bodies, nodePid }: RpcLimitParameters): Promise<RpcLimit> {
  const rpc = createRawRpc(rpcUrl, concurrency)
  const cpuSpent = startCpuCount(nodePid)
  try {
    let logs = 0
    let transactions = 0
    let calls = 0
    let requests = 0
    let bodyBytes = 0
    const bodyBatches: Task[] = []
    const chunks = blockChunks(range[0], range[1], chunkBlocks)
    const readBodies = (blocks: Map<number, { hashes: Set<string>; leastSize: number }>) => {
      const whole = [...blocks].filter(
        ([, b]) => bodies === 'by-block' || (bodies === 'by-share' && readsWholeBlock(b.hashes.size, b.leastSize)),
      )
      const sizeAt = new Map(whole.map(([n, b]) => [n, b.leastSize]))
      const hashes = [...blocks].filter(([n]) => !sizeAt.has(n)).flatMap(([, b]) => [...b.hashes])
      // Whole blocks in batches of about 100 transactions, as codetrail batches them.
      for (const slice of slicesOf([...sizeAt.keys()], TRANSACTIONS_PER_BATCH, (n) => sizeAt.get(n)!)) {
        bodyBatches.push(async () => {
          const answers = await rpc.batch<{ transactions: { input: string }[] } | null>(
            slice.map((n) => ({ method: 'eth_getBlockByNumber', params: [hex(n), true] })),
          )
          calls += slice.length
          requests++
          for (const block of answers) for (const tx of block?.transactions ?? []) bodyBytes += tx.input.length
        })
      }
      for (const slice of slicesOf(hashes, TRANSACTIONS_PER_BATCH)) {
        bodyBatches.push(async () => {
          const txs = await rpc.batch<{ input: string } | null>(
            slice.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })),
          )
          calls += slice.length
          requests++
          for (const tx of txs) bodyBytes += tx?.input.length ?? 0
        })
      }
    }
    const next = (): Task | undefined => {
      const body = bodyBatches.shift()
      if (body) return body
      const chunk = chunks.shift()
      if (!chunk) return undefined
      return async () => {
        const answer = await rpc.call<LogInput[]>('eth_getLogs', [{ fromBlock: hex(chunk[0]), toBlock: hex(chunk[1]) }])
        calls++
        requests++
        logs += answer.length
        const blocks = new Map<number, { hashes: Set<string>; leastSize: number }>()
        for (const log of answer) {
          const number = Number(log.blockNumber)
          const block = blocks.get(number) ?? { hashes: new Set<string>(), leastSize: 0 }
          block.hashes.add(log.transactionHash!)
          block.leastSize = Math.max(block.leastSize, Number(log.transactionIndex) + 1)
          blocks.set(number, block)
        }
        for (const block of blocks.values()) transactions += block.hashes.size
        readBodies(blocks)
      }
    }
    const started = performance.now()
    // A runner stops once nothing is queued; a chunk still in flight may queue bodies after that, so runners start again until all is done.
    let running = 0
    await new Promise<void>((resolve, reject) => {
      const pump = () => {
        while (running < concurrency) {
          const task = next()
          if (!task) break
          running++
          task().then(() => {
            running--
            pump()
          }, reject)
        }
        if (running === 0) resolve()
      }
      pump()
    })
    const ms = performance.now() - started
    if (bodyBytes === 0 && transactions > 0) throw new Error('the node returned no transaction inputs')
    return {
      bodies,
      logs,
      transactions,
      calls,
      requests,
      ms,
      logsPerSec: (logs / ms) * 1000,
      ...cpuSpent(),
    }
  } finally {
    rpc.close()
  }
}

export type CopyLimitParameters = {
  rpcUrl: string
  pool: pg.Pool
  chainId: number
  range: [number, number]
  chunkBlocks: number
  /** `COPY` streams at once, one connection each: codetrail's WORKER_CONCURRENCY. */
  streams: number
  /** `unindexed` (the limit): a plain table of the same columns; `logs`: codetrail's own table with its indexes (migrated database). */
  table: 'unindexed' | 'logs'
}

export type CopyLimit = {
  rows: number
  streams: number
  copyMs: number
  rowsPerSec: number
  tableMiB: number
  /** CPU seconds of the database backends over the timed `COPY`s. */
  backendCpuSec: number | undefined
}

const COPY_TABLE = 'bench_raw_copy'

/**
 * `COPY FROM STDIN` of the fixture's rows, exactly as codetrail renders them (`toLogRows`,
 * `toCopyData`, binary), one statement per chunk, `streams` chunks at once on as many connections,
 * into a table with the same columns and no index (or into codetrail's `logs`, to see what its
 * indexes cost). Only the `COPY`s are timed: each round's chunks are fetched and rendered first, then
 * copied together.
 */
export async function measureCopyLimit({
  rpcUrl,
  pool,
  chainId,
  range,
  chunkBlocks,
  streams,
  table: kind,
}: CopyLimitParameters): Promise<CopyLimit> {
  const table = kind === 'logs' ? 'logs' : COPY_TABLE
  const rpc = createRawRpc(rpcUrl, streams)
  const clients = await Promise.all(Array.from({ length: streams }, () => pool.connect()))
  try {
    const backendPids = await Promise.all(
      clients.map(async (client) => (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid),
    )
    // Null when the database runs elsewhere (no /proc entry for its backends).
    const backendCpu = (): number | null => {
      let sum = 0
      for (const pid of backendPids) {
        const seconds = cpuSecondsOf(pid)
        if (seconds === null) return null
        sum += seconds
      }
      return sum
    }
    if (kind === 'unindexed') {
      await clients[0]!.query(`DROP TABLE IF EXISTS ${COPY_TABLE}`)
      await clients[0]!.query(
        `CREATE TABLE ${COPY_TABLE} (chain_id integer NOT NULL, block_number bigint NOT NULL, block_hash text NOT NULL,
        block_timestamp timestamptz NOT NULL, transaction_hash text NOT NULL, transaction_index integer NOT NULL,
        log_index integer NOT NULL, tx_log_ordinal integer NOT NULL, address text NOT NULL, topic0 text, topic1 text,
        topic2 text, topic3 text, data text NOT NULL, status text NOT NULL, block_timestamp_ms bigint)`,
      )
    }
    let rows = 0
    let copyMs = 0
    let backendCpuSec: number | undefined = 0
    const chunks = blockChunks(range[0], range[1], chunkBlocks)
    for (let i = 0; i < chunks.length; i += streams) {
      const round = chunks.slice(i, i + streams)
      const rendered = await Promise.all(
        round.map(async ([from, to]) => {
          const logRows = toLogRows(await rpc.call<LogInput[]>('eth_getLogs', [{ fromBlock: hex(from), toBlock: hex(to) }]))
          rows += logRows.length
          return [...copyStatement(toCopyData(logRows, chainId, () => 'confirmed'))]
        }),
      )
      const cpuBefore = backendCpu()
      const started = performance.now()
      await Promise.all(
        rendered.map((pieces, k) =>
          pipeline(
            Readable.from(pieces),
            clients[k]!.query(copyStreams.from(`COPY ${table} (${LOG_COPY_COLUMNS.join(', ')}) FROM STDIN (FORMAT binary)`)),
          ),
        ),
      )
      copyMs += performance.now() - started
      const cpuAfter = backendCpu()
      backendCpuSec =
        cpuBefore === null || cpuAfter === null || backendCpuSec === undefined ? undefined : backendCpuSec + cpuAfter - cpuBefore
    }
    const { rows: size } = await clients[0]!.query<{ bytes: string }>(`SELECT pg_total_relation_size('${table}') AS bytes`)
    await clients[0]!.query(kind === 'logs' ? 'TRUNCATE logs' : `DROP TABLE ${COPY_TABLE}`)
    return { rows, streams, copyMs, rowsPerSec: (rows / copyMs) * 1000, tableMiB: Number(size[0]!.bytes) / 2 ** 20, backendCpuSec }
  } finally {
    for (const client of clients) client.release()
    rpc.close()
  }
}
