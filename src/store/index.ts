export { createStore, queryPrepared, withTransaction, type CreateStoreParameters, type Database, type Store } from './client.js'
export { migrationStatus, runMigrations, type MigrationStatus } from './migrate.js'
export { joinPrepared, prepareLogs, StaleForkError, storeLogChunk, type PreparedLogs, type StoreLogChunkParameters, type StoreLogChunkReturnType } from './chunks.js'
export { blocksOfLogs, insertBlocks, insertCanonicalLogs, type BlockRow } from './logs.js'
export { LogShapeError, quantity, toLogRows, type LogInput, type LogRow, type TransactionRow } from './logRows.js'
export * from './syncState.js'
export * as schema from './schema.js'
export { STATUSES, statusBelow, WEBHOOK_EVENTS, ZERO_HASH, type Status, type WebhookEventType } from './schema.js'
export { getCanonicalBlock, storeTipBlocks, type StoredBlock } from './tip.js'
export { upsertPendingLogs } from './pendingLogs.js'
export { advanceFinality, advanceFinalityIn, blocksBetween, blocksOtherThan, unfinalizedLogBlocks } from './finality.js'
export { lockForkMarks, lockTipWrites } from './chainLock.js'
export { createLeaseFence, LeaseFencedError, type Fence, type LeaseFence } from './fence.js'
export {
  blocksInConflict,
  blocksOffCanonical,
  clearRepairRetry,
  closeRepairIfStored,
  countRepairs,
  deleteRepair,
  listRepairs,
  markBlocksRemoved,
  markRemovedAbove,
  orphanBlocksIn,
  recordReorg,
  recordRepairFailure,
  recordRepairs,
  takeOutOfIntervals,
  type BlockId,
  type Repair,
} from './reorgs.js'
export { saveWalletNonces, walletsToRefresh, type WalletNonces } from './wallets.js'
export { saveBuilderCodeRegistry } from './registry.js'
export * from './webhooks.js'
export { listen } from './listen.js'
export { saveChainProfile } from './chainProfile.js'
export { createReadRouting, REPLICA_CHECK_MS, type ReadRouting, type ReplicaStatus } from './replica.js'
