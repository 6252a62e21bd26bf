import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

/** `harness/bench/results.json`: every figure a number, or null when no run has measured it yet. */
export type BenchResults = {
  limits: { rpcLogsPerSec: number | null; copyRowsPerSec: number | null }
  backfill: {
    logs: number | null
    logsPerSec: number | null
    ratioToLimit: number | null
    peakRssMiB: number | null
    /** The ratio with the node on a core of its own (median of its runs). */
    nodeOwnCoreRatioToLimit: number | null
  }
  pending: { p50Ms: number | null; p99Ms: number | null }
  decode: { noSuffixPerSec: number | null; withSuffixPerSec: number | null }
  api: { p50Ms: number | null; p99Ms: number | null; requestsPerSec: number | null }
  webhooks: {
    p50Ms: number | null
    p99Ms: number | null
    barePostsPerSec: number | null
    triggerCopyOverhead: number | null
    retentionDroppedMs: number | null
    retentionDeletedMs: number | null
  }
  blocksScope: {
    transactions: number | null
    txPerSec: number | null
    limitTxPerSec: number | null
    ratioToLimit: number | null
    peakRssMiB: number | null
    /** The ratio with the node on a core of its own. */
    nodeOwnCoreRatioToLimit: number | null
  }
  /** Heads by polling. */
  tip: TipResults
  tipBlocksScope: TipResults
  /** Heads by `newHeads` over `RPC_WS_URL`. */
  tipWs: TipResults
  tipWsBlocksScope: TipResults
}

/** The tip at 5 blocks/s on the devnet's `base` profile (`npm run bench -- tip`). */
export type TipResults = {
  p50Ms: number | null
  p99Ms: number | null
  callsPerBlock: number | null
  requestsPerBlock: number | null
  corePct: number | null
  pendingRows: number | null
  sustainedPerSec: number | null
}

const EMPTY_TIP: TipResults = {
  p50Ms: null,
  p99Ms: null,
  callsPerBlock: null,
  requestsPerBlock: null,
  corePct: null,
  pendingRows: null,
  sustainedPerSec: null,
}

export const EMPTY_RESULTS: BenchResults = {
  limits: { rpcLogsPerSec: null, copyRowsPerSec: null },
  backfill: { logs: null, logsPerSec: null, ratioToLimit: null, peakRssMiB: null, nodeOwnCoreRatioToLimit: null },
  pending: { p50Ms: null, p99Ms: null },
  decode: { noSuffixPerSec: null, withSuffixPerSec: null },
  api: { p50Ms: null, p99Ms: null, requestsPerSec: null },
  webhooks: {
    p50Ms: null,
    p99Ms: null,
    barePostsPerSec: null,
    triggerCopyOverhead: null,
    retentionDroppedMs: null,
    retentionDeletedMs: null,
  },
  blocksScope: {
    transactions: null,
    txPerSec: null,
    limitTxPerSec: null,
    ratioToLimit: null,
    peakRssMiB: null,
    nodeOwnCoreRatioToLimit: null,
  },
  tip: EMPTY_TIP,
  tipBlocksScope: EMPTY_TIP,
  tipWs: EMPTY_TIP,
  tipWsBlocksScope: EMPTY_TIP,
}

/** The previous results, so a run of some parts keeps the others' figures; only known keys are kept. */
export function readResults(path: string): BenchResults {
  if (!existsSync(path)) return structuredClone(EMPTY_RESULTS)
  let previous: Record<string, Record<string, unknown>>
  try {
    previous = JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, unknown>>
  } catch {
    return structuredClone(EMPTY_RESULTS)
  }
  const results = structuredClone(EMPTY_RESULTS) as unknown as Record<string, Record<string, number | null>>
  for (const [section, figures] of Object.entries(results)) {
    for (const key of Object.keys(figures)) {
      const value = previous[section]?.[key]
      if (typeof value === 'number' && Number.isFinite(value)) figures[key] = value
    }
  }
  return results as unknown as BenchResults
}

export function writeResults(path: string, results: BenchResults): void {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`)
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export const round = (value: number, digits = 0) => Number(value.toFixed(digits))
export const count = (value: number) => Math.round(value).toLocaleString('en-US')

export type TableRow = { figure: string; measured: string; beside?: string; verdict?: string }

/** A plain-text table; rows without a figure name are indented detail lines under the previous row. */
export function formatTable(rows: readonly TableRow[]): string {
  const header: TableRow = { figure: 'figure', measured: 'measured', beside: 'limit / target', verdict: 'ratio' }
  // Detail lines run past the columns instead of widening them.
  const all = [header, ...rows.filter((r) => r.figure !== '')]
  const widths = {
    figure: Math.max(...all.map((r) => r.figure.length)),
    measured: Math.max(...all.map((r) => r.measured.length)),
    beside: Math.max(...all.map((r) => (r.beside ?? '').length)),
  }
  const line = (r: TableRow) =>
    r.figure === '' && !r.beside
      ? `  ${r.measured}`
      : `${r.figure.padEnd(widths.figure)}  ${r.measured.padStart(widths.measured)}  ${(r.beside ?? '').padEnd(widths.beside)}  ${r.verdict ?? ''}`.trimEnd()
  const rule = '-'.repeat(widths.figure + widths.measured + widths.beside + 16)
  return [line(header), rule, ...rows.map(line)].join('\n')
}
