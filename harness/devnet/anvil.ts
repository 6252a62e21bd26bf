import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { delimiter, join } from 'node:path'
import { sleep } from '../../src/utils/loop.js'

const READY_TIMEOUT_MS = 20_000
/** How long `stop()` waits after SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 5_000
/**
 * The same with `dumpState`: anvil writes the dump as it exits, and a large one (the bench's full fixture,
 * ≈ 600 MiB) takes longer than 5 s on a busy machine; killed meanwhile, it leaves the dump truncated.
 */
const DUMP_STOP_GRACE_MS = 300_000

export type AnvilOptions = {
  /** Port to listen on; a free one is picked when omitted. */
  port?: number
  /** Seconds between blocks; omitted: automine (a block per transaction). */
  blockTime?: number
  /** No mining at all until `evm_mine` (the devnet's pre-confirmed layer mines itself). */
  noMining?: boolean
  chainId?: number
  /** Load a state dump written with `--dump-state`. */
  loadState?: string
  dumpState?: string
  extraArgs?: string[]
  /** How long to wait for the first answer; loading a large state dump on a busy machine takes a while. @default 20_000 */
  readyTimeoutMs?: number
}

export type Anvil = {
  url: string
  port: number
  process: ChildProcess
  stop: () => Promise<void>
}

/** The anvil binary: `ANVIL_BIN`, else `anvil` on `PATH`, else the `@foundry-rs/anvil-linux-amd64` package. */
export function findAnvilBinary(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ANVIL_BIN) return env.ANVIL_BIN
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'anvil'))) return join(dir, 'anvil')
  }
  try {
    const require = createRequire(import.meta.url)
    const pkg = require.resolve('@foundry-rs/anvil-linux-amd64/package.json')
    const bin = join(pkg, '..', 'bin', 'anvil')
    if (existsSync(bin)) return bin
  } catch {}
  throw new Error('anvil not found: set ANVIL_BIN, put anvil on PATH, or install @foundry-rs/anvil-linux-amd64')
}

/**
 * Test processes take ports below the kernel's ephemeral range (32768–60999 by default), where no
 * `connect()` or `listen(0)` of any process lands, each vitest worker from a slice of its own: a port
 * picked here is not taken by another process before the caller binds it. Elsewhere (the demo, the bench)
 * the kernel picks.
 */
const FIRST_TEST_PORT = 20_000
const TEST_PORTS_PER_WORKER = 1_000
const TEST_PORT_SLICES = 12
let nextTestPort = 0

/** A port free on 127.0.0.1 now, for a server about to be started. */
export async function freePort(): Promise<number> {
  const worker = process.env.VITEST_POOL_ID
  if (worker === undefined) return listenOn(0)
  const first = FIRST_TEST_PORT + (Number(worker) % TEST_PORT_SLICES) * TEST_PORTS_PER_WORKER
  for (let tried = 0; tried < TEST_PORTS_PER_WORKER; tried++) {
    const port = first + (nextTestPort++ % TEST_PORTS_PER_WORKER)
    if (await listenOn(port).catch(() => null)) return port
  }
  throw new Error(`no free port in ${first}–${first + TEST_PORTS_PER_WORKER - 1}`)
}

/** Listens on `port` of 127.0.0.1 (0: the kernel's pick) and closes again; resolves to the port. */
async function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(port, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/** Starts anvil on 127.0.0.1 and resolves once it answers JSON-RPC. */
export async function startAnvil(options: AnvilOptions = {}): Promise<Anvil> {
  const port = options.port ?? (await freePort())
  const args = ['--host', '127.0.0.1', '--port', String(port), '--silent']
  if (options.blockTime !== undefined) args.push('--block-time', String(options.blockTime))
  if (options.noMining) args.push('--no-mining')
  if (options.chainId !== undefined) args.push('--chain-id', String(options.chainId))
  if (options.loadState) args.push('--load-state', options.loadState)
  if (options.dumpState) args.push('--dump-state', options.dumpState)
  args.push(...(options.extraArgs ?? []))
  const child = spawn(findAnvilBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const url = `http://127.0.0.1:${port}`
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))

  const readyTimeoutMs = options.readyTimeoutMs ?? READY_TIMEOUT_MS
  const deadline = Date.now() + readyTimeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited with code ${child.exitCode}: ${stderr.trim()}`)
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      })
      if (res.ok) break
    } catch {}
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`anvil did not answer on ${url} within ${readyTimeoutMs} ms`)
    }
    await sleep(50)
  }

  return {
    url,
    port,
    process: child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), options.dumpState ? DUMP_STOP_GRACE_MS : STOP_GRACE_MS)
      await exited
      clearTimeout(timer)
    },
  }
}
