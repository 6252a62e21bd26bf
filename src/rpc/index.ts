export {
  createRpcClient,
  type CreateRpcClientParameters,
  type RpcCall,
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
  type RpcLog,
} from './getLogs.js'
export { blocksForTarget, logsJsonBytes, type LogsDensity } from './ranges.js'
export { DEFAULT_RETRY, withRetry, type RetryPolicy } from './retry.js'
export { InconsistentAnswerError, verifyLogs, verifyLogsRequested, type RequestedLogs, type VerifyLogsParameters } from './verify.js'
export { getBlockHeader, getBlockHeaders, toBlockHeader, type BlockHeader, type BlockTag, type RpcBlockHeader } from './headers.js'
