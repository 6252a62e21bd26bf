export {
  createRpcClient,
  type RpcClient,
  type RpcRequestEvent,
} from './client.js'
export {
  classifyRpcError,
  FatalError,
  isRevert,
  toKindedError,
} from './errors.js'
export {
  getLogs,
  GetLogsError,
  type GetLogsBackoffEvent,
  type GetLogsHooks,
  type GetLogsSplitEvent,
  getLogsRequest,
  parseLogs,
  type LogsRequest,
  type RpcLog,
} from './actions/getLogs.js'
export { blocksForTarget, logsJsonBytes, type LogsDensity } from './ranges.js'
export { batchWithRetry, withRetry } from './retry.js'
export { InconsistentAnswerError, verifyLogs } from './verify.js'
export {
  getBlock,
  getBlockHeader,
  getBlockHeaders,
  getBlockRequest,
  getBlocksWithTransactions,
  getBlockWithTransactions,
  missingBlock,
  parseBlockHeader,
  parseBlockWithTransactions,
  parsePendingBlockNumber,
  type BlockHeader,
  type BlockTag,
  type BlockWithTransactions,
} from './actions/getBlock.js'
export { getBlockNumber, getBlockNumberRequest, parseBlockNumber } from './actions/getBlockNumber.js'
export { getBlockReceipts, getBlockReceiptsRequest, parseBlockReceiptsWithLogs } from './actions/getBlockReceipts.js'
export { getBlockTransactionCounts } from './actions/getBlockTransactionCountByHash.js'
export { call, callRequest, parseCallResult } from './actions/call.js'
export { getChainId } from './actions/getChainId.js'
export { getCodes, type CodeRead } from './actions/getCode.js'
export { getTransactionCount, getTransactionCountRequest, parseTransactionCount } from './actions/getTransactionCount.js'
export { getTransactions } from './actions/getTransactionByHash.js'
export { getTransactionReceiptRequest, getTransactionReceipts, parseReceipt } from './actions/getTransactionReceipt.js'
export { subscribeNewHeads, subscribePendingLogs, type PendingLogsFilter } from './actions/subscribe.js'
export { createRpcPool, type EndpointState } from './pool.js'
