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

// JSON bytes of a log besides its data and topics (keys, address, hashes, quantities), and per topic.
const LOG_JSON_BYTES = 360
const TOPIC_JSON_BYTES = 69

/** About how many bytes of JSON the node sent for these logs. */
export function logsJsonBytes(logs: readonly { data: string; topics: readonly string[] }[]): number {
  let bytes = 0
  for (const log of logs) bytes += LOG_JSON_BYTES + log.data.length + log.topics.length * TOPIC_JSON_BYTES
  return bytes
}

/** What one `eth_getLogs` answer held: its width in blocks, its logs and their bytes. */
export type LogsDensity = { blocks: number; logs: number; bytes: number }

/**
 * Blocks for the next request so its answer holds about `target.logs` logs and `target.bytes` bytes,
 * at the density of the last answer: a chain whose blocks shrink (Base's 2 s → 200 ms) or grow dense
 * is followed answer by answer, never by a block count fixed once. At least one block.
 */
export function blocksForTarget(last: LogsDensity, target: { logs: number; bytes: number }): number {
  const byLogs = (target.logs * last.blocks) / Math.max(last.logs, 1)
  const byBytes = (target.bytes * last.blocks) / Math.max(last.bytes, 1)
  return Math.max(1, Math.floor(Math.min(byLogs, byBytes)))
}
