/**
 * The config file: YAML (JSON is YAML too, so `.json` reads the same), because people edit it by hand and
 * want comments beside their chains, and because it needs no build step or loader, unlike a `.ts`
 * file, in a compiled image. Its keys are the environment variables' names in camelCase; what describes a
 * chain sits under each entry of `chains`. Strings may name environment variables as `${NAME}`, so secrets
 * stay in the environment.
 */
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parse, YAMLParseError } from 'yaml'

/** Looked for in the working directory, in this order, when no file is named. */
export const CONFIG_FILE_NAMES = ['codetrail.config.yaml', 'codetrail.config.yml', 'codetrail.config.json'] as const

const MAX_WEIGHT = 1_000
const MAX_REQUESTS_PER_SECOND = 1_000_000
const CHAIN_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/

/** Thrown for a file that cannot be read or does not have the allowed shape; the loader turns it into its one line. */
export class ConfigFileError extends Error {
  override name = 'ConfigFileError'
}

/** The file named (`CODETRAIL_CONFIG`, `--config`), else the first of {@link CONFIG_FILE_NAMES} in the working directory. */
export function findConfigFile(named: string | undefined, cwd = process.cwd()): string | undefined {
  if (named) return named
  return CONFIG_FILE_NAMES.map((name) => resolve(cwd, name)).find((path) => existsSync(path))
}

/** A chain's keys in the file that are not its variable's name in camelCase. */
const CHAIN_KEYS: Record<string, string> = {
  CHAIN_ID: 'id',
  RPC_URL: 'rpc',
  RPC_WS_URL: 'ws',
  INDEX_ADDRESSES: 'addresses',
  INDEX_TOPICS: 'topics',
  BUILDER_CODES_REGISTRY: 'registry.address',
  BUILDER_CODES_REGISTRY_START_BLOCK: 'registry.startBlock',
}

/** `WEBHOOK_TIMEOUT_MS` → `webhookTimeoutMs`. */
export const camelCaseOf = (name: string) => name.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

export type FileEndpoint = { url: string; weight: number; maxRequestsPerSecond: number | undefined; key: string }

export type ConfigFile = {
  /** Top-level settings as variable values (strings), by variable name. */
  globals: Record<string, string>
  chains: { name: string; values: Record<string, string>; endpoints: FileEndpoint[] }[]
  /** The file's key of each variable (under `chains[i].` for a chain's). */
  keyOf: Record<string, string>
}

type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
const isObject = (value: unknown): value is Record<string, Json> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Reads the file into variable values, checking its shape (known keys, scalars where scalars belong,
 * `${NAME}` set in `env`); the values themselves are checked by the same rules as the environment's.
 */
export function readConfigFile(
  path: string,
  env: NodeJS.ProcessEnv,
  { globals, chainNames }: { globals: readonly string[]; chainNames: readonly string[] },
): ConfigFile {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigFileError(
      `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); expected a YAML or JSON file`,
    )
  }
  let document: unknown
  try {
    // Every scalar as written: the core schema would read an unquoted address (0xAb…) as a hex number.
    document = parse(text, { schema: 'failsafe' })
  } catch (error) {
    if (!(error instanceof YAMLParseError)) throw error
    throw new ConfigFileError(`line ${error.linePos?.[0]?.line ?? '?'}: ${error.message.split('\n')[0]}; expected YAML or JSON`)
  }
  if (!isObject(document)) throw new ConfigFileError('expected a mapping with a `chains` list at the top')

  const keyOf: Record<string, string> = {}
  const globalKeys = new Map(globals.map((name) => [camelCaseOf(name), name]))
  const chainKeys = new Map(chainNames.map((name) => [CHAIN_KEYS[name] ?? camelCaseOf(name), name]))
  for (const [key, name] of globalKeys) keyOf[name] = key
  for (const [key, name] of chainKeys) keyOf[name] = key

  const result: ConfigFile = { globals: {}, chains: [], keyOf }
  for (const [key, value] of Object.entries(document)) {
    if (key === 'chains') continue
    const name = globalKeys.get(key)
    if (!name) {
      const where = chainKeys.has(key) ? `; ${key} belongs under each of chains` : ''
      throw new ConfigFileError(`unknown key ${key}${where}; expected chains or one of ${[...globalKeys.keys()].join(', ')}`)
    }
    const scalar = scalarOf(value, key, env)
    if (scalar !== undefined) result.globals[name] = scalar
  }

  const chains = document.chains
  if (!Array.isArray(chains) || chains.length === 0)
    throw new ConfigFileError('chains: expected a list of at least one chain, each with id, name and rpc')
  chains.forEach((chain, i) => {
    const at = `chains[${i}]`
    if (!isObject(chain)) throw new ConfigFileError(`${at}: expected a mapping with id, name and rpc`)
    const values: Record<string, string> = {}
    const flat: Record<string, Json> = {}
    for (const [key, value] of Object.entries(chain)) {
      if (key === 'registry' && isObject(value))
        for (const [inner, innerValue] of Object.entries(value)) flat[`registry.${inner}`] = innerValue
      else flat[key] = value
    }
    for (const required of ['id', 'name', 'rpc'])
      if (flat[required] === undefined || flat[required] === null || flat[required] === '')
        throw new ConfigFileError(`${at}.${required}: missing; every chain needs id, name and rpc`)
    const name = scalarOf(flat.name!, `${at}.name`, env)!
    if (!CHAIN_NAME.test(name))
      throw new ConfigFileError(
        `${at}.name=${JSON.stringify(name)}: expected lowercase letters, digits, _ and - (1–32, such as base or op)`,
      )
    const endpoints = endpointsOf(flat.rpc!, `${at}.rpc`, env)
    for (const [key, value] of Object.entries(flat)) {
      if (key === 'name' || key === 'rpc') continue
      const variable = chainKeys.get(key)
      if (!variable)
        throw new ConfigFileError(
          `${at}: unknown key ${key}; expected name, rpc, ${[...chainKeys.keys()].filter((k) => k !== 'rpc').join(', ')}`,
        )
      const scalar = scalarOf(value, `${at}.${key}`, env)
      if (scalar !== undefined) values[variable] = scalar
    }
    result.chains.push({ name, values, endpoints })
  })
  return result
}

/** A value as a variable's string: lists joined by commas, `${NAME}` replaced; null is unset. */
function scalarOf(value: Json, key: string, env: NodeJS.ProcessEnv): string | undefined {
  if (value === null || value === '') return undefined
  if (Array.isArray(value)) return value.map((item, i) => scalarOf(item, `${key}[${i}]`, env) ?? '').join(',')
  if (typeof value === 'object') throw new ConfigFileError(`${key}: expected a value, not a mapping`)
  // Switches read as the environment's 1 and 0.
  const text = value === 'true' || value === true ? '1' : value === 'false' || value === false ? '0' : String(value)
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const set = env[name]
    if (set === undefined || set === '')
      throw new ConfigFileError(`${key}: \${${name}} is not set in the environment; expected it set, or the value written out`)
    return set
  })
}

/** `rpc`: one URL, or a list of URLs and `{url, weight?, maxRequestsPerSecond?}`. */
function endpointsOf(value: Json, key: string, env: NodeJS.ProcessEnv): FileEndpoint[] {
  const items = Array.isArray(value) ? value : [value]
  if (items.length === 0) throw new ConfigFileError(`${key}: expected at least one URL`)
  return items.map((item, j) => {
    const at = Array.isArray(value) ? `${key}[${j}]` : key
    if (!isObject(item)) return { url: scalarOf(item, at, env) ?? '', weight: 1, maxRequestsPerSecond: undefined, key: at }
    for (const inner of Object.keys(item))
      if (!['url', 'weight', 'maxRequestsPerSecond'].includes(inner))
        throw new ConfigFileError(`${at}: unknown key ${inner}; expected url, weight, maxRequestsPerSecond`)
    if (item.url === undefined || item.url === null || item.url === '')
      throw new ConfigFileError(`${at}.url: missing; expected the endpoint's URL`)
    return {
      url: scalarOf(item.url, `${at}.url`, env)!,
      weight: integerOf(item.weight, `${at}.weight`, env, 1, MAX_WEIGHT) ?? 1,
      maxRequestsPerSecond: integerOf(item.maxRequestsPerSecond, `${at}.maxRequestsPerSecond`, env, 1, MAX_REQUESTS_PER_SECOND),
      key: `${at}.url`,
    }
  })
}

function integerOf(value: Json | undefined, key: string, env: NodeJS.ProcessEnv, min: number, max: number): number | undefined {
  if (value === undefined || value === null || value === '') return undefined
  const text = scalarOf(value, key, env)!
  const n = /^\d+$/.test(text) ? Number(text) : NaN
  if (!(n >= min && n <= max)) throw new ConfigFileError(`${key}=${JSON.stringify(text)}: expected an integer from ${min} to ${max}`)
  return n
}
