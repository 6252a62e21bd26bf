import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Lines of stderr kept for error messages. */
const STDERR_TAIL_LINES = 20

export type Spawned = {
  child: ChildProcess
  pid: number
  /** Everything the process printed so far, stdout and stderr as they came. */
  output: () => string
  /** The last lines of stderr, for error messages. */
  stderrTail: () => string
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>
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
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const tail: string[] = []
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  createInterface({ input: child.stdout! }).on('line', (line) => onStdoutLine?.(line, performance.now()))
  createInterface({ input: child.stderr! }).on('line', (line) => {
    tail.push(line)
    if (tail.length > STDERR_TAIL_LINES) tail.shift()
    onStderrLine?.(line, performance.now())
  })
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')))
  return {
    child,
    pid: child.pid!,
    output: () => output,
    stderrTail: () => tail.join('\n'),
    exited,
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
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
