import fc from 'fast-check'
import { type Address, checksumAddress } from 'viem'
import { describe, expect, test } from 'vitest'
import { BUILDER_CODE_PATTERN, deriveBuilderCode, normalizeWalletAddress } from './builderCode.js'
import { isAttributionCode } from './decode.js'

const VITALIK = '0xd8da6bf26964af9d7eed9e03e53415d37aa96045'
const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((bytes) => `0x${Buffer.from(bytes).toString('hex')}` as Address)

describe('normalizeWalletAddress', () => {
  test.each([
    ['lowercase', VITALIK],
    ['EIP-55 checksum', '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045'],
    ['all upper-case digits', '0xD8DA6BF26964AF9D7EED9E03E53415D37AA96045'],
    ['all upper-case with 0X', '0XD8DA6BF26964AF9D7EED9E03E53415D37AA96045'],
  ])('accepts %s', (_, input) => {
    expect(normalizeWalletAddress(input)).toBe(VITALIK)
  })

  test.each([
    ['a mixed case that is not the checksum', '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96044'],
    ['one flipped letter of the checksum', '0xD8dA6BF26964aF9D7eEd9e03E53415D37aA96045'],
    ['a short address', '0xd8da6bf26964af9d7eed9e03e53415d37aa9604'],
    ['a long address', `${VITALIK}5`],
    ['no prefix', VITALIK.slice(2)],
    ['surrounding space', ` ${VITALIK}`],
    ['a non-hex digit', '0xg8da6bf26964af9d7eed9e03e53415d37aa96045'],
    ['an empty string', ''],
  ])('refuses %s', (_, input) => {
    expect(normalizeWalletAddress(input)).toBeNull()
  })

  test('every letter case of an address normalises to its lowercase form', () => {
    fc.assert(
      fc.property(address, fc.constantFrom('lower', 'upper', 'checksum'), (lower, form) => {
        const input = form === 'lower' ? lower : form === 'upper' ? `0x${lower.slice(2).toUpperCase()}` : checksumAddress(lower)
        expect(normalizeWalletAddress(input)).toBe(lower)
      }),
    )
  })
})

describe('deriveBuilderCode', () => {
  test('is stable: keccak256 of the lowercase address string, mod 36^8, base 36', () => {
    expect(deriveBuilderCode(VITALIK)).toBe('bc_bset4zoo')
    expect(deriveBuilderCode(VITALIK, 1)).toBe('bc_j84j3e5k')
    expect(deriveBuilderCode(VITALIK, 2)).toBe('bc_qcim10qd')
    expect(deriveBuilderCode('0x0000000000000000000000000000000000000000')).toBe('bc_kkqufvpm')
  })

  test('the same wallet in any letter case yields the same code', () => {
    fc.assert(
      fc.property(address, fc.nat(5), (lower, attempt) => {
        const code = deriveBuilderCode(lower, attempt)
        expect(deriveBuilderCode(checksumAddress(lower), attempt)).toBe(code)
        expect(deriveBuilderCode(`0x${lower.slice(2).toUpperCase()}`, attempt)).toBe(code)
      }),
    )
  })

  test('codes have the shape Base issues and are valid attribution codes', () => {
    fc.assert(
      fc.property(address, fc.nat(1000), (wallet, attempt) => {
        const code = deriveBuilderCode(wallet, attempt)
        expect(code).toMatch(BUILDER_CODE_PATTERN)
        expect(isAttributionCode(code)).toBe(true)
      }),
    )
  })

  test('successive attempts give a wallet distinct codes, so a collision can move on', () => {
    fc.assert(
      fc.property(address, (wallet) => {
        const codes = [0, 1, 2, 3, 4].map((attempt) => deriveBuilderCode(wallet, attempt))
        expect(new Set(codes).size).toBe(codes.length)
      }),
    )
  })

  test('refuses an attempt that is not a non-negative integer', () => {
    expect(() => deriveBuilderCode(VITALIK, -1)).toThrow(RangeError)
    expect(() => deriveBuilderCode(VITALIK, 1.5)).toThrow(RangeError)
  })
})
