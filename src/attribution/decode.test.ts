import fc from 'fast-check'
import { Cbor, Hex as OxHex } from 'ox'
import { Attribution } from 'ox/erc8021'
import type { Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import { erc8021Vectors, laterSchemaSuffix, MARKER, schema1Suffix, vectorInput } from '../../harness/fixtures/erc8021-vectors.js'
import { codeAttributions, type DecodedAttribution, decodeAttribution, hasAttributionMarker, isAttributionCode } from './decode.js'

const validCode = fc.stringMatching(/^[a-z0-9_]{1,32}$/)
const hostileCode = fc.oneof(
  validCode,
  fc.constant(''),
  fc.stringMatching(/^[A-Za-z0-9_]{1,32}$/),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.stringMatching(/^[a-z0-9_]{33,40}$/),
  fc.constant('a,b'),
)
const bytesHex = (minLength: number, maxLength: number) =>
  fc.uint8Array({ minLength, maxLength }).map((bytes) => OxHex.fromBytes(bytes).slice(2))
const calldata = bytesHex(0, 300).map((hex) => `0x${hex}` as Hex)

/** What every result must satisfy, whatever the input. */
function expectWellFormed(result: DecodedAttribution | null): void {
  if (result === null) return
  expect(JSON.parse(JSON.stringify(result))).toStrictEqual(result)
  // PostgreSQL text and jsonb refuse U+0000 anywhere.
  JSON.stringify(result, (_, value: unknown) => {
    if (typeof value === 'string') expect(value).not.toContain('\u0000')
    return value
  })
  if (!result.ok) {
    expect(result.reason.length).toBeGreaterThan(0)
    return
  }
  expect(result.codes.every(isAttributionCode)).toBe(true)
  expect(new Set(result.codes).size).toBe(result.codes.length)
}

describe('decodeAttribution vectors', () => {
  test.each(erc8021Vectors.map((vector) => [`${vector.source}: ${vector.name}`, vector] as const))('%s', (_, vector) => {
    const result = decodeAttribution(vectorInput(vector))
    const { expected } = vector
    if (expected?.ok === false && expected.reason instanceof RegExp) {
      expect(result).toStrictEqual({ ok: false, schemaId: expected.schemaId, reason: expect.stringMatching(expected.reason) })
    } else {
      expect(result).toStrictEqual(expected)
    }
    expectWellFormed(result)
  })

  test.each(erc8021Vectors.filter((vector) => vector.from).map((vector) => [vector.name, vector] as const))(
    'ox encodes %s to the vector suffix',
    (_, vector) => {
      expect(Attribution.toDataSuffix(vector.from!)).toBe(vector.suffix.toLowerCase())
    },
  )

  test('agrees with ox on the codes of every well-formed vector', () => {
    for (const vector of erc8021Vectors) {
      if (!vector.expected?.ok) continue
      // ox reads schema 1's chain id as a JS number and throws past 2^53; the codes must still agree.
      const wide = vector.expected.registry !== undefined && !Number.isSafeInteger(Number(vector.expected.registry.chainId))
      const input = wide
        ? vectorInput({ prefix: '0x', suffix: schema1Suffix(vector.expected.registry!.address, '01', vector.expected.codes.join(',')) })
        : vectorInput(vector)
      const decoded = Attribution.fromData(input)
      const oxCodes = decoded?.codes ?? [decoded?.appCode, decoded?.walletCode, ...(decoded?.serviceCodes ?? [])]
      expect(vector.expected.codes).toStrictEqual([...new Set(oxCodes.filter((code) => code !== undefined))])
    }
  })
})

describe('codeAttributions', () => {
  const rows = (suffix: Hex) => codeAttributions(decodeAttribution(`0xdd${suffix.slice(2)}`))

  test('an x402 suffix gives three rows: seller as app, facilitator as wallet, client as service, each with its registry', () => {
    const suffix = Attribution.toDataSuffix({
      appCode: 'seller',
      walletCode: 'facilitator',
      serviceCodes: ['client'],
      registries: {
        app: { address: '0x00000000000000000000000000000000000000aa', chainId: 8453 },
        wallet: { address: '0x00000000000000000000000000000000000000bb', chainId: 10 },
      },
      metadata: { scheme: 'exact' },
    })
    expect(rows(suffix)).toStrictEqual([
      { code: 'seller', codeIndex: 0, role: 'app', registry: { address: '0x00000000000000000000000000000000000000aa', chainId: '8453' } },
      {
        code: 'facilitator',
        codeIndex: 1,
        role: 'wallet',
        registry: { address: '0x00000000000000000000000000000000000000bb', chainId: '10' },
      },
      { code: 'client', codeIndex: 2, role: 'service', registry: null },
    ])
  })

  test('a code in several roles gets one row per role, a repeated service code one', () => {
    const suffix = Attribution.toDataSuffix({ appCode: 'baseapp', walletCode: 'baseapp', serviceCodes: ['baseapp', 'titan', 'titan'] })
    expect(rows(suffix).map(({ code, codeIndex, role }) => [code, codeIndex, role])).toStrictEqual([
      ['baseapp', 0, 'app'],
      ['baseapp', 0, 'wallet'],
      ['baseapp', 0, 'service'],
      ['titan', 1, 'service'],
    ])
  })

  test('schemas 0 and 1 give one row per code without a role; schema 1 names its registry on each', () => {
    expect(rows(Attribution.toDataSuffix({ codes: ['a', 'b', 'a'] }))).toStrictEqual([
      { code: 'a', codeIndex: 0, role: null, registry: null },
      { code: 'b', codeIndex: 1, role: null, registry: null },
    ])
    const registry = { address: '0xd8da6bf26964af9d7eed9e03e53415d37aa96045', chainId: '18446744073709551615' }
    expect(rows(schema1Suffix(registry.address, 'ffffffffffffffff', 'a,b'))).toStrictEqual([
      { code: 'a', codeIndex: 0, role: null, registry },
      { code: 'b', codeIndex: 1, role: null, registry },
    ])
  })

  test('schemas 3 and above, malformed suffixes and no suffix give no rows', () => {
    expect(rows(laterSchemaSuffix(3, 'beef'))).toStrictEqual([])
    expect(rows(Attribution.toDataSuffix({ codes: ['Bad'] }))).toStrictEqual([])
    expect(codeAttributions(null)).toStrictEqual([])
  })
})

describe('hasAttributionMarker', () => {
  test('needs the whole marker at the very end, after at least a schema id', () => {
    expect(hasAttributionMarker(`0x00${MARKER}`)).toBe(true)
    expect(hasAttributionMarker(`0x${MARKER}`)).toBe(false)
    expect(hasAttributionMarker(`0x00${MARKER}00`)).toBe(false)
    expect(hasAttributionMarker(`0x00${MARKER.slice(0, -1)}0`)).toBe(false)
    expect(hasAttributionMarker('0x')).toBe(false)
  })
})

describe('decodeAttribution properties', () => {
  test('calldata without the marker decodes to null', () => {
    fc.assert(
      fc.property(calldata, (input) => {
        fc.pre(!input.endsWith(MARKER))
        expect(decodeAttribution(input)).toBeNull()
      }),
    )
  })

  test('a schema 0 or 1 suffix of valid codes decodes to those codes, deduplicated', () => {
    const registry = fc.record({
      address: bytesHex(20, 20).map((hex) => `0x${hex}` as Hex),
      chainId: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    })
    fc.assert(
      fc.property(
        calldata,
        fc.array(validCode, { minLength: 1, maxLength: 7 }),
        fc.option(registry, { nil: undefined }),
        (prefix, codes, codeRegistry) => {
          const suffix = Attribution.toDataSuffix(codeRegistry ? { codes, codeRegistry } : { codes })
          const result = decodeAttribution(`${prefix}${suffix.slice(2)}`)
          expect(result).toStrictEqual({
            ok: true,
            schemaId: codeRegistry ? 1 : 0,
            codes: [...new Set(codes)],
            ...(codeRegistry ? { registry: { address: codeRegistry.address, chainId: String(codeRegistry.chainId) } } : {}),
          })
        },
      ),
    )
  })

  test('a schema 2 suffix of valid codes and JSON metadata decodes to its fields', () => {
    // ox's CBOR encoder takes integers (integral doubles too) up to 32 bits.
    const { json } = fc.letrec<{ json: unknown }>((tie) => ({
      json: fc.oneof(
        { depthSize: 'small' },
        fc.string({ maxLength: 6 }),
        fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
        fc.double({ min: -1e9, max: 1e9, noNaN: true }),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('json'), { maxLength: 3 }),
        fc.dictionary(fc.string({ maxLength: 4 }), tie('json'), { maxKeys: 3 }),
      ),
    }))
    fc.assert(
      fc.property(
        calldata,
        fc.option(validCode, { nil: undefined }),
        fc.option(validCode, { nil: undefined }),
        fc.array(validCode, { maxLength: 4 }),
        fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 4 }),
        (prefix, appCode, walletCode, serviceCodes, metadata) => {
          fc.pre(appCode !== undefined || walletCode !== undefined || serviceCodes.length > 0)
          const suffix = Attribution.toDataSuffix({ appCode, walletCode, serviceCodes, metadata })
          const result = decodeAttribution(`${prefix}${suffix.slice(2)}`)
          expectWellFormed(result)
          expect(result).toMatchObject({
            ok: true,
            schemaId: 2,
            codes: [...new Set([appCode, walletCode, ...serviceCodes].filter((code) => code !== undefined))],
          })
          const normalised = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown
          if (result?.ok && Object.keys(metadata).length > 0) expect(normalised(result.cbor?.metadata)).toStrictEqual(normalised(metadata))
        },
      ),
    )
  })

  test('hostile suffixes never throw and never yield an invalid code', () => {
    const lengthByte = (trueLength: number) =>
      fc.oneof(fc.constant(trueLength), fc.integer({ min: 0, max: 255 }), fc.constant(trueLength + 1))
    const codesField = fc.array(hostileCode, { maxLength: 5 }).map((codes) => OxHex.fromString(codes.join(',')).slice(2))
    const schema0 = codesField.chain((codes) => lengthByte(codes.length / 2).map((length) => `${codes}${byte(length)}00`))
    const schema1 = fc
      .tuple(bytesHex(0, 24), bytesHex(0, 9), codesField)
      .chain(([address, chainId, codes]) =>
        fc
          .tuple(lengthByte(chainId.length / 2), lengthByte(codes.length / 2))
          .map(([chainIdLength, codesLength]) => `${address}${chainId}${byte(chainIdLength)}${codes}${byte(codesLength)}01`),
      )
    const cborValue = fc.oneof(
      hostileCode,
      fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
      fc.double({ min: -1e9, max: 1e9 }),
      fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
      fc.boolean(),
      fc.constant(null),
      fc.uint8Array({ maxLength: 4 }),
      fc.array(hostileCode, { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 3 }), hostileCode, { maxKeys: 3 }),
    )
    const cborMap = fc
      .record(
        {
          a: cborValue,
          w: cborValue,
          s: cborValue,
          r: fc.oneof(cborValue, fc.record({ a: fc.record({ c: cborValue, a: cborValue }), w: fc.record({ c: cborValue, a: cborValue }) })),
          m: cborValue,
        },
        { requiredKeys: [] },
      )
      .map((map) => Cbor.encode(map).slice(2))
    const cborPayload = fc.oneof(
      cborMap,
      bytesHex(0, 40),
      cborMap.chain((hex) => fc.nat(hex.length / 2).map((n) => hex.slice(0, n * 2))),
    )
    const schema2 = cborPayload.chain((cbor) =>
      fc
        .oneof(fc.constant(cbor.length / 2), fc.integer({ min: 0, max: 0xffff }))
        .map((length) => `${cbor}${length.toString(16).padStart(4, '0')}02`),
    )
    const otherSchema = fc.tuple(bytesHex(0, 20), fc.integer({ min: 0, max: 255 })).map(([data, id]) => `${data}${byte(id)}`)
    const marker = fc.oneof(
      { weight: 5, arbitrary: fc.constant(MARKER) },
      fc.nat(15).map((cut) => MARKER.slice(0, cut * 2)),
      fc.nat(15).map((cut) => MARKER.slice(cut * 2)),
    )
    const suffix = fc.tuple(fc.oneof(schema0, schema1, schema2, otherSchema), marker).map(([body, end]) => body + end)

    fc.assert(
      fc.property(calldata, suffix, fc.boolean(), (prefix, body, upper) => {
        const input = `${prefix}${upper ? body.toUpperCase() : body}` as Hex
        let result: DecodedAttribution | null = null
        expect(() => {
          result = decodeAttribution(input)
        }).not.toThrow()
        expectWellFormed(result)
      }),
      { numRuns: 3000 },
    )
  })

  test('any string never throws', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 80 }), fc.constantFrom('', '0x'), (text, start) => {
        const result = decodeAttribution(`${start}${text}${MARKER}` as Hex)
        expectWellFormed(result)
      }),
    )
  })
})

function byte(value: number): string {
  return (value & 0xff).toString(16).padStart(2, '0')
}
