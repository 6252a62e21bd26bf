/** An inclusive block range `[from, to]`. */
export type Interval = readonly [from: number, to: number]

/** Sorts and merges overlapping or adjacent intervals. */
export function intervalUnion(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0])
  const result: [number, number][] = []
  for (const [from, to] of sorted) {
    const last = result[result.length - 1]
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to)
    else result.push([from, to])
  }
  return result
}

/** The parts of `interval` not covered by `covered`. */
export function intervalDifference(interval: Interval, covered: readonly Interval[]): Interval[] {
  const gaps: Interval[] = []
  let cursor = interval[0]
  for (const [from, to] of intervalUnion(covered)) {
    if (to < cursor) continue
    if (from > interval[1]) break
    if (from > cursor) gaps.push([cursor, from - 1])
    cursor = Math.max(cursor, to + 1)
    if (cursor > interval[1]) break
  }
  if (cursor <= interval[1]) gaps.push([cursor, interval[1]])
  return gaps
}

/** How many blocks the intervals cover together. */
export function intervalSum(intervals: readonly Interval[]): number {
  return intervalUnion(intervals).reduce((sum, [from, to]) => sum + (to - from + 1), 0)
}

/**
 * Splits intervals into chunks of at most `size` blocks aligned to multiples of `size`, so the same
 * block always falls in the same chunk whichever range was asked for (stable job ids on re-runs).
 */
export function alignedChunks(intervals: readonly Interval[], size: number): Interval[] {
  if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`chunk size must be a positive integer, got ${size}`)
  const chunks: Interval[] = []
  for (const [from, to] of intervalUnion(intervals)) {
    let start = from
    while (start <= to) {
      const end = Math.min(to, (Math.floor(start / size) + 1) * size - 1)
      chunks.push([start, end])
      start = end + 1
    }
  }
  return chunks
}

/** The parts of `intervals` inside `within`, merged. */
export function intervalIntersection(intervals: readonly Interval[], within: readonly Interval[]): Interval[] {
  const result: Interval[] = []
  for (const [from, to] of intervalUnion(intervals)) {
    for (const [start, end] of intervalUnion(within)) {
      const lo = Math.max(from, start)
      const hi = Math.min(to, end)
      if (lo <= hi) result.push([lo, hi])
    }
  }
  return intervalUnion(result)
}
