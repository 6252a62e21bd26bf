/**
 * The machine's own limits on the fixture, measured with the plainest clients: `eth_getLogs` plus
 * the inputs of the transactions behind the logs (what any indexer with attribution must fetch), and
 * PostgreSQL `COPY` of the very rows codetrail stores.
 */
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import copyStreams from 'pg-copy-streams'
import { copyStatement, LOG_COPY_COLUMNS, toCopyData, toLogRows, type LogInput } from '../../src/store/logRows.js'
import { cpuSecondsOf } from './processes.js'
import { blockChunks, createRawRpc, hex, inParallel } from './rawRpc.js'

// As codetrail's attributor: 100 calls per batch, 4 batches in flight.
const INPUT_BATCH_SIZE = 100
const INPUT_BATCHES_IN_FLIGHT = 4

const cpuSeconds = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1e6

export type RpcLimitParameters = {
  rpcUrl: string
  range: [number, number]
  chunkBlocks: number
  /** `eth_getLogs` chunks in flight: the indexer's WORKER_CONCURRENCY. */
  concurrency: number
  /** The node's pid, to count its CPU time. */
  nodePid?: number | undefined
}

export type RpcLimit = {
  logs: number
  transactions: number
  getLogsMs: number
  inputsMs: number
  /** Logs of the whole range per second of both phases. */
  logsPerSec: number
  getLogsPerSec: number
  inputsPerSec: number
  /** CPU seconds the node spent answering, when its pid was given. */
  nodeCpuSec: number | undefined
  /** CPU seconds of this client (receiving and parsing). */
  clientCpuSec: number
}

/** `eth_getLogs` over the range in chunks, then `eth_getTransactionByHash` of every transaction behind them. */
export async function measureRpcLimit({ rpcUrl, range, chunkBlocks, concurrency, nodePid }: RpcLimitParameters): Promise<RpcLimit> {
  const rpc = createRawRpc(rpcUrl, Math.max(concurrency, INPUT_BATCHES_IN_FLIGHT))
  const nodeCpuBefore = nodePid === undefined ? null : cpuSecondsOf(nodePid)
  const clientCpuBefore = process.cpuUsage()
  try {
    const hashes = new Set<string>()
    let logs = 0
    let started = performance.now()
    await inParallel(blockChunks(range[0], range[1], chunkBlocks), concurrency, async ([from, to]) => {
      const answer = await rpc.call<LogInput[]>('eth_getLogs', [{ fromBlock: hex(from), toBlock: hex(to) }])
      logs += answer.length
      for (const log of answer) hashes.add(log.transactionHash!)
    })
    const getLogsMs = performance.now() - started

    const batches: string[][] = []
    const all = [...hashes]
    for (let i = 0; i < all.length; i += INPUT_BATCH_SIZE) batches.push(all.slice(i, i + INPUT_BATCH_SIZE))
    let inputBytes = 0
    started = performance.now()
    await inParallel(batches, INPUT_BATCHES_IN_FLIGHT, async (batch) => {
      const transactions = await rpc.batch<{ input: string } | null>(batch.map((hash) => ({ method: 'eth_getTransactionByHash', params: [hash] })))
      for (const tx of transactions) inputBytes += tx ? tx.input.length : 0
    })
    const inputsMs = performance.now() - started
    if (inputBytes === 0 && all.length > 0) throw new Error('the node returned no transaction inputs')
    const nodeCpuAfter = nodePid === undefined ? null : cpuSecondsOf(nodePid)
    return {
      logs,
      transactions: all.length,
      getLogsMs,
      inputsMs,
      logsPerSec: (logs / (getLogsMs + inputsMs)) * 1000,
      getLogsPerSec: (logs / getLogsMs) * 1000,
      inputsPerSec: (all.length / inputsMs) * 1000,
      nodeCpuSec: nodeCpuBefore !== null && nodeCpuAfter !== null ? nodeCpuAfter - nodeCpuBefore : undefined,
      clientCpuSec: cpuSeconds(process.cpuUsage(clientCpuBefore)),
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
  /** `unindexed` (the limit): a plain table of the same columns; `logs`: codetrail's own table with its indexes (migrated database). */
  table: 'unindexed' | 'logs'
}

export type CopyLimit = {
  rows: number
  copyMs: number
  rowsPerSec: number
  tableMiB: number
  /** CPU seconds of the database backend over the timed `COPY`s. */
  backendCpuSec: number | undefined
}

const COPY_TABLE = 'bench_raw_copy'

/**
 * `COPY FROM STDIN` of the fixture's rows, exactly as codetrail renders them (`toLogRows`,
 * `toCopyData`, binary), one statement per chunk into a table with the same columns and no index (or into
 * codetrail's `logs`, to see what its indexes cost). Only the `COPY` is timed; fetching and
 * rendering happen before each one.
 */
export async function measureCopyLimit({ rpcUrl, pool, chainId, range, chunkBlocks, table: kind }: CopyLimitParameters): Promise<CopyLimit> {
  const table = kind === 'logs' ? 'logs' : COPY_TABLE
  const rpc = createRawRpc(rpcUrl, 1)
  const client = await pool.connect()
  try {
    const { rows: backend } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    const backendPid = backend[0]!.pid
    let backendCpuSec: number | undefined = 0
    if (kind === 'unindexed') {
      await client.query(`DROP TABLE IF EXISTS ${COPY_TABLE}`)
      await client.query(
        `CREATE TABLE ${COPY_TABLE} (chain_id integer NOT NULL, block_number bigint NOT NULL, block_hash text NOT NULL,
        block_timestamp timestamptz NOT NULL, transaction_hash text NOT NULL, transaction_index integer NOT NULL,
        log_index integer NOT NULL, tx_log_ordinal integer NOT NULL, address text NOT NULL, topic0 text, topic1 text,
        topic2 text, topic3 text, data text NOT NULL, status text NOT NULL)`,
      )
    }
    let rows = 0
    let copyMs = 0
    for (const [from, to] of blockChunks(range[0], range[1], chunkBlocks)) {
      const logRows = toLogRows(await rpc.call<LogInput[]>('eth_getLogs', [{ fromBlock: hex(from), toBlock: hex(to) }]))
      const pieces = copyStatement(toCopyData(logRows, chainId, () => 'confirmed'))
      const cpuBefore = cpuSecondsOf(backendPid)
      const started = performance.now()
      await pipeline(Readable.from(pieces), client.query(copyStreams.from(`COPY ${table} (${LOG_COPY_COLUMNS.join(', ')}) FROM STDIN (FORMAT binary)`)))
      copyMs += performance.now() - started
      const cpuAfter = cpuSecondsOf(backendPid)
      // Unknown when the database runs elsewhere (no /proc entry for its backend).
      backendCpuSec = cpuBefore === null || cpuAfter === null || backendCpuSec === undefined ? undefined : backendCpuSec + cpuAfter - cpuBefore
      rows += logRows.length
    }
    const { rows: size } = await client.query<{ bytes: string }>(`SELECT pg_total_relation_size('${table}') AS bytes`)
    await client.query(kind === 'logs' ? 'TRUNCATE logs' : `DROP TABLE ${COPY_TABLE}`)
    return { rows, copyMs, rowsPerSec: (rows / copyMs) * 1000, tableMiB: Number(size[0]!.bytes) / 2 ** 20, backendCpuSec }
  } finally {
    client.release()
    rpc.close()
  }
}
