import { availableParallelism } from 'node:os'
import ipaddr from 'ipaddr.js'
import { z } from 'zod'
import { ConfigError } from '../internal/errors.js'
import { DEFAULT_MAX_RESPONSE_BYTES, MAX_BLOCKS_PER_REQUEST } from './limits.js'
import { MASK, redactUrl, secretsOfUrl } from '../utils/redact.js'
import { ConfigFileError, findConfigFile, readConfigFile, type ConfigFile } from './file.js'

export const ROLES = ['api', 'worker', 'scheduler', 'all'] as const
export type Role = (typeof ROLES)[number]

const MAX_CHUNK_BLOCKS = MAX_BLOCKS_PER_REQUEST
/**
 * The API's defaults, also where the API is created without a full configuration (tests, bench). Its
 * pool has as many connections as this machine has cores (2 to 16): sized for a database server like it.
 */
export const API_DEFAULTS = {
  rateLimit: 600,
  registrationRateLimit: 30,
  statementTimeoutMs: 5_000,
  readMaxLagMs: 5_000,
  dbPoolSize: Math.min(16, Math.max(2, availableParallelism())),
} as const
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/** Long enough that guessing it over HTTP is hopeless. */
const MIN_ADMIN_TOKEN_LENGTH = 16

const hexAddress = /^0x[0-9a-fA-F]{40}$/
const hexTopic = /^0x[0-9a-fA-F]{64}$/

const url = (protocols: string[]) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol)
      } catch {
        return false
      }
    },
    `a ${protocols.map((p) => p.replace(':', '')).join(' or ')} URL`,
  )

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `an integer from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `an integer from ${min} to ${max}`)

const list = (pattern: RegExp, what: string) =>
  z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    )
    .refine((items) => items.every((item) => pattern.test(item)), `comma-separated ${what}`)
    .transform((items) => [...new Set(items.map((item) => item.toLowerCase() as `0x${string}`))].sort())

/** A hop count, or addresses and CIDR ranges of the proxies in front (Fastify's `trustProxy`). */
const trustProxy = z
  .string()
  .transform((value) =>
    /^\d+$/.test(value)
      ? Number(value)
      : value
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean),
  )
  .refine(
    (value) =>
      typeof value === 'number'
        ? value >= 1 && value <= 32
        : value.length > 0 && value.every((item) => ipaddr.isValid(item) || ipaddr.isValidCIDR(item)),
    'a hop count from 1 to 32, or comma-separated IP addresses and CIDR ranges',
  )

/** Browser origins: scheme, host and port only, as a browser sends them in `Origin`. */
const origins = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  )
  .refine(
    (items) =>
      items.every((item) => {
        try {
          const url = new URL(item)
          return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === item.replace(/\/$/, '')
        } catch {
          return false
        }
      }),
    'comma-separated origins such as https://app.example.com (scheme, host and optional port; no path)',
  )
  .transform((items) => [...new Set(items.map((item) => new URL(item).origin))])

/** Each environment variable codetrail reads, with its default; `describe` is what the error line says is allowed. */
const schema = z.object({
  CHAIN_ID: integer(1, Number.MAX_SAFE_INTEGER).optional(),
  RPC_URL: url(['http:', 'https:']).default('http://127.0.0.1:8545'),
  RPC_WS_URL: url(['ws:', 'wss:']).optional(),
  DATABASE_URL: url(['postgres:', 'postgresql:']).default('postgres://postgres@127.0.0.1:5432/postgres'),
  DATABASE_READ_URL: url(['postgres:', 'postgresql:']).optional(),
  READ_MAX_LAG_MS: integer(100, 3_600_000).default(API_DEFAULTS.readMaxLagMs),
  REDIS_URL: url(['redis:', 'rediss:']).default('redis://127.0.0.1:6379'),
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (1–64)')
    .default('codetrail'),
  BUILDER_API_URL: url(['http:', 'https:']).optional(),
  INDEX_ADDRESSES: list(hexAddress, '0x-prefixed 20-byte addresses').default([]),
  INDEX_TOPICS: list(hexTopic, '0x-prefixed 32-byte topics').default([]),
  START_BLOCK: z
    .string()
    .regex(/^(latest|\d+)$/, '"latest" or a block number')
    .transform((value) => (value === 'latest' ? ('latest' as const) : BigInt(value)))
    .default('latest'),
  CHUNK_BLOCKS: integer(1, MAX_CHUNK_BLOCKS).default(1000),
  PENDING_POLL_MS: integer(0, 60_000).default(200),
  HEAD_POLL_MS: integer(50, 60_000).optional(),
  FINALITY_DEPTH: integer(1, 100_000).optional(),
  FINALITY_SECONDS: integer(1, 86_400).default(900),
  PRECONFIRMATIONS: z.enum(['auto', 'on', 'off']).default('auto'),
  ATTRIBUTION_SCOPE: z.enum(['logs', 'blocks']).default('logs'),
  PORT: integer(0, 65_535).default(8080),
  ADMIN_UI: z
    .enum(['0', '1'])
    .transform((value) => value === '1')
    .default(false),
  ADMIN_TOKEN: z
    .string()
    .regex(new RegExp(`^[\\x21-\\x7e]{${MIN_ADMIN_TOKEN_LENGTH},}$`), `at least ${MIN_ADMIN_TOKEN_LENGTH} printable characters, no spaces`)
    .optional(),
  METRICS_PORT: integer(0, 65_535).optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  WORKER_CONCURRENCY: integer(1, 64).default(4),
  JOB_LOCK_MS: integer(1_000, 600_000).default(30_000),
  RPC_TIMEOUT_MS: integer(100, 600_000).default(30_000),
  RPC_BATCH_SIZE: integer(1, 10_000).default(100),
  // V8 cannot hold a string much above 512 MiB.
  RPC_MAX_RESPONSE_BYTES: integer(65_536, 512 * 1024 * 1024).default(DEFAULT_MAX_RESPONSE_BYTES),
  API_RATE_LIMIT: integer(1, 1_000_000).default(API_DEFAULTS.rateLimit),
  API_STATEMENT_TIMEOUT_MS: integer(100, 600_000).default(API_DEFAULTS.statementTimeoutMs),
  API_DB_POOL_SIZE: integer(1, 1_000).default(API_DEFAULTS.dbPoolSize),
  TRUST_PROXY: trustProxy.optional(),
  CORS_ORIGINS: origins.default([]),
  REGISTRATION_RATE_LIMIT: integer(1, 1_000_000).default(API_DEFAULTS.registrationRateLimit),
  BUILDER_CODES_REGISTRY: z
    .string()
    .regex(hexAddress, 'a 0x-prefixed 20-byte address')
    .transform((value) => value.toLowerCase() as `0x${string}`)
    .optional(),
  BUILDER_CODES_REGISTRY_START_BLOCK: integer(0, Number.MAX_SAFE_INTEGER).default(0),
  WEBHOOK_TIMEOUT_MS: integer(100, 600_000).default(10_000),
  WEBHOOK_MAX_FAILURES: integer(1, 1_000_000).default(20),
  WEBHOOK_BACKOFF_MS: integer(10, 3_600_000).default(5_000),
  WEBHOOK_ALLOW_PRIVATE: z
    .enum(['0', '1'])
    .transform((value) => value === '1')
    .default(false),
  WEBHOOK_RETENTION_DAYS: integer(1, 36_500).default(30),
  RETENTION_LOGS_DAYS: integer(1, 36_500).optional(),
  STREAM_MAX_CLIENTS: integer(1, 1_000_000).default(1_000),
  SECRETS_KEY: z
    .string()
    .transform((value, context) => {
      const key = parseSecretsKey(value)
      if (key) return key
      context.addIssue({ code: 'custom', message: '32 bytes, as 64 hex digits or base64' })
      return z.NEVER
    })
    .optional(),
  DASHBOARD_DIR: z.string().optional(),
  MIGRATE_ON_START: z
    .enum(['0', '1'])
    .transform((value) => value === '1')
    .optional(),
  SHUTDOWN_TIMEOUT_MS: integer(1, 3_600_000).default(25_000),
})

type Parsed = z.output<typeof schema>
type Name = keyof typeof schema.shape

/** The variables that describe one chain: in a config file they sit under each of its `chains`. */
const CHAIN_NAMES = [
  'CHAIN_ID',
  'RPC_URL',
  'RPC_WS_URL',
  'INDEX_ADDRESSES',
  'INDEX_TOPICS',
  'START_BLOCK',
  'PENDING_POLL_MS',
  'HEAD_POLL_MS',
  'FINALITY_DEPTH',
  'FINALITY_SECONDS',
  'PRECONFIRMATIONS',
  'ATTRIBUTION_SCOPE',
  'BUILDER_CODES_REGISTRY',
  'BUILDER_CODES_REGISTRY_START_BLOCK',
] as const satisfies readonly Name[]

/** One node endpoint of a chain: requests spread over a chain's endpoints by weight, each under its own rate cap. */
export type RpcEndpoint = Readonly<{ url: string; weight: number; maxRequestsPerSecond: number | undefined }>

/** What one chain is and how it is followed: the fields of {@link Config} a config file sets per chain. */
export type ChainConfig = Pick<
  Config,
  | 'chainId'
  | 'chainName'
  | 'rpcUrl'
  | 'rpcEndpoints'
  | 'rpcWsUrl'
  | 'indexAddresses'
  | 'indexTopics'
  | 'startBlock'
  | 'pendingPollMs'
  | 'headPollMs'
  | 'finalityDepth'
  | 'finalitySeconds'
  | 'preconfirmations'
  | 'attributionScope'
  | 'builderCodesRegistry'
  | 'builderCodesRegistryStartBlock'
>

export type Config = Readonly<{
  /** Where the configuration came from: the config file's path, or undefined for the environment alone. */
  configFile: string | undefined
  /**
   * Every configured chain; the chain fields below are the first one's. A config file lists several,
   * the environment describes one.
   */
  chains: readonly ChainConfig[]
  /** The chain's name in the config file (for people: logs, status, the dashboard); from the environment, `chain`. */
  chainName: string
  /** The chain's node endpoints (a config file may list several); `rpcUrl` is the first. */
  rpcEndpoints: readonly RpcEndpoint[]
  /** `CHAIN_ID`: the chain the node must serve (its `eth_chainId` is checked at start and after it failed); unset: whatever it serves at start. */
  chainId: number | undefined
  rpcUrl: string
  rpcWsUrl: string | undefined
  databaseUrl: string
  /** `DATABASE_READ_URL`: a streaming replica the `api` role reads from; unset: it reads the primary. */
  databaseReadUrl: string | undefined
  /** `READ_MAX_LAG_MS`: a replica further behind is bypassed until it catches up. */
  readMaxLagMs: number
  redisUrl: string
  redisPrefix: string
  builderApiUrl: string | undefined
  indexAddresses: readonly `0x${string}`[]
  indexTopics: readonly `0x${string}`[]
  startBlock: bigint | 'latest'
  chunkBlocks: number
  pendingPollMs: number
  /** `HEAD_POLL_MS`; unset: the measured block time (never under 100 ms). */
  headPollMs: number | undefined
  /** `FINALITY_DEPTH`; unset: `finalitySeconds` converted with the measured block time. */
  finalityDepth: number | undefined
  /** The depth fallback for a node without a `finalized` tag, in seconds of chain. */
  finalitySeconds: number
  /** `PRECONFIRMATIONS`: `auto` probes whether `pending` pre-confirms; `on`/`off` force it. */
  preconfirmations: 'auto' | 'on' | 'off'
  attributionScope: 'logs' | 'blocks'
  port: number
  adminUi: boolean
  /** Bearer token of the admin routes; unset: they are not served. */
  adminToken: string | undefined
  /** Where roles without the API serve `/metrics`; unset: they serve none. */
  metricsPort: number | undefined
  logLevel: (typeof LOG_LEVELS)[number]
  workerConcurrency: number
  jobLockMs: number
  rpcTimeoutMs: number
  rpcBatchSize: number
  /** `RPC_MAX_RESPONSE_BYTES`: a larger node answer is a retryable "too large" (a log range then splits). */
  rpcMaxResponseBytes: number
  apiRateLimit: number
  apiStatementTimeoutMs: number
  /** `API_DB_POOL_SIZE`: database connections the API's queries share. */
  apiDbPoolSize: number
  /** `TRUST_PROXY`: hops or proxy addresses whose `X-Forwarded-For` names the client; unset: the socket's peer is the client. */
  trustProxy: number | readonly string[] | undefined
  /** `CORS_ORIGINS`: browser origins allowed to call the API and the stream; empty: none. */
  corsOrigins: readonly string[]
  /** `REGISTRATION_RATE_LIMIT`: registrations per minute per client. */
  registrationRateLimit: number
  /** The BuilderCodes registry (ERC-721) whose events are always indexed, lowercase. */
  builderCodesRegistry: `0x${string}` | undefined
  builderCodesRegistryStartBlock: number
  webhookTimeoutMs: number
  webhookMaxFailures: number
  /** First step of a failing webhook's exponential backoff. */
  webhookBackoffMs: number
  /** `WEBHOOK_ALLOW_PRIVATE=1`: webhooks may go to loopback and private addresses (never link-local or metadata). */
  webhookAllowPrivate: boolean
  /** Days webhook events and delivery records are kept (an event still owed to an enabled subscription stays). */
  webhookRetentionDays: number
  /**
   * `RETENTION_LOGS_DAYS`: finalized raw logs and unattributed transactions older than this many days are
   * deleted; undefined keeps everything. Attributions, rollups and registry logs are always kept.
   */
  retentionLogsDays: number | undefined
  /** `STREAM_MAX_CLIENTS`: `/v1/stream` connections one API process serves at once (beyond: 503). */
  streamMaxClients: number
  /** `SECRETS_KEY`: seals webhook secrets at rest (AES-256-GCM); unset, they are stored as they are. */
  secretsKey: Buffer | undefined
  /** The dashboard bundle the API serves at `/`; unset: the one `npm run build` wrote to dist/web. */
  dashboardDir: string | undefined
  /** `MIGRATE_ON_START`; unset: the role decides (see {@link migratesOnStart}). */
  migrateOnStart: boolean | undefined
  /** After a stop signal, the process exits 1 once this passes, naming what has not stopped. */
  shutdownTimeoutMs: number
}>

export { ConfigError }

/** `SECRETS_KEY` decoded: 32 bytes for AES-256-GCM. */
export function parseSecretsKey(value: string): Buffer | null {
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64')
  return key.length === 32 ? key : null
}

/** Whether a daemon of this role applies migrations at start: `MIGRATE_ON_START`, else only the roles that write the index's state. */
export function migratesOnStart(config: Pick<Config, 'migrateOnStart'>, role: Role): boolean {
  return config.migrateOnStart ?? (role === 'all' || role === 'scheduler')
}

/** Variables whose value may hold a secret, and how an error line shows it. */
const SHOWN_AS: Partial<Record<Name, (value: string) => string>> = {
  RPC_URL: redactUrl,
  RPC_WS_URL: redactUrl,
  DATABASE_URL: redactUrl,
  DATABASE_READ_URL: redactUrl,
  REDIS_URL: redactUrl,
  BUILDER_API_URL: redactUrl,
  ADMIN_TOKEN: () => MASK,
  SECRETS_KEY: () => MASK,
}

/**
 * Reads and validates the configuration once: the config file when there is one (`file`, else
 * `CODETRAIL_CONFIG`, else `codetrail.config.{yaml,yml,json}` in the working directory), the
 * environment for everything the file leaves out, defaults for the rest. Empty strings count as unset.
 * Throws a `ConfigError` whose message is one line naming the variable (or the file's key path), the
 * value and what is allowed; a URL shows only its scheme, host and port, and the admin token not at all.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, { file }: { file?: string | undefined } = {}): Config {
  const path = findConfigFile(file ?? env.CODETRAIL_CONFIG?.trim())
  const input: Record<string, string> = {}
  for (const key of Object.keys(schema.shape)) {
    const value = env[key]?.trim()
    if (value) input[key] = value
  }
  if (!path)
    return Object.freeze(
      toConfig(
        parse(input, (name) => name),
        undefined,
      ),
    )
  const shown = (where: string) => `${path}: ${where}`
  let read: ConfigFile
  try {
    read = readConfigFile(path, env, {
      globals: Object.keys(schema.shape).filter((name) => !(CHAIN_NAMES as readonly string[]).includes(name)),
      chainNames: CHAIN_NAMES,
    })
  } catch (error) {
    if (error instanceof ConfigFileError) throw new ConfigError(`invalid ${shown(error.message)}`)
    throw error
  }
  // The file's settings win over the environment's; the environment's chain variables do not apply.
  for (const name of CHAIN_NAMES) delete input[name]
  const globals = parse({ ...input, ...read.globals }, (name) => (name in read.globals ? shown(read.keyOf[name]!) : name))
  const chains = read.chains.map((chain, i) => {
    for (const endpoint of chain.endpoints) parse({ RPC_URL: endpoint.url }, () => shown(endpoint.key))
    if (chain.values.CHAIN_ID === undefined)
      throw new ConfigError(`invalid ${shown(`chains[${i}].id`)}: missing; expected the chain id the node serves`)
    const parsed = parse({ ...input, ...chain.values }, (name) => (name in chain.values ? shown(`chains[${i}].${read.keyOf[name]}`) : name))
    return chainConfigOf(
      parsed,
      chain.name,
      chain.endpoints.map(({ url, weight, maxRequestsPerSecond }) => ({ url, weight, maxRequestsPerSecond })),
    )
  })
  const ids = chains.map((chain) => chain.chainId)
  const repeated = ids.find((id, i) => ids.indexOf(id) !== i)
  if (repeated !== undefined)
    throw new ConfigError(`invalid ${shown('chains')}: chain ${repeated} is listed twice; expected each chain id once`)
  const names = chains.map((chain) => chain.chainName)
  const repeatedName = names.find((name, i) => names.indexOf(name) !== i)
  if (repeatedName !== undefined)
    throw new ConfigError(`invalid ${shown('chains')}: the name ${JSON.stringify(repeatedName)} is used twice; expected each name once`)
  return Object.freeze({ ...toConfig(globals, path), ...chains[0]!, chains: Object.freeze(chains) })
}

/** Validates variables by the schema; `where` names a variable in an error line (the file's key path where it came from there). */
function parse(input: Record<string, string>, where: (name: Name) => string): Parsed {
  const result = schema.safeParse(input)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const name = String(issue.path[0]) as Name
  const allowed = issue.code === 'invalid_value' ? issue.values.map(String).join(', ') : issue.message
  const value = input[name]!
  throw new ConfigError(`invalid ${where(name)}=${JSON.stringify(SHOWN_AS[name]?.(value) ?? value)}: expected ${allowed}`)
}

/** The chain fields of parsed variables. */
function chainConfigOf(p: Parsed, name: string, endpoints: readonly RpcEndpoint[]): ChainConfig {
  return {
    chainId: p.CHAIN_ID,
    chainName: name,
    rpcUrl: endpoints[0]!.url,
    rpcEndpoints: Object.freeze(endpoints),
    rpcWsUrl: p.RPC_WS_URL,
    indexAddresses: Object.freeze(p.INDEX_ADDRESSES),
    indexTopics: Object.freeze(p.INDEX_TOPICS),
    startBlock: p.START_BLOCK,
    pendingPollMs: p.PENDING_POLL_MS,
    headPollMs: p.HEAD_POLL_MS,
    finalityDepth: p.FINALITY_DEPTH,
    finalitySeconds: p.FINALITY_SECONDS,
    preconfirmations: p.PRECONFIRMATIONS,
    attributionScope: p.ATTRIBUTION_SCOPE,
    builderCodesRegistry: p.BUILDER_CODES_REGISTRY,
    builderCodesRegistryStartBlock: p.BUILDER_CODES_REGISTRY_START_BLOCK,
  }
}

/** The configuration for one of its chains: the same settings, that chain's fields. */
export function forChain(config: Config, chain: ChainConfig): Config {
  return Object.freeze({ ...config, ...chain })
}

/** The configuration from variables alone: one chain, the environment's. */
function toConfig(p: Parsed, configFile: string | undefined): Config {
  const chain = chainConfigOf(p, 'chain', [{ url: p.RPC_URL, weight: 1, maxRequestsPerSecond: undefined }])
  return {
    configFile,
    chains: Object.freeze([chain]),
    ...chain,
    databaseUrl: p.DATABASE_URL,
    databaseReadUrl: p.DATABASE_READ_URL,
    readMaxLagMs: p.READ_MAX_LAG_MS,
    redisUrl: p.REDIS_URL,
    redisPrefix: p.REDIS_PREFIX,
    builderApiUrl: p.BUILDER_API_URL?.replace(/\/+$/, ''),
    chunkBlocks: p.CHUNK_BLOCKS,
    port: p.PORT,
    adminUi: p.ADMIN_UI,
    adminToken: p.ADMIN_TOKEN,
    metricsPort: p.METRICS_PORT,
    logLevel: p.LOG_LEVEL,
    workerConcurrency: p.WORKER_CONCURRENCY,
    jobLockMs: p.JOB_LOCK_MS,
    rpcTimeoutMs: p.RPC_TIMEOUT_MS,
    rpcBatchSize: p.RPC_BATCH_SIZE,
    rpcMaxResponseBytes: p.RPC_MAX_RESPONSE_BYTES,
    apiRateLimit: p.API_RATE_LIMIT,
    apiStatementTimeoutMs: p.API_STATEMENT_TIMEOUT_MS,
    apiDbPoolSize: p.API_DB_POOL_SIZE,
    trustProxy: Array.isArray(p.TRUST_PROXY) ? Object.freeze(p.TRUST_PROXY) : p.TRUST_PROXY,
    corsOrigins: Object.freeze(p.CORS_ORIGINS),
    registrationRateLimit: p.REGISTRATION_RATE_LIMIT,
    webhookTimeoutMs: p.WEBHOOK_TIMEOUT_MS,
    webhookMaxFailures: p.WEBHOOK_MAX_FAILURES,
    webhookBackoffMs: p.WEBHOOK_BACKOFF_MS,
    webhookAllowPrivate: p.WEBHOOK_ALLOW_PRIVATE,
    webhookRetentionDays: p.WEBHOOK_RETENTION_DAYS,
    retentionLogsDays: p.RETENTION_LOGS_DAYS,
    streamMaxClients: p.STREAM_MAX_CLIENTS,
    secretsKey: p.SECRETS_KEY,
    dashboardDir: p.DASHBOARD_DIR,
    migrateOnStart: p.MIGRATE_ON_START,
    shutdownTimeoutMs: p.SHUTDOWN_TIMEOUT_MS,
  }
}

/** Every secret the configuration holds (URL keys and passwords, the admin token), for masking output. */
export function secretsOf(
  config: Pick<Config, 'rpcUrl' | 'rpcWsUrl' | 'builderApiUrl' | 'databaseUrl' | 'redisUrl' | 'adminToken'> &
    Partial<Pick<Config, 'databaseReadUrl' | 'chains'>>,
): string[] {
  const chains = config.chains ?? [{ rpcEndpoints: [{ url: config.rpcUrl }], rpcWsUrl: config.rpcWsUrl }]
  return [
    ...chains.flatMap((chain) => [
      ...chain.rpcEndpoints.flatMap((endpoint) => secretsOfUrl(endpoint.url)),
      ...secretsOfUrl(chain.rpcWsUrl),
    ]),
    ...secretsOfUrl(config.builderApiUrl),
    ...secretsOfUrl(config.databaseUrl, { credentialsOnly: true }),
    ...secretsOfUrl(config.databaseReadUrl, { credentialsOnly: true }),
    ...secretsOfUrl(config.redisUrl, { credentialsOnly: true }),
    ...(config.adminToken ? [config.adminToken] : []),
  ]
}
