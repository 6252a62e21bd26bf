import { describe, expect, it } from 'vitest'
import { createRedactor, redactUrl, secretsOfUrl } from './redact.js'

describe('redactUrl', () => {
  it.each([
    ['https://base-mainnet.g.example.com/v2/abcdef0123456789', 'https://base-mainnet.g.example.com/***'],
    ['https://node.example:8443/?apikey=abcdef0123456789', 'https://node.example:8443/***'],
    ['wss://user:pass@node.example/ws', 'wss://node.example/***'],
    ['postgres://app:hunter22@db.example:5432/codetrail', 'postgres://db.example:5432/***'],
    ['http://127.0.0.1:8545', 'http://127.0.0.1:8545'],
    ['http://127.0.0.1:8545/', 'http://127.0.0.1:8545'],
    ['redis://:s3cret@cache.example', 'redis://cache.example/***'],
    ['not a url', '***'],
  ])('shows %s as %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown)
  })
})

describe('secretsOfUrl and createRedactor', () => {
  it('masks keys from the path, query and userinfo wherever a text quotes them, raw or decoded', () => {
    const url = 'https://key%2Fuser:pa55word@node.example/v2/abc%20def0123?apikey=q1w2e3r4&chain=base'
    const redact = createRedactor(secretsOfUrl(url))
    const echoed = 'no access for /v2/abc def0123 (apikey=q1w2e3r4, user key/user, password pa55word) on v2'
    expect(redact(echoed)).toBe('no access for /v2/*** (apikey=***, user ***, password ***) on v2')
    expect(redact(url)).not.toMatch(/abc|q1w2e3r4|pa55word|key%2Fuser/)
  })

  it('takes only credentials from a database URL: its user and database names are not secret', () => {
    const secrets = secretsOfUrl('postgres://postgres:hunter22@db.example/codetrail?sslmode=require&sslpassword=k3yk3yk3y', {
      credentialsOnly: true,
    })
    expect(secrets.sort()).toEqual(['hunter22', 'k3yk3yk3y'])
  })

  it('leaves a text alone when there is nothing to mask', () => {
    expect(createRedactor([])('http://127.0.0.1:8545 refused')).toBe('http://127.0.0.1:8545 refused')
    expect(secretsOfUrl(undefined)).toEqual([])
  })
})
