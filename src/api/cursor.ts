/** A keyset position: the sort key of the last row of a page. */
export type CursorKey = readonly (string | number)[]

/** Longest cursor accepted; real ones are ~200 characters. */
export const MAX_CURSOR_LENGTH = 512
const BASE64URL = /^[A-Za-z0-9_-]+$/

/**
 * Writes a keyset position as an opaque base64url token. The version tag lets the key change shape
 * later without old cursors being misread.
 *
 * @example
 * encodeCursor('a1', [120, '0xabc…', '', 'bc_x'])
 */
export function encodeCursor(version: string, key: CursorKey): string {
  return Buffer.from(JSON.stringify([version, ...key]), 'utf8').toString('base64url')
}

/**
 * Reads a token written by {@link encodeCursor} with the same `version` and checks each element
 * with `parts` (one predicate per key column).
 *
 * @returns the key, or `null` when the token is not one of ours.
 */
export function decodeCursor<const T extends readonly ((value: unknown) => boolean)[]>(
  token: string,
  version: string,
  parts: T,
): { [K in keyof T]: T[K] extends (value: unknown) => value is infer V ? V : string | number } | null {
  if (token.length === 0 || token.length > MAX_CURSOR_LENGTH || !BASE64URL.test(token)) return null
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'))
  } catch {
    return null
  }
  if (!Array.isArray(value) || value.length !== parts.length + 1 || value[0] !== version) return null
  const key = value.slice(1)
  return parts.every((check, index) => check(key[index])) ? (key as never) : null
}
