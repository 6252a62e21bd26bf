import { refreshWalletNonces } from './attribution/coverage.js'
import { createAttributor, type AttributedBlock } from './attribution/attributor.js'
import { builderCodesRegistryFilter } from './attribution/registry.js'
import { createRegistryResolver, type RegistryResolver } from './attribution/registryResolver.js'
import type { Config } from './config/index.js'
import type { Logger } from './internal/logger.js'
import type { Metrics } from './internal/metrics.js'
import { ChainMismatchError, createChainIdentity, createChainProfiler } from './chains/index.js'
import {
  classifyRpcError,
  createRpcClient,
  getBlock,
  getBlockHeader,
  getBlockHeaders,
  getBlockNumber,
  getBlockNumberRequest,
  getChainId,
  getLogs,
  getLogsRequest,
  parseBlockNumber,
  parseLogs,
  batchWithRetry,
  withRetry,
  type BlockTag,
  type LogsRequest,
  type RpcClient,
  type RpcRequestEvent,
  createRpcPool,
  type EndpointState,
} from './rpc/index.js'
import {
  createLeaseFence,
  createStore,
  runMigrations,
  saveBuilderCodeRegistry,
  saveChainName,
  saveChainProfile,
  saveFilter,
  withTransaction,
  type LogInput,
  type Store,
} from './store/index.js'
import { filterIdOf, normalizeFilter, toRpcFilter, type LogFilter } from './sync/filter.js'
import { createRangeProcessor } from './sync/historical.js'
import { createGasFiller } from './sync/gasFill.js'
import { createGasQueue } from './queue/index.js'
import { createPendingPoller } from './sync/pendingPoller.js'
import { createHeadFollower, type Header } from './sync/realtime.js'
import { createTipReader, type TipBlock } from './sync/tipReads.js'
import { briefly } from './internal/errors.js'
import { redactUrl } from './utils/redact.js'
import type { Interval } from './utils/interval.js'

// The finalized block moves slowly; one look per this long serves every chunk job and tip step in between.
const FINALIZED_CACHE_MS = 4_000
const POOL_SIZE_PER_JOB = 2

/** How a node says it has no block for a tag it does not know (`finalized` before the merge, on some L2 nodes). */
const answersNoSuchTag = (error: unknown) =>
  ['invalid-params', 'invalid-params-range'].includes(classifyRpcError(error).pattern) || /unknown block/i.test(messagesOf(error))

/** Every message in an error's cause chain, for matching what a node said. */
function messagesOf(error: unknown): string {
  const messages: string[] = []
  for (let e = error as { message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++)
    messages.push(String(e.message ?? ''))
  return messages.join(' | ')
}

/** The chain's node as one client, with what its endpoints are and which chain they serve. */
export type NodeClient = RpcClient & {
  /** Each endpoint's state when the chain has several (the pool's rotation); null with one. */
  endpoints: () => EndpointState[] | null
  /**
   * The node's chain id. With several endpoints every one is asked, each left out of rotation while it
   * says another chain than the configured one: the configured id while any endpoint serves it.
   */
  askChainId: () => Promise<number>
}

/**
 * The node client of the configuration: one endpoint's, or a pool over the chain's several endpoints
 * (weights, rate caps, failover, laggards and endpoints of another chain out of rotation). `observe` sees
 * every finished request; `metricsChain` labels its node-call metrics when several chains share the process.
 */
export function createNodeClient(
  config: Config,
  logger: Logger,
  metrics?: Metrics,
  observe?: (event: RpcRequestEvent) => void,
  metricsChain?: { chain_id: string },
): NodeClient {
  const clientOf = (url: string) => endpointClient(url, config, logger, metrics, observe, metricsChain)
  if (config.rpcEndpoints.length <= 1) {
    const client = clientOf(config.rpcUrl)
    return { ...client, endpoints: () => null, askChainId: () => getChainId(client) }
  }
  const pool = createRpcPool({ endpoints: config.rpcEndpoints, clientOf, logger, chainId: config.chainId })
  return { ...pool, askChainId: pool.chainId }
}

function endpointClient(
  url: string,
  config: Config,
  logger: Logger,
  metrics?: Metrics,
  observe?: (event: RpcRequestEvent) => void,
  metricsChain?: { chain_id: string },
): RpcClient {
  return createRpcClient({
    url,
    timeoutMs: config.rpcTimeoutMs,
    batchSize: config.rpcBatchSize,
    maxResponseBytes: config.rpcMaxResponseBytes,
    logger,
    onRequest: (event) => {
      metrics?.observeRpcRequest(event, metricsChain)
      observe?.(event)
    },
  })
}

/**
 * The parts the indexing roles share, wired from the configuration: the database (migrated unless
 * `migrate` is false), the node client, the chain id and the configured log filter, and the sync parts built on them.
 */
export async function createIndexer(
  config: Config,
  logger: Logger,
  metrics?: Metrics,
  {
    migrate = true,
    nodeMayBeDown = false,
    labelChainInMetrics = false,
    registries = createRegistryResolver(),
  }: {
    migrate?: boolean
    nodeMayBeDown?: boolean /** Several chains share the metrics: node calls carry `chain_id`. */
    labelChainInMetrics?: boolean
    /** Answers schema-1 registry questions across the deployment's chains: this chain is served by it too. */
    registries?: RegistryResolver
  } = {},
) {
  const store: Store = createStore({ databaseUrl: config.databaseUrl, max: Math.max(4, config.workerConcurrency * POOL_SIZE_PER_JOB + 2) })
  try {
    if (migrate) await runMigrations(store.pool)
  } catch (error) {
    await store.close()
    throw error
  }
  let observe: ((event: RpcRequestEvent) => void) | undefined
  const metricsChain = labelChainInMetrics && config.chainId !== undefined ? { chain_id: String(config.chainId) } : undefined
  const rpc = createNodeClient(config, logger, metrics, (event) => observe?.(event), metricsChain)
  // Every call that cannot be narrowed is retried on transient errors, a batch in halves; getLogs narrows and retries itself.
  const reliable: Pick<RpcClient, 'request' | 'batch'> = {
    request: (method, params, options) => withRetry(() => rpc.request(method, params, options)),
    batch: (calls, options) => batchWithRetry(calls, (part) => rpc.batch(part, options)),
  }
  const identity = await createChainIdentity({
    askChainId: () => withRetry(() => rpc.askChainId(), { attempts: 3, baseDelayMs: 500, maxDelayMs: 2_000 }),
    expected: config.chainId,
    url: config.rpcUrl,
    logger,
    nodeMayBeDown,
  }).catch(async (error: unknown) => {
    await store.close()
    if (error instanceof ChainMismatchError) throw error
    throw new Error(`the node is not reachable at ${redactUrl(config.rpcUrl)} (${briefly(error)}): start it, or set RPC_URL`)
  })
  observe = identity.observe
  const chainId = identity.chainId
  // A chain configured through the environment has no name of its own.
  await saveChainName(store.pool, chainId, config.configFile ? config.chainName : null)
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

  const profiler = await createChainProfiler({
    rpc: reliable,
    logger,
    chainId,
    settings: {
      preconfirmations: config.preconfirmations,
      finalityDepth: config.finalityDepth,
      finalitySeconds: config.finalitySeconds,
      headPollMs: config.headPollMs,
    },
    filter: toRpcFilter(filter),
    save: (profile) => saveChainProfile(store.pool, chainId, profile),
  })

  // Remembered once the node answers that it has no such tag: from then on the depth fallback applies.
  const tagMissing = new Set<BlockTag>()
  /**
   * The node's block for a tag, with its hash where the node has the tag. `safe`/`finalized` fall back to
   * head − the finality depth ONLY where the node says it has no such tag (null, "unknown block",
   * invalid params); any other failure is thrown, to be asked again, never guessed.
   */
  async function blockAt(tag: BlockTag): Promise<{ number: number; hash?: string }> {
    if (tag !== 'latest' && !tagMissing.has(tag)) {
      const header = await getBlock(rpc, tag).catch((error: unknown) => {
        if (!answersNoSuchTag(error)) throw error
        return null
      })
      if (header) return { number: header.number, hash: header.hash }
      tagMissing.add(tag)
      logger.warn(
        { chain_id: chainId, tag, finality_depth: profiler.current().finalityDepth },
        'node has no such block tag: using head minus the finality depth',
      )
    }
    const head = await getBlockNumber(reliable)
    return { number: tag === 'latest' ? head : Math.max(0, head - profiler.current().finalityDepth) }
  }
  const blockNumberAt = async (tag: BlockTag): Promise<number> => (await withRetry(() => blockAt(tag))).number

  let finalizedRead: { number: number; hash?: string } | null = null
  let finalizedAskedAt = -Infinity
  let finalizedAsking: Promise<void> | undefined
  /**
   * The finalized block, asked at most every few seconds and never retried in place (a tip step must
   * not wait on it): a failed ask keeps the last answer (null before the first) until the next one.
   * Once known, a stale answer is served while the next ask runs beside the caller.
   */
  async function finalized(): Promise<{ number: number; hash?: string } | null> {
    if (!finalizedAsking && Date.now() - finalizedAskedAt > FINALIZED_CACHE_MS) {
      finalizedAskedAt = Date.now()
      finalizedAsking = blockAt('finalized')
        .then(
          (read) => {
            finalizedRead = read
          },
          (error: unknown) =>
            logger.warn({ chain_id: chainId, err: error }, 'finalized block unavailable: finality waits for the next read'),
        )
        .finally(() => (finalizedAsking = undefined))
    }
    if (finalizedRead === null) await finalizedAsking
    return finalizedRead
  }
  const finalizedBlock = async (): Promise<number | null> => (await finalized())?.number ?? null

  const fetchLogs = ([fromBlock, toBlock]: Interval, logFilter: LogFilter) =>
    getLogs(
      rpc,
      { fromBlock, toBlock, ...toRpcFilter(logFilter), maxBlocks: config.chunkBlocks },
      {
        onSplit: () => metrics?.rangeSplits.inc({ chain_id: String(chainId) }),
      },
    ) as Promise<LogInput[]>

  registries.serve({
    chainId,
    rpc: reliable,
    node: rpc,
    pool: store.pool,
    builderCodes: registry
      ? { address: config.builderCodesRegistry!, filterId: registry.filterId, startBlock: registry.startBlock }
      : undefined,
  })
  const attributor = createAttributor({
    rpc: reliable,
    chainId,
    logger,
    pool: store.pool,
    registries,
    scope: config.attributionScope,
    deferRangeGas: true,
    onLaterSchema: (schemaId) => metrics?.laterSchemaSuffixes.inc({ chain_id: String(chainId), schema_id: String(schemaId) }),
  })
  const attribute = attributor.attribute

  // Range jobs leave gas used to a follow-up job per range, run by the workers after the ranges they take.
  const gasQueue = createGasQueue({ redisUrl: config.redisUrl, prefix: config.redisPrefix })
  const fillGas = createGasFiller({ pool: store.pool, logger, rpc: reliable })
  const processRange = createRangeProcessor({
    pool: store.pool,
    logger,
    chain: identity,
    fetchLogs,
    fetchBlocks: fetchHeaders,
    finalizedBlock,
    attribute,
    afterStored: ({ chainId: jobChainId, fromBlock, toBlock }, blockSizes) =>
      gasQueue.enqueue({ chainId: jobChainId, fromBlock, toBlock, ...(blockSizes.size > 0 ? { blockSizes: [...blockSizes] } : {}) }),
  })

  // A block polled with its transactions is decoded once, though both the step's receipts and its attribution need it.
  const decodedAt = new WeakMap<TipBlock, AttributedBlock>()
  const decodedTip = (blocks: readonly TipBlock[]): AttributedBlock[] =>
    blocks.map((block) => {
      let decoded = decodedAt.get(block)
      if (!decoded) {
        decoded = attributor.decodeBlocks([block])[0]!
        decodedAt.set(block, decoded)
      }
      return decoded
    })

  const fence = createLeaseFence(store.pool, chainId)
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
    finalized,
    tip: createTipReader({ rpc: reliable, fetchLogs }),
    attribute: (blocks, rows, statusOf, gasUsed) => attributor.forFetched(decodedTip(blocks), rows, statusOf, gasUsed),
    gasWanted: (blocks) => attributor.gasWanted(decodedTip(blocks)),
    fence: fence.check,
    chain: identity,
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
      const pending: LogsRequest = { fromBlock: 'pending', toBlock: 'pending', ...toRpcFilter(filter) }
      const [logs, head] = await rpc.batch([getLogsRequest(pending), getBlockNumberRequest()])
      await identity.verify()
      // Logs the filter did not ask for are a bad answer: the poll fails and the next one asks again.
      return { logs: parseLogs(logs, pending) as LogInput[], head: parseBlockNumber(head) }
    },
  })

  return {
    store,
    rpc,
    chainId,
    /** The node's chain id held to the configured one: `verify` asks again after the node failed. */
    identity,
    filter,
    filterId,
    /** The BuilderCodes registry's filter and where its backfill starts, when `BUILDER_CODES_REGISTRY` is set. */
    registry,
    processRange,
    /** The follow-up of a range job: gas used of its attributed transactions (`gasQueue` holds these jobs). */
    fillGas,
    gasQueue,
    follower,
    /** The scheduler lease's fencing token: claimed by each leader, checked by the follower's and the dispatcher's writes. */
    fence,
    poller,
    blockNumberAt,
    /** The chain's probed profile (block time, pre-confirmations), re-probed while the scheduler runs it. */
    profiler,
    close: async () => {
      await gasQueue.close()
      await store.close()
    },
    /** Reads recently active registered wallets' nonces, at most `maxWallets`, for `analytics.wallet_coverage`. */
    refreshWalletNonces: (maxWallets: number) => refreshWalletNonces({ pool: store.pool, chainId, batch: reliable.batch }, maxWallets),
  }
}

export type Indexer = Awaited<ReturnType<typeof createIndexer>>
