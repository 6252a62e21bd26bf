import { alignedChunks, type Interval } from '../utils/interval.js'
import type { RpcErrorAction } from './errors.js'

/** Blocks in an inclusive interval. */
export function blockCount([from, to]: Interval): number {
  return to - from + 1
}

/** The two halves of an interval; a single block has none. */
export function halveInterval([from, to]: Interval): Interval[] | undefined {
  if (to <= from) return undefined
  const middle = from + Math.floor((to - from) / 2)
  return [
    [from, middle],
    [middle + 1, to],
  ]
}

/**
 * The parts to ask for after a node refused `interval` with `action`: ranges as wide as the
 * suggested range or the cap, or halves. `undefined` when the action does not narrow this interval
 * (a single block, a cap or suggestion no narrower than the interval, a non-range error).
 */
export function narrowInterval(interval: Interval, action: RpcErrorAction): Interval[] | undefined {
  switch (action.kind) {
    case 'suggested-range':
      return chunksNarrowerThan(interval, action.toBlock - action.fromBlock + 1)
    case 'cap':
      return chunksNarrowerThan(interval, action.maxBlocks)
    case 'halve':
      return halveInterval(interval)
    default:
      return undefined
  }
}

function chunksNarrowerThan(interval: Interval, width: number): Interval[] | undefined {
  if (!Number.isSafeInteger(width) || width < 1 || width >= blockCount(interval)) return undefined
  return alignedChunks([interval], width)
}
