/**
 * The one owner of reorgs and finality: the fork walk, marking rows removed, the orphan check at
 * finality, pending reconciliation at the tip and repair planning. Every mark commits with its repair.
 */
export { findForkPoint, DeepReorgError, type FindForkPointParameters } from './forkPoint.js'
export { applyReorg, orphanBlocks, repairChunks } from './marks.js'
export type { Header } from './types.js'
export { advanceToFinalized, FINALITY_STEP_BLOCKS, type AdvanceToFinalizedParameters, type FinalityStep } from './finality.js'
