import { Attribution } from 'ox/erc8021'
import { type Address, type Hex, hexToBigInt } from 'viem'

/** The 16-byte ERC-8021 marker that ends every attributed calldata, as hex without `0x`. */
export const ERC8021_MARKER = '80218021802180218021802180218021'

/** Base's registry rule for a code; ox checks none of it. */
export const ATTRIBUTION_CODE_PATTERN = /^[a-z0-9_]{1,32}$/

const MARKER_SIZE = 16
const MARKER_HEX_LENGTH = MARKER_SIZE * 2
/** `0x` + marker + schema id: anything shorter cannot name a schema. */
const MIN_HEX_LENGTH = 2 + MARKER_HEX_LENGTH + 2
const CHAR_ONE = 0x31
const CHAR_ZERO = 0x30
const CHAR_X = 0x78
const ADDRESS_SIZE = 20
/** Schema 1's chain id field: 1 to 32 bytes. */
const MAX_CHAIN_ID_SIZE = 32
const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/
/** Longest piece of an offending value quoted in a reason, so reasons stay short. */
const REASON_QUOTE_LENGTH = 40

/** A schema-2 registry as ox reads it (`r.a`, `r.w`: chain id and address). */
export type AttributionRegistry = { address: Address; chainId: number }

/** A code registry named by a suffix; the chain id is decimal, as schema 1 allows up to 32 bytes of it. */
export type CodeRegistry = { address: Address; chainId: string }

/** The role a schema-2 suffix gives a code: `a` app, `w` wallet, `s` service (x402: seller, facilitator, client). */
export const ATTRIBUTION_ROLES = ['app', 'wallet', 'service'] as const
export type AttributionRole = (typeof ATTRIBUTION_ROLES)[number]

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
export type JsonObject = { [key: string]: JsonValue }

/** The schema-2 CBOR fields, JSON-serialisable as they are (bigint → string, bytes → hex). */
export type AttributionCbor = {
  appCode: string | null
  walletCode: string | null
  serviceCodes: string[]
  registries: { app: AttributionRegistry | null; wallet: AttributionRegistry | null }
  metadata: JsonObject | null
}

/**
 * A decoded ERC-8021 suffix. `codes` are valid (`ATTRIBUTION_CODE_PATTERN`), deduplicated, in suffix
 * order (schema 2: app, wallet, then service codes), and empty when a well-formed suffix names none
 * (always for schemas 3 and above, which are only recognised). A suffix that carries the marker but
 * cannot be read, or carries an invalid code, is `ok: false` with a reason.
 */
export type DecodedAttribution =
  | {
      ok: true
      schemaId: number
      codes: string[]
      /** Schema 1: the custom code registry. */
      registry?: CodeRegistry
      /** Schema 2: every CBOR field. */
      cbor?: AttributionCbor
      /** Schemas 3 and above: the length of their schema data. */
      dataLength?: number
    }
  | { ok: false; schemaId: number; reason: string }

/** One row's worth of a decoded suffix: a code, its position in `codes`, its role and the registry named for it. */
export type CodeAttribution = { code: string; codeIndex: number; role: AttributionRole | null; registry: CodeRegistry | null }

/** Whether `code` is a well-formed attribution code (`^[a-z0-9_]{1,32}$`). */
export function isAttributionCode(code: unknown): code is string {
  return typeof code === 'string' && ATTRIBUTION_CODE_PATTERN.test(code)
}

/** Whether `input` ends with the ERC-8021 marker; compares characters, converts nothing. */
export function hasAttributionMarker(input: string): boolean {
  const length = input.length
  // The marker's last character is '1': one comparison rejects most calldata.
  return length >= MIN_HEX_LENGTH && input.charCodeAt(length - 1) === CHAR_ONE && input.endsWith(ERC8021_MARKER)
}

/**
 * Decodes the ERC-8021 suffix at the end of `input` through `ox/erc8021`, guarded against what ox
 * lets through (length bytes pointing before the calldata, bad CBOR, arbitrary characters).
 * Never throws.
 *
 * @returns `null` when there is no marker, the schema id is unknown, or `input` is not
 * `0x`-prefixed whole-byte hex; otherwise a tagged result.
 *
 * @example
 * decodeAttribution('0xdddddddd62617365617070070080218021802180218021802180218021')
 * // { ok: true, schemaId: 0, codes: ['baseapp'] }
 */
export function decodeAttribution(input: Hex): DecodedAttribution | null {
  if (!hasAttributionMarker(input)) return null
  const length = input.length
  if ((length & 1) !== 0 || input.charCodeAt(0) !== CHAR_ZERO || input.charCodeAt(1) !== CHAR_X) return null
  const size = (length - 2) / 2
  const schemaId = byteAt(input, size - MARKER_SIZE - 1)
  if (schemaId === 0 || schemaId === 1) return decodeCodesSchema(input, size, schemaId)
  if (schemaId === 2) return decodeCborSchema(input, size)
  if (schemaId > 2) return decodeLaterSchema(input, size, schemaId)
  return null
}

/**
 * The rows a decoded suffix gives: schemas 0 and 1 one per code without a role (schema 1's registry
 * on each), schema 2 one per code and role it holds, with the registry `r` names for that role.
 *
 * @example
 * codeAttributions(decodeAttribution(x402Calldata))
 * // [{ code: 'seller', role: 'app', … }, { code: 'facilitator', role: 'wallet', … }, { code: 'client', role: 'service', … }]
 */
export function codeAttributions(decoded: DecodedAttribution | null): CodeAttribution[] {
  if (!decoded?.ok) return []
  const { codes, cbor } = decoded
  if (!cbor) return codes.map((code, codeIndex) => ({ code, codeIndex, role: null, registry: decoded.registry ?? null }))
  const rows: CodeAttribution[] = []
  const add = (code: string | null, role: AttributionRole, registry: AttributionRegistry | null) => {
    if (code === null || rows.some((row) => row.code === code && row.role === role)) return
    rows.push({
      code,
      codeIndex: codes.indexOf(code),
      role,
      registry: registry && { address: registry.address, chainId: String(registry.chainId) },
    })
  }
  add(cbor.appCode, 'app', cbor.registries.app)
  add(cbor.walletCode, 'wallet', cbor.registries.wallet)
  for (const code of cbor.serviceCodes) add(code, 'service', null)
  return rows
}

/** Schemas ox does not know: `schemaData ∥ length(2) ∥ schemaId ∥ marker`, recognised but not read. */
function decodeLaterSchema(input: Hex, size: number, schemaId: number): DecodedAttribution | null {
  const lengthIndex = size - MARKER_SIZE - 3
  if (lengthIndex < 0) return malformed(schemaId, 'suffix is truncated before the data length')
  const high = byteAt(input, lengthIndex)
  const low = byteAt(input, lengthIndex + 1)
  if (high < 0 || low < 0) return null
  const dataLength = high * 256 + low
  if (lengthIndex - dataLength < 0) return malformed(schemaId, `data length ${dataLength} points past the start of calldata`)
  if (!isHexFrom(input, lengthIndex - dataLength)) return null
  return { ok: true, schemaId, codes: [], dataLength }
}

function decodeCodesSchema(input: Hex, size: number, schemaId: 0 | 1): DecodedAttribution | null {
  const lengthIndex = size - MARKER_SIZE - 2
  if (lengthIndex < 0) return malformed(schemaId, 'suffix is truncated before the codes length')
  const codesLength = byteAt(input, lengthIndex)
  if (codesLength < 0) return null
  const codesStart = lengthIndex - codesLength
  if (codesStart < 0) return malformed(schemaId, `codes length ${codesLength} points past the start of calldata`)

  let suffixStart = codesStart
  let chainIdLength = 0
  if (schemaId === 1) {
    if (codesStart < ADDRESS_SIZE + 1) return malformed(1, 'registry is truncated: calldata ends before the registry address')
    chainIdLength = byteAt(input, codesStart - 1)
    if (chainIdLength < 0) return null
    if (chainIdLength === 0) return malformed(1, 'registry chain id length is 0')
    suffixStart = codesStart - 1 - chainIdLength - ADDRESS_SIZE
    if (suffixStart < 0) return malformed(1, `registry chain id length ${chainIdLength} points past the start of calldata`)
    if (chainIdLength > MAX_CHAIN_ID_SIZE)
      return malformed(1, `registry chain id length ${chainIdLength} is over ${MAX_CHAIN_ID_SIZE} bytes`)
  }
  if (!isHexFrom(input, suffixStart)) return null

  let decoded: Attribution.Attribution | undefined
  try {
    // ox reads schema 1's chain id as a JS number, which 32 bytes overflow: it reads the codes as schema 0, the registry is read here.
    decoded = Attribution.fromData(`0x${input.slice(2 + codesStart * 2, -(MARKER_HEX_LENGTH + 2))}00${ERC8021_MARKER}`)
  } catch (error) {
    return malformed(schemaId, `undecodable suffix: ${errorText(error)}`)
  }
  if (!decoded?.codes) return malformed(schemaId, 'ox could not read the suffix')

  const codes = validCodes(decoded.codes)
  if (typeof codes === 'string') return malformed(schemaId, codes)
  if (schemaId === 0) return { ok: true, schemaId, codes }

  const chainIdStart = codesStart - 1 - chainIdLength
  const address = `0x${input.slice(2 + suffixStart * 2, 2 + chainIdStart * 2).toLowerCase()}` as Address
  const chainId = hexToBigInt(`0x${input.slice(2 + chainIdStart * 2, 2 + (codesStart - 1) * 2)}`)
  if (chainId === 0n) return malformed(1, 'registry chain id 0 is invalid')
  return { ok: true, schemaId, codes, registry: { address, chainId: chainId.toString() } }
}

function decodeCborSchema(input: Hex, size: number): DecodedAttribution | null {
  const lengthIndex = size - MARKER_SIZE - 3
  if (lengthIndex < 0) return malformed(2, 'suffix is truncated before the CBOR length')
  const high = byteAt(input, lengthIndex)
  const low = byteAt(input, lengthIndex + 1)
  if (high < 0 || low < 0) return null
  const cborLength = high * 256 + low
  const cborStart = lengthIndex - cborLength
  if (cborStart < 0) return malformed(2, `CBOR length ${cborLength} points past the start of calldata`)
  if (cborLength === 0) return malformed(2, 'CBOR payload is empty')
  if (!isHexFrom(input, cborStart)) return null
  // Major type 5 is a map; ox reads fields off whatever value it decodes.
  if (byteAt(input, cborStart) >> 5 !== 5) return malformed(2, 'CBOR payload is not a map')

  try {
    const decoded = Attribution.fromData(`0x${input.slice(2 + cborStart * 2)}`)
    if (!decoded) return malformed(2, 'ox could not read the suffix')
    return fromCbor(decoded)
  } catch (error) {
    return malformed(2, `undecodable suffix: ${errorText(error)}`)
  }
}

function fromCbor(decoded: Attribution.Attribution): DecodedAttribution {
  const appCode = decoded.appCode ?? null
  const walletCode = decoded.walletCode ?? null
  if (appCode !== null && !isAttributionCode(appCode)) return malformed(2, `invalid app code ${quote(appCode)}`)
  if (walletCode !== null && !isAttributionCode(walletCode)) return malformed(2, `invalid wallet code ${quote(walletCode)}`)
  const serviceCodes = decoded.serviceCodes ?? []
  for (const code of serviceCodes) if (!isAttributionCode(code)) return malformed(2, `invalid service code ${quote(code)}`)

  const registries: AttributionCbor['registries'] = { app: null, wallet: null }
  for (const entity of ['app', 'wallet'] as const) {
    const registry = decoded.registries?.[entity]
    if (registry === undefined) continue
    const checked = validRegistry(registry)
    if (typeof checked === 'string') return malformed(2, `${entity} registry ${checked}`)
    registries[entity] = checked
  }

  let metadata: JsonObject | null = null
  if (decoded.metadata !== undefined) {
    if (!isPlainRecord(decoded.metadata)) return malformed(2, 'metadata is not a map')
    metadata = toJsonObject(decoded.metadata)
  }

  const codes: string[] = []
  if (appCode !== null) codes.push(appCode)
  if (walletCode !== null && !codes.includes(walletCode)) codes.push(walletCode)
  for (const code of serviceCodes) if (!codes.includes(code)) codes.push(code)
  return {
    ok: true,
    schemaId: 2,
    codes,
    cbor: { appCode, walletCode, serviceCodes: [...serviceCodes], registries, metadata },
  }
}

/** The codes deduplicated in order, or the reason the list is malformed. */
function validCodes(codes: readonly unknown[]): string[] | string {
  const unique: string[] = []
  for (const code of codes) {
    if (!isAttributionCode(code)) return `invalid code ${quote(code)}`
    if (!unique.includes(code)) unique.push(code)
  }
  return unique
}

/** The registry with a lowercase address, or the reason it is malformed. */
function validRegistry(registry: unknown): AttributionRegistry | string {
  if (!isPlainRecord(registry)) return 'is missing'
  const { address, chainId } = registry
  if (typeof address !== 'string' || !ADDRESS_PATTERN.test(address)) return `address ${quote(address)} is invalid`
  if (typeof chainId !== 'number' || !Number.isSafeInteger(chainId) || chainId <= 0)
    return `chain id ${typeof chainId === 'number' ? chainId : quote(chainId)} is invalid`
  return { address: address.toLowerCase() as Address, chainId }
}

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
}

function toJsonObject(record: Record<string, unknown>): JsonObject {
  // fromEntries defines own properties, so a "__proto__" key stays data.
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [jsonText(key), toJson(value)]))
}

function toJson(value: unknown): JsonValue {
  if (typeof value === 'string') return jsonText(value)
  if (typeof value === 'boolean' || value === null || value === undefined) return value ?? null
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value)
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Uint8Array) return bytesToHex(value)
  if (Array.isArray(value)) return value.map(toJson)
  if (isPlainRecord(value)) return toJsonObject(value)
  return String(value)
}

/** PostgreSQL text and jsonb refuse U+0000, which CBOR text may carry. */
function jsonText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text
}

function bytesToHex(bytes: Uint8Array): Hex {
  let hex = '0x'
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0')
  return hex as Hex
}

function malformed(schemaId: number, reason: string): DecodedAttribution {
  return { ok: false, schemaId, reason }
}

/** A value quoted for a reason: JSON-escaped, so no control character reaches storage, and short. */
function quote(value: unknown): string {
  if (typeof value !== 'string') return `of type ${typeof value}`
  return JSON.stringify(value.length > REASON_QUOTE_LENGTH ? `${value.slice(0, REASON_QUOTE_LENGTH)}…` : value)
}

function errorText(error: unknown): string {
  const message =
    typeof error === 'object' && error !== null && 'shortMessage' in error && typeof error.shortMessage === 'string'
      ? error.shortMessage
      : error instanceof Error
        ? error.message
        : String(error)
  return JSON.stringify(message.split('\n', 1)[0]!.slice(0, 120)).slice(1, -1)
}

function nibble(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30
  const lower = code | 0x20
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x57
  return -1
}

/** The byte at `index` of the data after `0x`, or -1 when it is not hex. */
function byteAt(input: string, index: number): number {
  const high = nibble(input.charCodeAt(2 + index * 2))
  const low = nibble(input.charCodeAt(3 + index * 2))
  return high < 0 || low < 0 ? -1 : high * 16 + low
}

/** Whether every character from byte `index` to the end is hex. */
function isHexFrom(input: string, index: number): boolean {
  for (let i = 2 + index * 2; i < input.length; i++) if (nibble(input.charCodeAt(i)) < 0) return false
  return true
}
