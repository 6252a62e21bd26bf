import { describe, expect, it } from 'vitest'
import { checkTip } from './detect.js'

const header = (number: number, hash: string, parentHash: string) => ({ number, hash, parentHash })

describe('checkTip', () => {
  it('accepts headers that continue the stored tip and link to each other', () => {
    expect(checkTip({ hash: '0xa' }, [header(11, '0xb', '0xa'), header(12, '0xc', '0xb')])).toEqual({ type: 'extends' })
  })

  it('sees a reorg when the first header does not sit on the stored tip', () => {
    expect(checkTip({ hash: '0xa' }, [header(11, '0xb', '0xf'), header(12, '0xc', '0xb')])).toEqual({ type: 'reorg', newHash: '0xf' })
  })

  it('asks again when the headers do not link to each other', () => {
    expect(checkTip({ hash: '0xa' }, [header(11, '0xb', '0xa'), header(12, '0xc', '0xe')])).toEqual({ type: 'changed', block: 12 })
  })
})
