export {
  createRpcClient,
  type RpcCall,
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
  type RpcLog,
} from './getLogs.js'
export { blocksForTarget, logsJsonBytes, type LogsDensity } from './ranges.js'
export { withRetry } from './retry.js'
export { InconsistentAnswerError, verifyLogs, verifyLogsRequested } from './verify.js'
export { getBlockHeader, getBlockHeaders, toBlockHeader, type BlockHeader, type BlockTag, type RpcBlockHeader } from './headers.js'
