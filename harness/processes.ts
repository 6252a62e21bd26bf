import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

export type Spawned = {
  child: ChildProcess
  output: () => string
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string>
  kill: (signal?: NodeJS.Signals) => Promise<number | string>
}

/**
 * Runs a TypeScript entry point of the repo (`src/main.ts`, `scripts/backfill.ts`, …) as one node
 * process (tsx as a loader, not its CLI, which would put a second process between us and SIGKILL).
 */
export function spawnTs(entry: string, args: string[], env: Record<string, string>): Spawned {
  return spawnNode(['--import', 'tsx', entry, ...args], env)
}

/** Runs node in the repo with these arguments (a compiled entry point of `dist/` and its options). */
export function spawnNode(nodeArgs: string[], env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, nodeArgs, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')))
  return {
    child,
    output: () => output,
    exited,
    kill: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
}

/** Runs an entry point to completion and returns its exit code and output. */
export async function runTs(entry: string, args: string[], env: Record<string, string>) {
  const spawned = spawnTs(entry, args, env)
  const code = await spawned.exited
  return { code, output: spawned.output() }
}
