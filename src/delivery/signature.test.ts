import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { signPayload, verifySignature } from './signature.js'

describe('webhook signatures', () => {
  const body = '{"id":"1","type":"attribution.confirmed"}'

  it('is the hex HMAC-SHA256 of "<t>.<body>" with the secret', () => {
    const expected = createHmac('sha256', 'whsec_x').update(`1700000000.${body}`).digest('hex')
    expect(signPayload('whsec_x', body, 1_700_000_000)).toBe(`t=1700000000,v1=${expected}`)
  })

  it('verifies its own signature and refuses another secret, another body, a stale time or garbage', () => {
    const header = signPayload('whsec_x', body, 1_700_000_000)
    expect(verifySignature('whsec_x', body, header, { now: 1_700_000_010 })).toBe(true)
    expect(verifySignature('whsec_y', body, header, { now: 1_700_000_010 })).toBe(false)
    expect(verifySignature('whsec_x', `${body} `, header, { now: 1_700_000_010 })).toBe(false)
    expect(verifySignature('whsec_x', body, header, { now: 1_700_001_000 })).toBe(false)
    expect(verifySignature('whsec_x', body, 't=1700000000,v1=zz', { now: 1_700_000_010 })).toBe(false)
    expect(verifySignature('whsec_x', body, '', { now: 1_700_000_010 })).toBe(false)
  })
})
