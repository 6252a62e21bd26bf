import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodeCursor, encodeCursor, MAX_CURSOR_LENGTH } from './cursor.js'

const isNumber = (value: unknown): value is number => Number.isSafeInteger(value)
const isText = (value: unknown): value is string => typeof value === 'string'

describe('cursor', () => {
  it('reads back every key it wrote', () => {
    fc.assert(
      fc.property(fc.nat(), fc.string({ maxLength: 66 }), fc.string({ maxLength: 32 }), (block, hash, code) => {
        const token = encodeCursor('v1', [block, hash, code])
        expect(token).toMatch(/^[A-Za-z0-9_-]+$/)
        expect(decodeCursor(token, 'v1', [isNumber, isText, isText])).toEqual([block, hash, code])
      }),
    )
  })

  it('refuses tokens of another version, shape or type, and anything that is not one of its tokens', () => {
    const token = encodeCursor('v1', [5, 'x'])
    expect(decodeCursor(token, 'v2', [isNumber, isText])).toBeNull()
    expect(decodeCursor(token, 'v1', [isNumber, isText, isText])).toBeNull()
    expect(decodeCursor(token, 'v1', [isText, isText])).toBeNull()
    for (const bad of [
      '',
      '!!!',
      'a'.repeat(MAX_CURSOR_LENGTH + 1),
      Buffer.from('{"a":1}').toString('base64url'),
      Buffer.from('not json').toString('base64url'),
    ])
      expect(decodeCursor(bad, 'v1', [isNumber, isText]), bad.slice(0, 20)).toBeNull()
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(() => decodeCursor(text, 'v1', [isNumber, isText])).not.toThrow()
      }),
    )
  })
})
