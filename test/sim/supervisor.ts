/**
 * The seed's processes (scheduler, worker, backfills) under a supervisor: one that dies, whether
 * SIGKILLed by the schedule or by its crash point, is started again at once without the crash point;
 * a backfill that exits 0 is done.
 */
import { spawnTs, type Spawned } from '../../harness/processes.js'
import type { ProcessName } from './schedule.js'

const RESTART_DELAY_MS = 200
/** Output kept of a process that exited on its own (not by a signal), for the report. */
const OUTPUT_TAIL_CHARS = 1_500

type Managed = {
  name: ProcessName
  entry: string
  args: string[]
  env: Record<string, string>
  current: Spawned
  /** The crash point the current process runs with. */
  crashAt?: string
  /** Exited 0 (backfills only). */
  done: boolean
  restarts: number
}

export type Supervisor = ReturnType<typeof createSupervisor>

export function createSupervisor(log: (line: string) => void) {
  const managed = new Map<ProcessName, Managed>()
  /** Processes this supervisor killed itself: a SIGKILL of any other one running with a crash point is that point firing. */
  const killedHere = new WeakSet<Spawned>()
  const fired: { name: ProcessName; point: string }[] = []
  let stopping = false
  const killHere = (spawned: Spawned, signal: NodeJS.Signals = 'SIGKILL') => {
    killedHere.add(spawned)
    return spawned.kill(signal)
  }

  function launch(entry: Managed, crashAt?: string): Spawned {
    const spawned = spawnTs(entry.entry, entry.args, crashAt ? { ...entry.env, CODETRAIL_CRASH_AT: crashAt } : entry.env)
    entry.current = spawned
    entry.crashAt = crashAt
    void spawned.exited.then((code) => {
      if (crashAt && code === 'SIGKILL' && !killedHere.has(spawned)) fired.push({ name: entry.name, point: crashAt })
      if (stopping || entry.current !== spawned) return
      if (code === 0 && entry.name.startsWith('backfill')) {
        entry.done = true
        log(`${entry.name} finished`)
        return
      }
      const tail = typeof code === 'number' ? `: ${spawned.output().slice(-OUTPUT_TAIL_CHARS).trim()}` : ''
      log(`${entry.name} exited (${code}${crashAt ? ` at crash point ${crashAt}` : ''}); restarting${tail}`)
      entry.restarts++
      setTimeout(() => {
        if (!stopping && entry.current === spawned) launch(entry)
      }, RESTART_DELAY_MS)
    })
    return spawned
  }

  return {
    /** Starts the process (with a crash point: once it has fired, it is started again without). */
    start(name: ProcessName, entry: string, args: string[], env: Record<string, string>, crashAt?: string) {
      const item = { name, entry, args, env, done: false, restarts: 0 } as Managed
      managed.set(name, item)
      launch(item, crashAt)
    },
    /** SIGKILLs the process; the supervisor starts it again. False when it is not running. */
    async kill(name: ProcessName): Promise<boolean> {
      const item = managed.get(name)
      if (!item || item.done) return false
      await killHere(item.current)
      return true
    },
    /** Replaces the process by one that SIGKILLs itself at `point`; once it has, it is started again without. */
    async crashAt(name: ProcessName, point: string): Promise<boolean> {
      const item = managed.get(name)
      if (!item || item.done) return false
      const old = item.current
      item.current = launch(item, point)
      await killHere(old)
      return true
    },
    /** Restarts the process without a crash point if it still runs with one. */
    async clearCrashPoint(name: ProcessName) {
      const item = managed.get(name)
      if (!item || item.done || !item.crashAt) return
      const old = item.current
      item.current = launch(item)
      await killHere(old)
    },
    /** Stops (SIGSTOP) or resumes (SIGCONT) the process, the way a long pause of its machine would. */
    signal(name: ProcessName, signal: 'SIGSTOP' | 'SIGCONT') {
      const pid = managed.get(name)?.current.child.pid
      if (pid !== undefined) process.kill(pid, signal)
    },
    /** What the current process of `name` has printed. */
    output: (name: ProcessName) => managed.get(name)?.current.output() ?? '',
    /** The crash points that fired, in order: the process killed itself there. */
    fired: () => [...fired],
    has: (name: ProcessName) => managed.has(name),
    running: (name: ProcessName) => {
      const item = managed.get(name)
      return item !== undefined && !item.done
    },
    /** The last part of what each unfinished backfill has printed, for a report that it never finished. */
    unfinishedOutput: () =>
      [...managed.values()]
        .filter((m) => m.name.startsWith('backfill') && !m.done)
        .map((m) => `${m.name}: ${m.current.output().slice(-OUTPUT_TAIL_CHARS).trim()}`),
    backfillsDone: () => [...managed.values()].filter((m) => m.name.startsWith('backfill')).every((m) => m.done),
    restarts: () => Object.fromEntries([...managed.values()].map((m) => [m.name, m.restarts])),
    async stopAll() {
      stopping = true
      await Promise.all([...managed.values()].map((m) => killHere(m.current)))
    },
  }
}
