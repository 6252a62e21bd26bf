import { mkdtempSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, forChain, loadConfig, secretsOf } from './index.js'

describe('loadConfig', () => {
  it('applies the default of every variable to an empty environment', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      rpcUrl: 'http://127.0.0.1:8545',
      rpcWsUrl: undefined,
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
      databaseReadUrl: undefined,
      readMaxLagMs: 5000,
      redisUrl: 'redis://127.0.0.1:6379',
      builderApiUrl: undefined,
      indexAddresses: [],
      indexTopics: [],
      startBlock: 'latest',
      chunkBlocks: 1000,
      pendingPollMs: 200,
      finalityDepth: undefined,
      finalitySeconds: 900,
      headPollMs: undefined,
      preconfirmations: 'auto',
      attributionScope: 'logs',
      port: 8080,
      adminUi: false,
      adminToken: undefined,
      metricsPort: undefined,
      logLevel: 'info',
      rpcBatchSize: 100,
      apiDbPoolSize: Math.min(16, Math.max(2, availableParallelism())),
    })
    expect(Object.isFrozen(config)).toBe(true)
  })

  it('parses lists, numbers and block numbers', () => {
    const config = loadConfig({
      INDEX_ADDRESSES: ' 0xAbCdEf0123456789abcdef0123456789ABCDEF01, 0x0000000000000000000000000000000000000001 ',
      INDEX_TOPICS: `0x${'ab'.repeat(32)}`,
      START_BLOCK: '123',
      CHUNK_BLOCKS: '1999',
      PENDING_POLL_MS: '0',
      ATTRIBUTION_SCOPE: 'blocks',
      ADMIN_UI: '1',
      ADMIN_TOKEN: 'Zx9-long.enough~token',
      METRICS_PORT: '9464',
      BUILDER_API_URL: 'https://builder.example/',
      RPC_BATCH_SIZE: '250',
      API_DB_POOL_SIZE: '2',
      PRECONFIRMATIONS: 'off',
      FINALITY_SECONDS: '1200',
      FINALITY_DEPTH: '64',
      HEAD_POLL_MS: '250',
      DATABASE_READ_URL: 'postgresql://reader@replica.example:5433/codetrail',
      READ_MAX_LAG_MS: '250',
    })
    expect([config.databaseReadUrl, config.readMaxLagMs]).toEqual(['postgresql://reader@replica.example:5433/codetrail', 250])
    expect([config.preconfirmations, config.finalitySeconds, config.finalityDepth, config.headPollMs]).toEqual(['off', 1200, 64, 250])
    expect([config.adminToken, config.metricsPort]).toEqual(['Zx9-long.enough~token', 9464])
    expect(config.indexAddresses).toEqual(['0x0000000000000000000000000000000000000001', '0xabcdef0123456789abcdef0123456789abcdef01'])
    expect(config.indexTopics).toEqual([`0x${'ab'.repeat(32)}`])
    expect(config.startBlock).toBe(123n)
    expect(config.chunkBlocks).toBe(1999)
    expect(config.pendingPollMs).toBe(0)
    expect(config.attributionScope).toBe('blocks')
    expect(config.adminUi).toBe(true)
    expect(config.builderApiUrl).toBe('https://builder.example')
    expect(config.rpcBatchSize).toBe(250)
    expect(config.apiDbPoolSize).toBe(2)
  })

  it.each([
    ['CHUNK_BLOCKS', '2000', 'invalid CHUNK_BLOCKS="2000": expected an integer from 1 to 1999'],
    ['CHUNK_BLOCKS', 'lots', 'invalid CHUNK_BLOCKS="lots": expected an integer from 1 to 1999'],
    ['RPC_URL', 'localhost:8545', 'invalid RPC_URL="localhost:***": expected a http or https URL'],
    [
      'RPC_URL',
      'ftp://user:hunter22@node.example:2121/v2/key0123?apikey=key4567',
      'invalid RPC_URL="ftp://node.example:2121/***": expected a http or https URL',
    ],
    [
      'DATABASE_URL',
      'mysql://app:hunter22@db.example/app',
      'invalid DATABASE_URL="mysql://db.example/***": expected a postgres or postgresql URL',
    ],
    [
      'DATABASE_READ_URL',
      'http://reader:hunter22@replica.example/app',
      'invalid DATABASE_READ_URL="http://replica.example/***": expected a postgres or postgresql URL',
    ],
    ['READ_MAX_LAG_MS', '50', 'invalid READ_MAX_LAG_MS="50": expected an integer from 100 to 3600000'],
    ['ADMIN_TOKEN', 'short-secret', 'invalid ADMIN_TOKEN="***": expected at least 16 printable characters, no spaces'],
    ['METRICS_PORT', '70000', 'invalid METRICS_PORT="70000": expected an integer from 0 to 65535'],
    ['RPC_WS_URL', 'http://x', 'invalid RPC_WS_URL="http://x": expected a ws or wss URL'],
    ['START_BLOCK', '-1', 'invalid START_BLOCK="-1": expected "latest" or a block number'],
    ['ATTRIBUTION_SCOPE', 'all', 'invalid ATTRIBUTION_SCOPE="all": expected logs, blocks'],
    ['INDEX_ADDRESSES', '0x12', 'invalid INDEX_ADDRESSES="0x12": expected comma-separated 0x-prefixed 20-byte addresses'],
    ['RPC_BATCH_SIZE', '0', 'invalid RPC_BATCH_SIZE="0": expected an integer from 1 to 10000'],
    ['API_DB_POOL_SIZE', '0', 'invalid API_DB_POOL_SIZE="0": expected an integer from 1 to 1000'],
    ['RPC_BATCH_SIZE', 'many', 'invalid RPC_BATCH_SIZE="many": expected an integer from 1 to 10000'],
    ['PRECONFIRMATIONS', 'maybe', 'invalid PRECONFIRMATIONS="maybe": expected auto, on, off'],
    ['FINALITY_SECONDS', '0', 'invalid FINALITY_SECONDS="0": expected an integer from 1 to 86400'],
    ['LOG_LEVEL', 'loud', 'invalid LOG_LEVEL="loud": expected fatal, error, warn, info, debug, trace, silent'],
    ['WEBHOOK_RETENTION_DAYS', '0', 'invalid WEBHOOK_RETENTION_DAYS="0": expected an integer from 1 to 36500'],
    ['STREAM_MAX_CLIENTS', '0', 'invalid STREAM_MAX_CLIENTS="0": expected an integer from 1 to 1000000'],
    ['SECRETS_KEY', 'c2hvcnQtYnV0LXNlY3JldA==', 'invalid SECRETS_KEY="***": expected 32 bytes, as 64 hex digits or base64'],
  ])('rejects %s=%s with one line naming it', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError)
    expect(() => loadConfig({ [name]: value })).toThrow(message)
  })

  it('lists the secrets of every URL and the admin token, not the user or database names of the database and Redis', () => {
    const config = loadConfig({
      RPC_URL: 'https://rpc.example/v2/rpckey123',
      RPC_WS_URL: 'wss://rpc.example/ws/wskey4567',
      BUILDER_API_URL: 'https://builder.example/?apikey=bldkey89',
      DATABASE_URL: 'postgres://codetrail:dbpass12@db.example/codetrail',
      DATABASE_READ_URL: 'postgres://codetrail:replpass7@replica.example/codetrail',
      REDIS_URL: 'redis://default:redispw3@cache.example',
      ADMIN_TOKEN: 'admin-token-0123456789',
    })
    expect(secretsOf(config).sort()).toEqual([
      'admin-token-0123456789',
      'apikey=bldkey89',
      'bldkey89',
      'dbpass12',
      'redispw3',
      'replpass7',
      'rpckey123',
      'wskey4567',
    ])
  })
})

describe('the config file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'codetrail-config-'))
  const write = (name: string, text: string) => {
    const path = join(dir, name)
    writeFileSync(path, text)
    return path
  }
  const twoChains = `
# Base and OP Mainnet in one deployment
databaseUrl: postgres://postgres@db.example:5432/codetrail
port: 9090
chunkBlocks: 500
chains:
  - id: 8453
    name: base
    rpc:
      - url: https://base.example/v2/\${BASE_KEY}
        weight: 3
        maxRequestsPerSecond: 50
      - https://base-backup.example
    ws: wss://base.example/ws
    addresses: [0xAbCdEf0123456789abcdef0123456789ABCDEF01]
    startBlock: 100
    registry: { address: '0x0000000000000000000000000000000000000042', startBlock: 7 }
    preconfirmations: off
  - id: 10
    name: op
    rpc: http://127.0.0.1:9545
    attributionScope: blocks
`

  it('lists chains with their endpoints, filters and registry; settings it leaves out come from the environment', () => {
    const path = write('two.yaml', twoChains)
    const config = loadConfig({ BASE_KEY: 'sekret123', REDIS_URL: 'redis://cache.example:6380', PORT: '1234' }, { file: path })
    expect(config.configFile).toBe(path)
    expect(config.chains.map((chain) => [chain.chainId, chain.chainName])).toEqual([
      [8453, 'base'],
      [10, 'op'],
    ])
    const [base, op] = config.chains
    expect(base!.rpcEndpoints).toEqual([
      { url: 'https://base.example/v2/sekret123', weight: 3, maxRequestsPerSecond: 50 },
      { url: 'https://base-backup.example', weight: 1, maxRequestsPerSecond: undefined },
    ])
    expect(base).toMatchObject({
      rpcUrl: 'https://base.example/v2/sekret123',
      rpcWsUrl: 'wss://base.example/ws',
      startBlock: 100n,
      preconfirmations: 'off',
    })
    expect(base!.indexAddresses).toEqual(['0xabcdef0123456789abcdef0123456789abcdef01'])
    expect([base!.builderCodesRegistry, base!.builderCodesRegistryStartBlock]).toEqual(['0x0000000000000000000000000000000000000042', 7])
    expect(op).toMatchObject({
      rpcUrl: 'http://127.0.0.1:9545',
      attributionScope: 'blocks',
      startBlock: 'latest',
      preconfirmations: 'auto',
    })
    // The file wins over the environment; the environment fills in what the file leaves out.
    expect([config.databaseUrl, config.port, config.chunkBlocks, config.redisUrl]).toEqual([
      'postgres://postgres@db.example:5432/codetrail',
      9090,
      500,
      'redis://cache.example:6380',
    ])
    // The chain fields of the configuration are the first chain's.
    expect([config.chainId, config.rpcUrl]).toEqual([8453, 'https://base.example/v2/sekret123'])
    expect(secretsOf(config)).toContain('sekret123')
    expect(forChain(config, op!)).toMatchObject({ chainId: 10, chainName: 'op', port: 9090, attributionScope: 'blocks' })
  })

  it('is found as CODETRAIL_CONFIG, and reads JSON too', () => {
    const path = write(
      'one.json',
      JSON.stringify({ chains: [{ id: 31337, name: 'devnet', rpc: 'http://127.0.0.1:8545' }], logLevel: 'warn' }),
    )
    const config = loadConfig({ CODETRAIL_CONFIG: path, RPC_URL: 'http://ignored.example' })
    expect([config.chainId, config.rpcUrl, config.logLevel, config.chains.length]).toEqual([31337, 'http://127.0.0.1:8545', 'warn', 1])
  })

  it('without a file, the environment describes one chain exactly as before', () => {
    const config = loadConfig({ RPC_URL: 'http://node.example:8545', INDEX_TOPICS: `0x${'ab'.repeat(32)}` })
    expect(config.configFile).toBeUndefined()
    expect(config.chains).toEqual([
      expect.objectContaining({
        chainId: undefined,
        chainName: 'chain',
        rpcUrl: 'http://node.example:8545',
        indexTopics: [`0x${'ab'.repeat(32)}`],
      }),
    ])
    expect(config.rpcEndpoints).toEqual([{ url: 'http://node.example:8545', weight: 1, maxRequestsPerSecond: undefined }])
  })

  it.each([
    ['chains: []', 'chains: expected a list of at least one chain, each with id, name and rpc'],
    ['chains:\n  - { name: base, rpc: "http://a.example" }', 'chains[0].id: missing; every chain needs id, name and rpc'],
    ['chains:\n  - { id: abc, name: base, rpc: "http://a.example" }', 'chains[0].id="abc": expected an integer from 1 to 9007199254740991'],
    [
      'chains:\n  - { id: 1, name: Base!, rpc: "http://a.example" }',
      'chains[0].name="Base!": expected lowercase letters, digits, _ and - (1–32, such as base or op)',
    ],
    [
      'chains:\n  - { id: 1, name: base, rpc: ["http://a.example", "ftp://user:pw@b.example/key9"] }',
      'chains[0].rpc[1]="ftp://b.example/***": expected a http or https URL',
    ],
    [
      'chains:\n  - { id: 1, name: base, rpc: [{ url: "http://a.example", weight: 0 }] }',
      'chains[0].rpc[0].weight="0": expected an integer from 1 to 1000',
    ],
    [
      'chains:\n  - { id: 1, name: base, rpc: "http://a.example/${MISSING_KEY}" }',
      'chains[0].rpc: ${MISSING_KEY} is not set in the environment; expected it set, or the value written out',
    ],
    [
      'chains:\n  - { id: 1, name: base, rpc: "http://a.example", preconfirmations: maybe }',
      'chains[0].preconfirmations="maybe": expected auto, on, off',
    ],
    [
      'chains:\n  - { id: 1, name: base, rpc: "http://a.example", colour: blue }',
      'chains[0]: unknown key colour; expected name, rpc, id, ws, addresses, topics',
    ],
    [
      'rpcUrl: http://a.example\nchains:\n  - { id: 1, name: base, rpc: "http://a.example" }',
      'unknown key rpcUrl; expected chains or one of',
    ],
    [
      'startBlock: 5\nchains:\n  - { id: 1, name: base, rpc: "http://a.example" }',
      'unknown key startBlock; startBlock belongs under each of chains',
    ],
    ['port: 70000\nchains:\n  - { id: 1, name: base, rpc: "http://a.example" }', 'port="70000": expected an integer from 0 to 65535'],
    [
      'chains:\n  - { id: 1, name: base, rpc: "http://a.example" }\n  - { id: 1, name: op, rpc: "http://b.example" }',
      'chains: chain 1 is listed twice; expected each chain id once',
    ],
    ['chains: [ {', 'line 1: '],
  ])('stops on %j with one line naming the key path and what is allowed', (text, message) => {
    const path = write('bad.yaml', text)
    let error: unknown
    try {
      loadConfig({}, { file: path })
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as Error).message).toContain(`invalid ${path}: ${message}`)
    expect((error as Error).message).not.toContain('\n')
  })

  it('names a file it cannot read', () => {
    expect(() => loadConfig({}, { file: join(dir, 'absent.yaml') })).toThrow(
      `invalid ${join(dir, 'absent.yaml')}: cannot be read (ENOENT); expected a YAML or JSON file`,
    )
  })
})
