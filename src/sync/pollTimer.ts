import type { BlockHeader } from '../rpc/index.js'

/** How much later than the last estimate a poll that found nothing new moves the next ones. */
const LEAD_UP_MS = 10
/** How much earlier each poll that found its block at once tries the next one. */
const LEAD_DOWN_MS = 2
/** The soonest a poll that found nothing new is tried again. */
const MIN_RETRY_MS = 25

/**
 * When to poll a chain that stamps blocks in milliseconds (`timestampMs`): each poll aims just after
 * the next block becomes readable at the node, the previous block's `timestampMs` plus the block time
 * plus a learned lead (the node's lateness and the clocks' offset). A poll that finds its block moves
 * the lead a little earlier, one that finds nothing moves it later and is tried again a quarter block
 * later, once; past that the plain interval applies. About one poll a block, each soon after its block.
 */
export function createPollTimer() {
  let last: { number: number; timestampMs: number } | undefined
  let lead = 0
  let misses = 0
  return {
    /** The newest block a poll answered. */
    polled(block: BlockHeader) {
      if (last && block.number <= last.number) {
        if (misses++ === 0) lead += LEAD_UP_MS
        return
      }
      if (last && block.number === last.number + 1 && misses === 0) lead -= LEAD_DOWN_MS
      misses = 0
      last = block.timestampMs == null ? undefined : { number: block.number, timestampMs: block.timestampMs }
    },
    nextInMs(blockTimeMs: number): number | undefined {
      if (!last || misses > 1) return undefined
      lead = Math.max(-blockTimeMs, Math.min(blockTimeMs, lead))
      if (misses === 1) return Math.max(MIN_RETRY_MS, blockTimeMs / 4)
      return Math.max(0, Math.min(blockTimeMs, last.timestampMs + blockTimeMs + lead - Date.now()))
    },
  }
}
