import { type Address, checksumAddress, keccak256, stringToBytes } from 'viem'

/** The shape Base issues: `bc_` and 8 characters of `[a-z0-9]`. */
export const BUILDER_CODE_PATTERN = /^bc_[a-z0-9]{8}$/

const BUILDER_CODE_PREFIX = 'bc_'
const IDENTIFIER_LENGTH = 8
const IDENTIFIER_SPACE = 36n ** BigInt(IDENTIFIER_LENGTH)
const HEX_ADDRESS = /^0[xX][0-9a-fA-F]{40}$/

/**
 * The lowercase form of a wallet address given in any letter case (all lower, ALL UPPER, or mixed
 * with a valid EIP-55 checksum), or `null` when it is not an address or its mixed case is not the
 * checksum.
 *
 * @example
 * normalizeWalletAddress('0XD8DA6BF26964AF9D7EED9E03E53415D37AA96045') // '0xd8da6bf2…96045'
 */
export function normalizeWalletAddress(input: string): Address | null {
  if (!HEX_ADDRESS.test(input)) return null
  const digits = input.slice(2)
  const lower = `0x${digits.toLowerCase()}` as Address
  const mixedCase = digits !== digits.toLowerCase() && digits !== digits.toUpperCase()
  if (mixedCase && checksumAddress(lower) !== `0x${digits}`) return null
  return lower
}

/**
 * The builder code of a wallet: `bc_` + the keccak256 of the UTF-8 lowercase `0x` address string
 * (attempt 0) or of `<address>:<attempt>` (attempt n > 0), taken as a number modulo 36^8 and
 * written in base 36, zero-padded to 8 characters. The same wallet always yields the same code;
 * on a collision with another wallet the store moves to the next attempt.
 *
 * @example
 * deriveBuilderCode('0xd8da6bf26964af9d7eed9e03e53415d37aa96045') // 'bc_' + 8 of [a-z0-9]
 */
export function deriveBuilderCode(address: Address, attempt = 0): string {
  if (!Number.isSafeInteger(attempt) || attempt < 0)
    throw new RangeError(`builder code attempt must be a non-negative integer, got ${attempt}`)
  const lower = address.toLowerCase()
  const hash = keccak256(stringToBytes(attempt === 0 ? lower : `${lower}:${attempt}`))
  const identifier = (BigInt(hash) % IDENTIFIER_SPACE).toString(36).padStart(IDENTIFIER_LENGTH, '0')
  return `${BUILDER_CODE_PREFIX}${identifier}`
}
