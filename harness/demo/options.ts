/** The demo's command line and environment. */
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { DEVNET_PROFILES, MAX_CANONICAL_LAG, type DevnetProfile } from '../devnet/index.js'
import { isDatabaseName } from './servers.js'

export const USAGE = `usage: npm run demo [-- --chain <base|op> | --chains base,op] [--duration <90s|2m|1500ms>] [--lag <0-${MAX_CANONICAL_LAG} blocks>] [--divergence <20%|0.2>] (--lag and --divergence with --chain op)`

export const DEFAULTS = {
  databaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
  redisUrl: 'redis://127.0.0.1:6379',
  database: 'codetrail_demo',
  redisPrefix: 'codetrail-demo',
  /** Used when free; otherwise any free port. */
  apiPort: 8080,
  rpcPort: 8545,
} as const

/** What `REDIS_PREFIX` accepts. */
const REDIS_PREFIX = /^[A-Za-z0-9_.-]{1,64}$/

export class UsageError extends Error {
  override name = 'UsageError'
}

export type Options = {
  /** The devnet's profile: `base` (200 ms blocks, no pre-confirmations) or `op` (2 s blocks pre-confirmed through `pending`). */
  chain: DevnetProfile
  /** Every devnet the deployment indexes, `chain` first: two with `--chains base,op`, else `chain` alone. */
  chains: DevnetProfile[]
  /** Stop by itself after this long; undefined: run until Ctrl-C. */
  durationMs: number | undefined
  /** The server to use (its own database stays untouched). */
  databaseUrl: string
  redisUrl: string
  database: string
  redisPrefix: string
  /** Ports asked for; undefined: the defaults when free. */
  apiPort: number | undefined
  rpcPort: number | undefined
  logFile: string
  /** Blocks the devnet's canonical chain lags its flashblocks (the pending window spans this many more blocks). */
  canonicalLag: number
  /** Fraction of pending transactions whose pre-confirmed logs differ from what is sealed. */
  divergence: number
}

/** `90`, `90s`, `2m` or `1500ms` in milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m)?$/.exec(text.trim())
  if (!match) throw new UsageError(`--duration must look like 90s, 2m or 1500ms, got "${text}"`)
  const unit = match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1_000
  return Number(match[1]) * unit
}

function chain(value: string | undefined): DevnetProfile {
  if (value === undefined) return 'base'
  const profile = DEVNET_PROFILES.find((p) => p === value)
  if (!profile) throw new UsageError(`--chain must be one of ${DEVNET_PROFILES.join(', ')}, got "${value}"`)
  return profile
}

/** `base,op`: two different profiles, one devnet each in one deployment. */
function chainList(value: string): DevnetProfile[] {
  const profiles = value.split(',').map((name) => chain(name.trim()))
  if (profiles.length !== 2 || profiles[0] === profiles[1])
    throw new UsageError(`--chains must name two different profiles (base,op), got "${value}"`)
  return profiles
}

function canonicalLag(value: string | undefined): number {
  if (value === undefined) return 0
  const n = Number(value)
  if (!/^\d+$/.test(value) || n > MAX_CANONICAL_LAG)
    throw new UsageError(`--lag must be a number of blocks from 0 to ${MAX_CANONICAL_LAG}, got "${value}"`)
  return n
}

/** `20%` or `0.2` as a fraction. */
function divergence(value: string | undefined): number {
  if (value === undefined) return 0
  const match = /^(\d+(?:\.\d+)?)(%?)$/.exec(value.trim())
  const n = match ? Number(match[1]) / (match[2] ? 100 : 1) : Number.NaN
  if (!(n >= 0 && n <= 1)) throw new UsageError(`--divergence must be a fraction from 0 to 1 or a percentage (0.2, 20%), got "${value}"`)
  return n
}

function port(name: string, value: string | undefined): number | undefined {
  if (!value) return undefined
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < 1 || n > 65_535) throw new UsageError(`${name} must be a port from 1 to 65535, got "${value}"`)
  return n
}

/**
 * Reads `--chain`, `--chains`, `--duration`, `--lag`, `--divergence` and the environment: DATABASE_URL, REDIS_URL, DEMO_DATABASE, DEMO_REDIS_PREFIX,
 * PORT, DEMO_RPC_PORT, DEMO_DURATION_MS, DEMO_LOG_FILE. Throws a `UsageError` (empty message for --help).
 */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options {
  let values
  try {
    ;({ values } = parseArgs({
      args: argv,
      options: {
        chain: { type: 'string' },
        chains: { type: 'string' },
        duration: { type: 'string' },
        lag: { type: 'string' },
        divergence: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    }))
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]!)
  }
  if (values.help) throw new UsageError('')
  const database = env.DEMO_DATABASE || DEFAULTS.database
  if (!isDatabaseName(database)) throw new UsageError(`DEMO_DATABASE must be a plain lowercase database name, got "${database}"`)
  const redisPrefix = env.DEMO_REDIS_PREFIX || DEFAULTS.redisPrefix
  if (!REDIS_PREFIX.test(redisPrefix)) throw new UsageError(`DEMO_REDIS_PREFIX must be 1–64 letters, digits, _ . -, got "${redisPrefix}"`)
  const duration = values.duration ?? (env.DEMO_DURATION_MS ? `${env.DEMO_DURATION_MS}ms` : undefined)
  if (values.chain !== undefined && values.chains !== undefined) throw new UsageError('--chain and --chains exclude each other')
  const profiles = values.chains === undefined ? [chain(values.chain)] : chainList(values.chains)
  const profile = profiles[0]!
  if (!profiles.includes('op') && (values.lag !== undefined || values.divergence !== undefined)) {
    throw new UsageError('--lag and --divergence shape pre-confirmations: they need --chain op')
  }
  return {
    chain: profile,
    chains: profiles,
    durationMs: duration === undefined ? undefined : parseDuration(duration),
    databaseUrl: env.DATABASE_URL || DEFAULTS.databaseUrl,
    redisUrl: env.REDIS_URL || DEFAULTS.redisUrl,
    database,
    redisPrefix,
    apiPort: port('PORT', env.PORT),
    rpcPort: port('DEMO_RPC_PORT', env.DEMO_RPC_PORT),
    logFile: env.DEMO_LOG_FILE || join(tmpdir(), 'codetrail-demo.log'),
    canonicalLag: canonicalLag(values.lag),
    divergence: divergence(values.divergence),
  }
}
