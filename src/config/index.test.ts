import { availableParallelism } from 'node:os'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig, secretsOf } from './index.js'

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
      INDEX_TOPICS: '0x' + 'ab'.repeat(32),
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
    expect(config.indexAddresses).toEqual([
      '0x0000000000000000000000000000000000000001',
      '0xabcdef0123456789abcdef0123456789abcdef01',
    ])
    expect(config.indexTopics).toEqual(['0x' + 'ab'.repeat(32)])
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
    ['RPC_URL', 'ftp://user:hunter22@node.example:2121/v2/key0123?apikey=key4567', 'invalid RPC_URL="ftp://node.example:2121/***": expected a http or https URL'],
    ['DATABASE_URL', 'mysql://app:hunter22@db.example/app', 'invalid DATABASE_URL="mysql://db.example/***": expected a postgres or postgresql URL'],
    ['DATABASE_READ_URL', 'http://reader:hunter22@replica.example/app', 'invalid DATABASE_READ_URL="http://replica.example/***": expected a postgres or postgresql URL'],
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
    expect(secretsOf(config).sort()).toEqual(['admin-token-0123456789', 'apikey=bldkey89', 'bldkey89', 'dbpass12', 'redispw3', 'replpass7', 'rpckey123', 'wskey4567'])
  })
})
