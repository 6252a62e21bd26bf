/**
 * The one owner of reorgs and finality: detection at the tip, the fork walk, marking rows removed, the
 * orphan check at finality and the repairs run until their blocks are stored again. Every mark commits
 * with its repair.
 */
export { checkTip, rewindToFork } from './detect.js'
export { applyReorg, orphanBlocks } from './marks.js'
export type { Header } from './types.js'
export { createRepairRunner, type RepairRunner } from './repairRunner.js'
export { advanceToFinalized, FINALITY_STEP_BLOCKS } from './finality.js'
