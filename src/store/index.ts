export { createStore, withTransaction, type Database, type Store } from './client.js'
export { insertBuilderCode, type BuilderCodeRecord } from './builderCodes.js'
export { definitionsApplied, migrationStatus, runMigrations } from './migrate.js'
export { joinPrepared, prepareLogs, storeLogChunk, type PreparedLogs } from './chunks.js'
export { insertBlocks, insertCanonicalLogs } from './logs.js'
export { toLogRows, type LogInput, type LogRow, type TransactionRow } from './logRows.js'
export * from './syncState.js'
export * as schema from './schema.js'
export { statusBelow, WEBHOOK_EVENTS, ZERO_HASH, type Status } from './schema.js'
export { getCanonicalBlock, storeTipBlocks } from './tip.js'
export { upsertPendingLogs } from './pendingLogs.js'
export { advanceFinality, advanceFinalityIn, blocksBetween, blocksOtherThan, unfinalizedLogBlocks } from './finality.js'
export { lockForkMarks, lockTipWrites } from './chainLock.js'
export { createDeliveryLeaseFence, createLeaseFence, LeaseFencedError, type Fence, type LeaseFence } from './fence.js'
export {
  clearRepairRetry,
  closeRepairIfStored,
  deleteRepair,
  listRepairs,
  markRemovedAbove,
  orphanBlocksIn,
  recordReorg,
  recordRepairFailure,
  recordRepairs,
  takeOutOfIntervals,
  type BlockId,
  type Repair,
} from './reorgs.js'
export { saveBuilderCodeRegistry } from './registry.js'
export * from './webhooks.js'
export { listen } from './listen.js'
export { saveChainName, saveChainProfile } from './chainProfile.js'
export { createReadRouting, type ReadRouting, type ReplicaStatus } from './replica.js'
export { analyzeForGasFill, gasOwed, gasOwedSpan, gasUsedMissing, storeGasUsed } from './gas.js'
export { pruneRawHistory } from './retention.js'
export { ensureMonthPartitions, MONTH_PARTITIONS_CHECK_MS } from './partitions.js'
