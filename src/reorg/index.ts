/**
 * The one owner of reorgs and finality: detection at the tip, the fork walk, marking rows removed, the
 * orphan check at finality and the repairs run until their blocks are stored again. Every mark commits
 * with its repair.
 */
export { checkTip, rewindToFork, type RewindToForkParameters, type TipCheck } from './detect.js'
export { findForkPoint, DeepReorgError, type FindForkPointParameters } from './forkPoint.js'
export { applyReorg, orphanBlocks, repairChunks } from './marks.js'
export type { Header } from './types.js'
export { createRepairRunner, type RepairRunner, type RepairRunnerContext, type RepairRunResult } from './repairRunner.js'
export { advanceToFinalized, FINALITY_STEP_BLOCKS, type AdvanceToFinalizedParameters, type FinalityStep } from './finality.js'
