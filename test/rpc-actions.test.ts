import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..')
/** A JSON-RPC method name written as a string of its own, `'eth_getLogs'` or `"eth_call"` (comments name them in backquotes). */
const METHOD_LITERAL = /(['"])eth_[A-Za-z0-9]+\1/g

/** Product source files under `dir`, tests aside (they may name the methods they count). */
function productFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.test.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
}

describe('node calls', () => {
  it('are made only in src/rpc: no module elsewhere in src names a JSON-RPC method', () => {
    // The devnet, which serves these methods rather than calls them, lives in harness/, outside src.
    const outside = productFiles(join(ROOT, 'src')).filter((file) => !file.startsWith(join('src', 'rpc')))
    expect(outside.length).toBeGreaterThan(50)
    const named = outside.flatMap((file) =>
      [...readFileSync(join(ROOT, file), 'utf8').matchAll(METHOD_LITERAL)].map((match) => `${file}: ${match[0]}`),
    )
    expect(named).toEqual([])
  })

  it('have one file each in src/rpc/actions', () => {
    const actions = productFiles(join(ROOT, 'src', 'rpc', 'actions'))
    const methodsPerFile = actions.map(
      (file) => new Set([...readFileSync(join(ROOT, file), 'utf8').matchAll(METHOD_LITERAL)].map((match) => match[0].slice(1, -1))),
    )
    const everywhere = methodsPerFile.flatMap((methods) => [...methods])
    expect(everywhere.length).toBeGreaterThan(10)
    // A method named in two action files is a node call with two homes.
    expect(everywhere.filter((method, i) => everywhere.indexOf(method) !== i)).toEqual([])
  })
})
