import { describe, expect, it } from 'vitest'
import { copyLine } from './copy.js'

describe('copyLine', () => {
  it('escapes what COPY text reads specially and writes null, booleans, numbers and text arrays its way', () => {
    expect(
      copyLine(['a\\b', 'tab\there', 'two\nlines\r', null, true, false, 8453, 12n, ['x', 'y"z', 'back\\slash', 'comma,{brace}', 'NULL']]),
    ).toBe('a\\\\b\ttab\\there\ttwo\\nlines\\r\t\\N\tt\tf\t8453\t12\t{"x","y\\\\"z","back\\\\\\\\slash","comma,{brace}","NULL"}\n')
    expect(copyLine([[]])).toBe('{}\n')
  })
})
