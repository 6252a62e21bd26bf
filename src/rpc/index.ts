export {
  createRpcClient,
  type CreateRpcClientParameters,
  type RpcClient,
  type RpcRequestEvent,
  type RpcRequestOptions,
} from './client.js'
export {
  classifyRpcError,
  FatalError,
  isRevert,
  parseRetryAfter,
  RetryableError,
  rpcErrorPatterns,
  toKindedError,
  type RpcErrorAction,
  type RpcErrorActionKind,
  type RpcErrorPattern,
} from './errors.js'
export {
  DEFAULT_GET_LOGS_RETRY,
  getLogs,
  GetLogsError,
  MAX_BLOCKS_PER_REQUEST,
  type GetLogsBackoffEvent,
  type GetLogsErrorType,
  type GetLogsHooks,
  type GetLogsParameters,
  type GetLogsRangeEvent,
  type GetLogsRetryPolicy,
  type GetLogsReturnType,
  type GetLogsSplitEvent,
  getLogsRequest,
  parseLogs,
  type LogsRequest,
  type RpcLog,
} from './actions/getLogs.js'
export { blocksForTarget, logsJsonBytes, type LogsDensity } from './ranges.js'
export { DEFAULT_RETRY, withRetry, type RetryPolicy } from './retry.js'
export { InconsistentAnswerError, verifyLogs, type VerifyLogsParameters } from './verify.js'
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
export { getBlockReceipts } from './actions/getBlockReceipts.js'
export { getBlockTransactionCounts } from './actions/getBlockTransactionCountByHash.js'
export { call, callRequest, parseCallResult } from './actions/call.js'
export { getChainId } from './actions/getChainId.js'
export { getCodes, type CodeRead } from './actions/getCode.js'
export { getTransactionCount, getTransactionCountRequest, parseTransactionCount } from './actions/getTransactionCount.js'
export { getTransactions } from './actions/getTransactionByHash.js'
export { getTransactionReceiptRequest, getTransactionReceipts, parseReceipt } from './actions/getTransactionReceipt.js'
export { subscribeNewHeads, subscribePendingLogs, type PendingLogsFilter } from './actions/subscribe.js'
