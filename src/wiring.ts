import { refreshWalletNonces } from './attribution/coverage.js'
import { createAttributor } from './attribution/attributor.js'
import { builderCodesRegistryFilter } from './attribution/registry.js'
import type { Config } from './config/index.js'
import type { Logger } from './logger.js'
import type { Metrics } from './metrics.js'
import { createRpcClient, getBlockHeader, getBlockHeaders, getLogs, verifyLogsRequested, withRetry, type BlockTag, type RpcCall, type RpcClient } from './rpc/index.js'
import { createStore, runMigrations, saveBuilderCodeRegistry, saveFilter, withTransaction, type LogInput, type Store } from './store/index.js'
import { filterIdOf, normalizeFilter, toRpcFilter, type LogFilter } from './sync/filter.js'
import { createRangeProcessor } from './sync/historical.js'
import { createPendingPoller } from './sync/pending.js'
import { createHeadFollower, type Header } from './sync/realtime.js'
import { briefly } from './utils/errors.js'
import { redactUrl } from './utils/redact.js'
import type { Interval } from './utils/interval.js'

// The finalized block moves slowly; one look per this long serves every chunk job in between.
const FINALIZED_CACHE_MS = 2_000
const POOL_SIZE_PER_JOB = 2


/** The node client of the configuration; creating it sends nothing. */
export function createNodeClient(config: Config, logger: Logger, metrics?: Metrics): RpcClient {
  return createRpcClient({
    url: config.rpcUrl,
    timeoutMs: config.rpcTimeoutMs,
    batchSize: config.rpcBatchSize,
    maxResponseBytes: config.rpcMaxResponseBytes,
    logger,
    ...(metrics ? { onRequest: metrics.observeRpcRequest } : {}),
  })
}

/**
 * The parts the indexing roles share, wired from the configuration: the database (migrated unless
 * `migrate` is false), the node client, the chain id and the configured log filter, and the sync parts built on them.
 */
export async function createIndexer(config: Config, logger: Logger, metrics?: Metrics, { migrate = true }: { migrate?: boolean } = {}) {
  const store: Store = createStore({ databaseUrl: config.databaseUrl, max: Math.max(4, config.workerConcurrency * POOL_SIZE_PER_JOB + 2) })
  try {
    if (migrate) await runMigrations(store.pool)
  } catch (error) {
    await store.close()
    throw error
  }
  const rpc = createNodeClient(config, logger, metrics)
  // Every call that cannot be narrowed is retried on transient errors; getLogs narrows and retries itself.
  const reliable = {
    request: <T>(method: string, params: unknown[]) => withRetry(() => rpc.request<T>(method, params)),
    batch: <T>(calls: RpcCall[]) => withRetry(() => rpc.batch<T>(calls)),
  }
  const chainId = await withRetry(() => rpc.chainId(), { attempts: 3, baseDelayMs: 500, maxDelayMs: 2_000 }).catch(async (error) => {
    await store.close()
    throw new Error(`the node is not reachable at ${redactUrl(config.rpcUrl)} (${briefly(error)}): start it, or set RPC_URL`)
  })
  const filter: LogFilter = normalizeFilter({ addresses: config.indexAddresses, topics: config.indexTopics })
  const filterId = filterIdOf(filter)
  await saveFilter(store.pool, { chainId, filterId, ...filter })
  // The BuilderCodes registry's events are indexed through a filter of their own, whatever the configured one selects.
  const registry = config.builderCodesRegistry
    ? (() => {
        const registryFilter = normalizeFilter(builderCodesRegistryFilter(config.builderCodesRegistry))
        return { filter: registryFilter, filterId: filterIdOf(registryFilter), startBlock: config.builderCodesRegistryStartBlock }
      })()
    : null
  if (registry) {
    await saveFilter(store.pool, { chainId, filterId: registry.filterId, ...registry.filter })
    await saveBuilderCodeRegistry(store.pool, { chainId, address: config.builderCodesRegistry!, startBlock: registry.startBlock })
  }

  const fetchHeader = (block: number | BlockTag): Promise<Header | null> => getBlockHeader(rpc, block)
  const fetchHeaders = (numbers: readonly number[]): Promise<Header[]> => getBlockHeaders(rpc, numbers)

  /** The node's block number for a tag; `safe`/`finalized` fall back to head − FINALITY_DEPTH where the node has no such tag. */
  async function blockNumberAt(tag: BlockTag): Promise<number> {
    if (tag !== 'latest') {
      const block = await fetchHeader(tag).catch(() => null)
      if (block) return block.number
    }
    const head = Number(await reliable.request<string>('eth_blockNumber', []))
    return tag === 'latest' ? head : Math.max(0, head - config.finalityDepth)
  }

  let finalized: { value: number; at: number } | undefined
  async function finalizedBlock(): Promise<number | null> {
    if (!finalized || Date.now() - finalized.at > FINALIZED_CACHE_MS) {
      finalized = { value: await blockNumberAt('finalized'), at: Date.now() }
    }
    return finalized.value
  }

  const fetchLogs = ([fromBlock, toBlock]: Interval, logFilter: LogFilter) =>
    getLogs(rpc, { fromBlock, toBlock, ...toRpcFilter(logFilter), maxBlocks: config.chunkBlocks }, {
      onSplit: () => metrics?.rangeSplits.inc({ chain_id: String(chainId) }),
    }) as Promise<LogInput[]>

  const attributor = createAttributor({
    rpc: reliable,
    chainId,
    logger,
    pool: store.pool,
    scope: config.attributionScope,
    onLaterSchema: (schemaId) => metrics?.laterSchemaSuffixes.inc({ chain_id: String(chainId), schema_id: String(schemaId) }),
  })
  const attribute = attributor.attribute

  const processRange = createRangeProcessor({ pool: store.pool, logger, fetchLogs, fetchBlocks: fetchHeaders, finalizedBlock, attribute })

  const follower = createHeadFollower({
    pool: store.pool,
    logger,
    chainId,
    filter,
    filterId,
    ...(registry ? { alsoFollow: [registry] } : {}),
    startBlock: config.startBlock === 'latest' ? 'latest' : Number(config.startBlock),
    fetchHeader,
    fetchHeaders,
    fetchLogs,
    finalizedBlock,
    attribute,
  })

  const poller = createPendingPoller({
    pool: store.pool,
    logger,
    chainId,
    attributePending: async (rows) => {
      const writes = await attributor.forLogs(rows, () => 'pending')
      await withTransaction(store.pool, writes)
    },
    fetchPendingLogs: async () => {
      const [logs, head] = await rpc.batch<LogInput[] | string>([
        { method: 'eth_getLogs', params: [{ fromBlock: 'pending', toBlock: 'pending', ...toRpcFilter(filter) }] },
        { method: 'eth_blockNumber', params: [] },
      ])
      // Logs the filter did not ask for are a bad answer: the poll fails and the next one asks again.
      verifyLogsRequested(logs as LogInput[], { fromBlock: 'pending', toBlock: 'pending', ...toRpcFilter(filter) })
      return { logs: logs as LogInput[], head: Number(head as string) }
    },
  })

  return {
    config,
    logger,
    store,
    rpc,
    chainId,
    filter,
    filterId,
    /** The BuilderCodes registry's filter and where its backfill starts, when `BUILDER_CODES_REGISTRY` is set. */
    registry,
    processRange,
    follower,
    poller,
    fetchHeader,
    blockNumberAt,
    close: () => store.close(),
    /** Reads recently active registered wallets' nonces, at most `maxWallets`, for `analytics.wallet_coverage`. */
    refreshWalletNonces: (maxWallets: number) => refreshWalletNonces({ pool: store.pool, chainId, batch: reliable.batch }, maxWallets),
  }
}

export type Indexer = Awaited<ReturnType<typeof createIndexer>>
