/**
 * The API's reads: typed functions the routes call, one module per resource. They compose their
 * queries with the drizzle builder (writes elsewhere in store/ are raw SQL with COPY): each route takes
 * optional filters, keyset cursors and prepared statements, which the builder assembles from typed
 * columns of `schema.ts` without string concatenation; the few queries the builder cannot say (rollup
 * sums, the registry view, lateral joins) use its `sql` tag, still parameterised.
 */
export {
  builderCodeStatsReport,
  INTERVAL_MS,
  leaderboard,
  listAttributions,
  roundToBuckets,
  type LeaderboardParameters,
  type LeaderboardRow,
  type StatsInterval,
} from './attributions.js'
export { countWalletAttributions, findBuilderCode, findBuilderCodeByWallet } from './builderCodes.js'
export { getIndexedHead } from './health.js'
export { hasLeadingLogFilter, listLogs, logKey, type LogRow } from './logs.js'
export { getSyncStatus, listChainSummaries, PENDING_RATE_WINDOW_SECONDS, type SyncStatus } from './status.js'
export { getTransactionAttribution } from './transactions.js'
