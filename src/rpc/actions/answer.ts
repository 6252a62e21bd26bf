import { InconsistentAnswerError } from '../verify.js'

/**
 * An answer that is not what the method returns (a proxy mixing answers, a node bug, a hostile
 * endpoint): nothing of it is used, and the call is asked again like any transient error.
 */
export function malformed(method: string, what: string): never {
  throw new InconsistentAnswerError(`${method} answered ${what}`)
}

const QUANTITY = /^0x[0-9a-f]+$/i
const HASH = /^0x[0-9a-f]{64}$/i
const ADDRESS = /^0x[0-9a-f]{40}$/i

/** A hex quantity (`0x1a`). */
export const isQuantity = (value: unknown): value is string => typeof value === 'string' && QUANTITY.test(value)
/** A 32-byte hash. */
export const isHash = (value: unknown): value is string => typeof value === 'string' && HASH.test(value)
export const isAddress = (value: unknown): value is string => typeof value === 'string' && ADDRESS.test(value)
/** Hex data of any length; only its prefix is looked at, so a large input costs nothing to check. */
export const isData = (value: unknown): value is string => typeof value === 'string' && value.startsWith('0x')
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A hex quantity as a number, else the answer is malformed. */
export function quantity(method: string, field: string, value: unknown): number {
  if (!isQuantity(value)) malformed(method, `${field} ${JSON.stringify(value)}, not a hex quantity`)
  return Number(value)
}
