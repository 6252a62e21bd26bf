import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Lines of stderr kept for error messages. */
const STDERR_TAIL_LINES = 20
/** How long `waitForLine` waits by default: a daemon under tsx on a loaded machine takes seconds to start. */
const WAIT_FOR_LINE_MS = 60_000

export type Spawned = {
  child: ChildProcess
  pid: number
  /** Everything the process printed so far, stdout and stderr as they came. */
  output: () => string
  /** The last lines of stderr, for error messages. */
  stderrTail: () => string
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>
  /**
   * Resolves with the first line printed (stdout or stderr, before or after the call) that matches;
   * rejects, naming what it waited for with the last lines printed, when the process ends first or
   * `timeoutMs` passes.
   */
  waitForLine: (pattern: RegExp, what: string, timeoutMs?: number) => Promise<string>
  kill: (signal?: NodeJS.Signals) => Promise<number | string>
}

export type SpawnNodeParameters = {
  /** A compiled entry point (`dist/…`) runs as it is; a TypeScript one with tsx as a loader. */
  entry: string
  args?: string[]
  env: Record<string, string>
  /** Flags for node itself, e.g. `--cpu-prof`. */
  nodeFlags?: string[]
  onStdoutLine?: (line: string, at: number) => void
  onStderrLine?: (line: string, at: number) => void
}

/**
 * Runs an entry point of the repo as one node process: tsx as a loader, not its CLI, which would put a
 * second process between the caller and SIGKILL, so the pid is the one that works.
 */
export function spawnNode({ entry, args = [], env, nodeFlags = [], onStdoutLine, onStderrLine }: SpawnNodeParameters): Spawned {
  const loader = entry.endsWith('.ts') ? ['--import', 'tsx'] : []
  const child = spawn(process.execPath, [...nodeFlags, ...loader, entry, ...args], {
    cwd: ROOT,
    // Without the vitest worker's id, a child's freePort takes the kernel's pick, outside its parent's ports.
    env: { ...process.env, VITEST_POOL_ID: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const tail: string[] = []
  const lines: string[] = []
  const lineWaiters = new Set<(line: string) => void>()
  const seen = (line: string) => {
    lines.push(line)
    for (const waiter of lineWaiters) waiter(line)
  }
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  createInterface({ input: child.stdout! }).on('line', (line) => {
    seen(line)
    onStdoutLine?.(line, performance.now())
  })
  createInterface({ input: child.stderr! }).on('line', (line) => {
    seen(line)
    tail.push(line)
    if (tail.length > STDERR_TAIL_LINES) tail.shift()
    onStderrLine?.(line, performance.now())
  })
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')))
  // After the process's output is read to its end, so no line it printed is missed.
  const closed = new Promise<number | string>((resolve) => child.once('close', (code, signal) => resolve(code ?? signal ?? 'unknown')))
  const waitForLine = (pattern: RegExp, what: string, timeoutMs = WAIT_FOR_LINE_MS) => {
    const printed = lines.find((line) => pattern.test(line))
    if (printed !== undefined) return Promise.resolve(printed)
    const lastLines = () => lines.slice(-STDERR_TAIL_LINES).join('\n')
    return new Promise<string>((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer)
        lineWaiters.delete(onLine)
        outcome()
      }
      const onLine = (line: string) => pattern.test(line) && settle(() => resolve(line))
      const timer = setTimeout(
        () => settle(() => reject(new Error(`timed out waiting for ${what}; its last lines:\n${lastLines()}`))),
        timeoutMs,
      )
      lineWaiters.add(onLine)
      void closed.then((code) => settle(() => reject(new Error(`exited (${code}) before ${what}; its last lines:\n${lastLines()}`))))
    })
  }
  return {
    child,
    pid: child.pid!,
    output: () => output,
    stderrTail: () => tail.join('\n'),
    exited,
    waitForLine,
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}

/**
 * The local URL of a server a daemon started on port 0, read from its log line `message` (pino's
 * `"address":"http://0.0.0.0:PORT"`); the port is the system's pick, so no other process can hold it first.
 */
export async function listeningUrl(spawned: Spawned, message: string): Promise<string> {
  const line = await spawned.waitForLine(new RegExp(`"msg":"${message}"`), `"${message}"`)
  const port = /"address":"[^"]*:(\d+)"/.exec(line)?.[1]
  if (port === undefined) throw new Error(`no address in: ${line}`)
  return `http://127.0.0.1:${port}`
}

/** Runs a TypeScript entry point of the repo (`src/main.ts`, `scripts/backfill.ts`, …) logging warnings and worse. */
export function spawnTs(entry: string, args: string[], env: Record<string, string>): Spawned {
  return spawnNode({ entry, args, env: { LOG_LEVEL: 'warn', ...env } })
}

/** Runs an entry point to completion and returns its exit code and output. */
export async function runTs(entry: string, args: string[], env: Record<string, string>) {
  const spawned = spawnTs(entry, args, env)
  const code = await spawned.exited
  return { code, output: spawned.output() }
}
