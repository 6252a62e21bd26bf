import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { parseSecretsKey } from '../config/index.js'
import { openSecret, sealSecret } from './secrets.js'
import { newWebhookSecret, signedHeaders } from './signature.js'

describe('webhook signatures', () => {
  const body = '{"id":"1","type":"attribution.confirmed"}'

  it('verify with the standardwebhooks package, with either secret during a rotation', () => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()]
    expect(current).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/)
    const headers = signedHeaders([current, previous], '42', body)
    expect(headers['webhook-id']).toBe('42')
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]{44} v1,[A-Za-z0-9+/=]{44}$/)
    for (const secret of [current, previous]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body))
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow()
    expect(() => new Webhook(current).verify(`${body} `, headers)).toThrow()
    // A forged, non-base64 signature is refused, not a crash.
    expect(() => new Webhook(current).verify(body, { ...headers, 'webhook-signature': 'v1,zz not-base64!' })).toThrow()
  })

  it('sign with a secret issued in base64url before (the same key in standard base64 verifies)', () => {
    const key = Buffer.from('fb'.repeat(24), 'hex')
    const headers = signedHeaders([`whsec_${key.toString('base64url')}`], '7', body)
    expect(new Webhook(`whsec_${key.toString('base64')}`).verify(body, headers)).toEqual(JSON.parse(body))
  })
})

describe('webhook secrets at rest', () => {
  const key = parseSecretsKey('11'.repeat(32))!

  it('are sealed with AES-256-GCM under SECRETS_KEY and open again; unset, they are stored as they are', () => {
    const secret = newWebhookSecret()
    const sealed = sealSecret(key, secret)
    expect(sealed).not.toContain(secret.slice(6))
    expect(sealed).not.toBe(sealSecret(key, secret))
    expect(openSecret(key, sealed)).toBe(secret)
    expect(sealSecret(undefined, secret)).toBe(secret)
    expect(openSecret(key, secret)).toBe(secret)
    expect(() => openSecret(undefined, sealed)).toThrow('SECRETS_KEY')
    expect(() => openSecret(parseSecretsKey('22'.repeat(32))!, sealed)).toThrow('another key')
  })

  it('take a 32-byte key, in hex or base64', () => {
    expect(parseSecretsKey(Buffer.alloc(32, 1).toString('base64'))).toEqual(Buffer.alloc(32, 1))
    expect(parseSecretsKey('11'.repeat(16))).toBeNull()
    expect(parseSecretsKey('short')).toBeNull()
  })
})
