import Fastify from 'fastify'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'

const PREFIX = 'codetrail_'
/** Pending latency runs from ~200 ms (one poll) to seconds when the node or database lags. */
const PENDING_LATENCY_BUCKETS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 2, 5, 10, 30]
const REORG_DEPTH_BUCKETS = [1, 2, 3, 5, 8, 13, 21, 34, 64, 128]
const HTTP_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

/**
 * The process's Prometheus metrics in one registry, so every part (sync, queue, api) increments the
 * same objects and `/metrics` serves them all.
 *
 * @example
 * const metrics = createMetrics()
 * const rpc = createRpcClient({ url, onRequest: metrics.observeRpcRequest })
 * metrics.logsIngested.inc({ chain_id: 8453, status: 'confirmed' }, rows.length)
 */
export function createMetrics({ defaultMetrics = true }: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry()
  if (defaultMetrics) collectDefaultMetrics({ register: registry, prefix: PREFIX })
  const registers = [registry]

  const logsIngested = new Counter({
    name: `${PREFIX}logs_ingested_total`,
    help: 'Log rows written to the database by this process, by chain and status (pending, confirmed).',
    labelNames: ['chain_id', 'status'] as const,
    registers,
  })
  const rangeJobs = new Counter({
    name: `${PREFIX}range_jobs_total`,
    help: "Range job attempts run by this process's worker, by outcome (completed, or failed and left to BullMQ's retries).",
    labelNames: ['chain_id', 'outcome'] as const,
    registers,
  })
  const laterSchemaSuffixes = new Counter({
    name: `${PREFIX}attribution_later_schema_suffixes_total`,
    help: 'Transactions whose ERC-8021 suffix has a schema id of 3 or above: recognised and stored without codes.',
    labelNames: ['chain_id', 'schema_id'] as const,
    registers,
  })
  const blocksBehindHead = new Gauge({
    name: `${PREFIX}blocks_behind_head`,
    help: "Blocks between the node's head and the last block the live follower stored.",
    labelNames: ['chain_id'] as const,
    registers,
  })
  const pendingLatency = new Histogram({
    name: `${PREFIX}pending_latency_seconds`,
    help: "Seconds from asking the node for pending logs to the new or changed ones being committed, per poll that stored any (the indexer's share of pre-confirmed latency).",
    labelNames: ['chain_id'] as const,
    buckets: PENDING_LATENCY_BUCKETS,
    registers,
  })
  const pendingLogsConfirmed = new Counter({
    name: `${PREFIX}pending_logs_confirmed_total`,
    help: 'Pending log rows confirmed by their sealed block, by whether their pre-confirmed content (address, topics, data, block, position) was what was sealed (content: unchanged, changed).',
    labelNames: ['chain_id', 'content'] as const,
    registers,
  })
  const rpcCalls = new Counter({
    name: `${PREFIX}rpc_calls_total`,
    help: 'JSON-RPC calls sent to the node, by method (batched calls count one each) and, when several chains run, chain.',
    labelNames: ['chain_id', 'method'] as const,
    registers,
  })
  const rpcErrors = new Counter({
    name: `${PREFIX}rpc_errors_total`,
    help: 'Failed JSON-RPC requests, by method and error kind (how the provider error was classified) and, when several chains run, chain.',
    labelNames: ['chain_id', 'method', 'kind'] as const,
    registers,
  })
  const rpcDuration = new Histogram({
    name: `${PREFIX}rpc_request_duration_seconds`,
    help: 'Duration of JSON-RPC HTTP requests to the node, by method and, when several chains run, chain.',
    labelNames: ['chain_id', 'method'] as const,
    buckets: HTTP_DURATION_BUCKETS,
    registers,
  })
  const rangeSplits = new Counter({
    name: `${PREFIX}range_splits_total`,
    help: 'eth_getLogs ranges narrowed after a provider refused them (too wide or too many results).',
    labelNames: ['chain_id'] as const,
    registers,
  })
  const reorgs = new Counter({
    name: `${PREFIX}reorgs_total`,
    help: 'Chain reorganisations handled by the head follower.',
    labelNames: ['chain_id'] as const,
    registers,
  })
  const reorgDepth = new Histogram({
    name: `${PREFIX}reorg_depth_blocks`,
    help: 'Depth in blocks of each handled reorganisation.',
    labelNames: ['chain_id'] as const,
    buckets: REORG_DEPTH_BUCKETS,
    registers,
  })
  const queueDepth = new Gauge({
    name: `${PREFIX}queue_jobs`,
    help: 'BullMQ jobs by queue and state (waiting, active, delayed, prioritized, waiting-children), read at scrape time.',
    labelNames: ['queue', 'state'] as const,
    registers,
  })
  const failedJobs = new Gauge({
    name: `${PREFIX}queue_failed_jobs`,
    help: 'BullMQ jobs that exhausted their retries and wait in the failed state, by queue.',
    labelNames: ['queue'] as const,
    registers,
  })
  const repairsOpen = new Gauge({
    name: `${PREFIX}repairs_open`,
    help: 'Open repairs (blocks a filter must read again after a reorg or orphan mark) as the scheduler last saw them.',
    labelNames: ['chain_id'] as const,
    registers,
  })
  const repairsQuarantined = new Gauge({
    name: `${PREFIX}repairs_quarantined`,
    help: 'Open repairs no longer retried after repeated failures: their blocks stay missing until they are marked again.',
    labelNames: ['chain_id'] as const,
    registers,
  })
  const httpRequestDuration = new Histogram({
    name: `${PREFIX}http_request_duration_seconds`,
    help: 'HTTP API request duration, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: HTTP_DURATION_BUCKETS,
    registers,
  })

  /**
   * Pass as `onRequest` to `createRpcClient`: the fields of its request events that the metrics read.
   * `chain` labels the samples when several chains run; a single chain's series keep only `method`.
   */
  function observeRpcRequest(
    event: { method: string; calls: number; ok: boolean; errorKind?: string; durationMs: number },
    chain?: { chain_id: string },
  ): void {
    const labels = { ...chain, method: event.method }
    rpcCalls.inc(labels, event.calls)
    rpcDuration.observe(labels, event.durationMs / 1000)
    if (!event.ok) rpcErrors.inc({ ...labels, kind: event.errorKind ?? 'unknown' })
  }

  return {
    registry,
    logsIngested,
    rangeJobs,
    laterSchemaSuffixes,
    blocksBehindHead,
    pendingLatency,
    pendingLogsConfirmed,
    rpcCalls,
    rpcErrors,
    rpcDuration,
    rangeSplits,
    reorgs,
    reorgDepth,
    queueDepth,
    failedJobs,
    repairsOpen,
    repairsQuarantined,
    httpRequestDuration,
    observeRpcRequest,
  }
}

export type Metrics = ReturnType<typeof createMetrics>

export type MetricsServer = { address: string; close: () => Promise<void> }

/**
 * `GET /metrics` alone on `port`, for the roles that serve no API (worker, scheduler): every process
 * of a deployment is scraped for its own series.
 */
export async function serveMetrics({
  metrics,
  port,
  host = '0.0.0.0',
}: {
  metrics: Metrics
  port: number
  host?: string
}): Promise<MetricsServer> {
  const app = Fastify()
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType)
    return metrics.registry.metrics()
  })
  const address = await app.listen({ port, host })
  return { address, close: () => app.close() }
}
