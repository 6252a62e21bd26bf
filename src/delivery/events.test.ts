import { describe, expect, it } from 'vitest'
import { matchesSubscription, toPayload } from './events.js'

const event = { type: 'attribution.confirmed' as const, builderCode: 'bc_a', walletAddress: '0xaa', role: null, chainId: 8453 }
const everything = { events: ['attribution.confirmed'], builderCodes: null, walletAddresses: null, roles: null }

describe('matchesSubscription', () => {
  it('wants its event types, and each filter it sets', () => {
    expect(matchesSubscription(everything, event)).toBe(true)
    expect(matchesSubscription({ ...everything, events: ['attribution.removed'] }, event)).toBe(false)
    expect(matchesSubscription({ ...everything, builderCodes: ['bc_b'] }, event)).toBe(false)
    expect(matchesSubscription({ ...everything, builderCodes: ['bc_b', 'bc_a'] }, event)).toBe(true)
    expect(matchesSubscription({ ...everything, walletAddresses: ['0xaa'] }, event)).toBe(true)
    expect(matchesSubscription({ ...everything, walletAddresses: ['0xaa'] }, { ...event, walletAddress: null })).toBe(false)
    expect(matchesSubscription({ ...everything, chainIds: [10] }, event)).toBe(false)
    expect(matchesSubscription({ ...everything, chainIds: [10, 8453] }, event)).toBe(true)
    expect(matchesSubscription({ ...everything, chainIds: null }, event)).toBe(true)
  })

  it('matches a roles filter only with a role (schema 0 and 1 codes have none)', () => {
    expect(matchesSubscription({ ...everything, roles: ['app'] }, event)).toBe(false)
    expect(matchesSubscription({ ...everything, roles: ['app'] }, { ...event, role: 'app' })).toBe(true)
    expect(matchesSubscription({ ...everything, roles: ['wallet'] }, { ...event, role: 'app' })).toBe(false)
  })
})

describe('toPayload', () => {
  it('is the documented webhook body: string id, ISO times, block milliseconds, null userOpHash for a plain transaction', () => {
    const payload = toPayload({
      id: 42,
      type: 'attribution.pending',
      createdAt: new Date('2026-01-02T03:04:05Z'),
      chainId: 8453,
      txHash: '0x01',
      userOpHash: '',
      builderCode: 'bc_a',
      role: null,
      walletAddress: null,
      sender: '0x02',
      blockNumber: 7,
      blockTimestamp: new Date('2026-01-02T03:04:00Z'),
      blockTimestampMs: 1_767_323_040_400,
      status: 'pending',
      removed: false,
    })
    expect(payload).toEqual({
      id: '42',
      type: 'attribution.pending',
      createdAt: '2026-01-02T03:04:05.000Z',
      data: {
        chainId: 8453,
        txHash: '0x01',
        userOpHash: null,
        builderCode: 'bc_a',
        role: null,
        walletAddress: null,
        sender: '0x02',
        blockNumber: 7,
        blockTimestamp: '2026-01-02T03:04:00.000Z',
        blockTimestampMs: 1_767_323_040_400,
        status: 'pending',
        removed: false,
      },
    })
  })
})
