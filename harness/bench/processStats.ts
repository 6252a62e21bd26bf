import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'

// /proc/<pid>/stat counts CPU time in clock ticks, 100 per second on Linux.
const CLOCK_TICKS = 100

// performance.now() is relative to this process's start; V8 profiles use the monotonic clock itself.
const monotonicOffsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000

/** A `performance.now()` time of this process on the monotonic clock in microseconds, as V8 CPU profiles count. */
export function monotonicUs(at: number): number {
  return at * 1000 + monotonicOffsetUs
}

/** The compiled entry points the bench runs, as users start them after `npm run build`. */
export const COMPILED_ENTRIES = { daemon: 'dist/src/main.js', backfill: 'dist/scripts/backfill.js' } as const

/** Resident set size now and its peak (VmHWM) in MiB, or null once the process has exited. */
export function memoryOf(pid: number): { rssMiB: number; peakMiB: number } | null {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return null
  }
  const kib = (field: string) => new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]
  const rss = kib('VmRSS')
  // An exited process not yet reaped has a status without memory lines.
  if (rss === undefined) return null
  return { rssMiB: Number(rss) / 1024, peakMiB: Number(kib('VmHWM') ?? 0) / 1024 }
}

/** User + system CPU seconds the process has used so far, or null once it is gone. */
export function cpuSecondsOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return null
  }
}

/**
 * Starts counting the CPU a measurement costs: the returned function gives the seconds the node
 * (`nodePid`; undefined without one, or once it is gone) and this process (the client) spent since.
 */
export function startCpuCount(nodePid: number | undefined): () => { nodeCpuSec: number | undefined; clientCpuSec: number } {
  const nodeBefore = nodePid === undefined ? null : cpuSecondsOf(nodePid)
  const clientBefore = process.cpuUsage()
  return () => {
    const nodeAfter = nodePid === undefined ? null : cpuSecondsOf(nodePid)
    const client = process.cpuUsage(clientBefore)
    return {
      nodeCpuSec: nodeBefore !== null && nodeAfter !== null ? nodeAfter - nodeBefore : undefined,
      clientCpuSec: (client.user + client.system) / 1e6,
    }
  }
}

/** PostgreSQL backends connected to `database` (their process title names it). */
export function postgresBackendsOf(database: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (title.startsWith('postgres: ') && title.includes(` ${database} `)) pids.push(Number(entry))
    } catch {}
  }
  return pids
}

/** CPU seconds used so far by the PostgreSQL backends connected to `database` now. */
export function postgresCpuSecondsOf(database: string): number {
  return postgresBackendsOf(database).reduce((sum, pid) => sum + (cpuSecondsOf(pid) ?? 0), 0)
}

export type Sample = { at: number; rssMiB: number }

export type ProcessWatch = {
  /** RSS of the watched process over time. */
  samples: Sample[]
  /** Highest VmHWM seen. */
  peakMiB: () => number
  /** CPU seconds of the watched process and of each group of others, since the watch started. */
  cpu: () => Record<string, number>
  stop: () => void
}

/**
 * Samples a process's memory, and the CPU time of it and of other processes by group (e.g. anvil,
 * the database's backends), every `everyMs`. A process first seen after the watch began counts all
 * its CPU time; any counts up to its last sample.
 */
export function watchProcess(pid: number, others: Record<string, () => number[]>, everyMs = 200): ProcessWatch {
  const samples: Sample[] = []
  let peak = 0
  const baseline = new Map<number, number>()
  const latest = new Map<number, { group: string; seconds: number }>()
  let initial = true
  const sample = () => {
    const memory = memoryOf(pid)
    if (memory) {
      samples.push({ at: performance.now(), rssMiB: memory.rssMiB })
      peak = Math.max(peak, memory.peakMiB)
    }
    for (const [group, pids] of [['codetrail', () => [pid]] as const, ...Object.entries(others)]) {
      for (const p of pids()) {
        const seconds = cpuSecondsOf(p)
        if (seconds === null) continue
        if (!baseline.has(p)) baseline.set(p, initial ? seconds : 0)
        latest.set(p, { group, seconds })
      }
    }
    initial = false
  }
  sample()
  const timer = setInterval(sample, everyMs)
  return {
    samples,
    peakMiB: () => peak,
    cpu: () => {
      const totals: Record<string, number> = {}
      for (const [p, { group, seconds }] of latest) totals[group] = (totals[group] ?? 0) + seconds - baseline.get(p)!
      return totals
    },
    stop: () => {
      sample()
      clearInterval(timer)
    },
  }
}

/**
 * Pins every thread of process `pid` (and what it starts later) to the CPUs `cpus` (`taskset` syntax,
 * e.g. "0" or "0,1"); false where `taskset` is missing or refuses.
 */
export function pinToCpus(pid: number, cpus: string): boolean {
  try {
    execFileSync('taskset', ['-apc', cpus, String(pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** The CPUs other than the node's CPU 0, where the process measured and this one run beside a pinned node. */
export const CPUS_BESIDE_THE_NODE = `1-${Math.max(1, availableParallelism() - 1)}`

/**
 * Runs `work` with the node (`nodePid`) pinned to CPU 0 and this process to the others, as a node on
 * another machine has a core to itself, then unpins both; undefined where that cannot be done (one
 * CPU, no `taskset`). PostgreSQL is left unpinned.
 */
export async function withNodeOnOwnCore<T>(nodePid: number, work: () => Promise<T>): Promise<T | undefined> {
  const everyCpu = `0-${availableParallelism() - 1}`
  if (availableParallelism() < 2 || !pinToCpus(nodePid, '0')) return undefined
  try {
    if (!pinToCpus(process.pid, CPUS_BESIDE_THE_NODE)) return undefined
    return await work()
  } finally {
    pinToCpus(nodePid, everyCpu)
    pinToCpus(process.pid, everyCpu)
  }
}
