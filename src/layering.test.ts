import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * The direction of every import under src/, so the layers hold by test rather than by habit. Data flows
 * node → rpc → sync → store → api; each folder may import only the folders listed for it (and itself).
 * The files at the top of src (`main.ts`, `daemon.ts`, `indexer.ts`) and `cli/` wire the parts together
 * and may import any of them. A new folder fails here until it is given its place.
 */
const MAY_IMPORT: Record<string, readonly string[]> = {
  utils: [],
  internal: ['utils'],
  config: ['internal', 'utils'],
  rpc: ['config', 'internal', 'utils'],
  store: ['internal', 'utils'],
  chains: ['rpc', 'store', 'internal', 'utils'],
  attribution: ['rpc', 'store', 'internal', 'utils'],
  reorg: ['rpc', 'store', 'internal', 'utils'],
  sync: ['reorg', 'attribution', 'chains', 'rpc', 'store', 'internal', 'utils'],
  queue: ['sync', 'store', 'internal', 'utils'],
  delivery: ['queue', 'store', 'internal', 'utils'],
  api: ['client', 'queue', 'delivery', 'attribution', 'chains', 'rpc', 'store', 'config', 'internal', 'utils'],
  // The typed client of the API and the types generated from its OpenAPI document: what the browser may share with the server.
  client: [],
  // The dashboard is bundled for the browser on its own, with the typed client.
  web: ['client'],
}
const WIRING = new Set(['main.ts', 'daemon.ts', 'indexer.ts', 'cli'])

/** Imports that a layer must never reach, directly or through others. */
const NEVER: [from: string, to: readonly string[]][] = [
  ['store', ['api', 'queue', 'sync']],
  ['rpc', ['store']],
  ['config', ['api', 'attribution', 'chains', 'delivery', 'queue', 'reorg', 'rpc', 'store', 'sync']],
]

const SRC = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(SRC, '..')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

// Static imports and re-exports (type-only ones too: they tie the layers as much) and dynamic `import()`.
const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g

function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
}

/** Each source file (relative to the repo root) with the repo files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>()
  for (const file of sourceFiles(SRC)) {
    const targets: string[] = []
    for (const match of stripComments(readFileSync(file, 'utf8')).matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]!
      if (!specifier.startsWith('.')) continue
      targets.push(
        relative(ROOT, resolve(dirname(file), specifier))
          .replace(/\.js$/, '.ts')
          .replace(/\.jsx$/, '.tsx'),
      )
    }
    graph.set(relative(ROOT, file), targets)
  }
  return graph
}

/** `src/<folder>/…` → folder; `src/<file>.ts` → that file's name; outside src → null. */
function layerOf(path: string): string | null {
  const parts = path.split('/')
  return parts[0] === 'src' ? parts[1]! : null
}

const graph = importGraph()

describe('layering of src/', () => {
  it('reads the imports of every source file', () => {
    expect(graph.size).toBeGreaterThan(100)
    expect(graph.get('src/sync/historical.ts')).toContain('src/store/index.ts')
  })

  it('gives every folder of src a place', () => {
    const unplaced = [...new Set([...graph.keys()].map(layerOf))].filter((layer) => layer && !(layer in MAY_IMPORT) && !WIRING.has(layer))
    expect(unplaced).toEqual([])
  })

  it('imports only along the flow', () => {
    const against: string[] = []
    for (const [file, targets] of graph) {
      const from = layerOf(file)!
      if (WIRING.has(from)) continue
      for (const target of targets) {
        const to = layerOf(target)
        if (to === from || (to !== null && MAY_IMPORT[from]!.includes(to))) continue
        if (to === null) continue // reported by the harness test below
        against.push(`${file} → ${target}`)
      }
    }
    expect(against).toEqual([])
  })

  it('never reaches the harness, the tests or anything else outside src', () => {
    const outside = [...graph].flatMap(([file, targets]) =>
      targets.filter((target) => layerOf(target) === null).map((target) => `${file} → ${target}`),
    )
    expect(outside).toEqual([])
  })

  it.each(NEVER)('%s never reaches %j, even through other folders', (from, forbidden) => {
    const reached = new Map<string, string>()
    const queue = [...graph.keys()].filter((file) => layerOf(file) === from)
    for (const file of queue) reached.set(file, file)
    while (queue.length > 0) {
      const file = queue.shift()!
      for (const target of graph.get(file) ?? []) {
        if (reached.has(target)) continue
        reached.set(target, `${reached.get(file)} → ${target}`)
        queue.push(target)
      }
    }
    const paths = [...reached].filter(([file]) => forbidden.includes(layerOf(file) ?? '')).map(([, path]) => path)
    expect(paths).toEqual([])
  })

  it('has no import circles between files', () => {
    expect(circles(graph)).toEqual([])
  })
})

/** Strongly connected components of more than one file (Tarjan), each as its files in order. */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0
  const indexOf = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  function visit(file: string) {
    indexOf.set(file, index)
    low.set(file, index++)
    stack.push(file)
    onStack.add(file)
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue
      if (!indexOf.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, indexOf.get(target)!))
    }
    if (low.get(file) === indexOf.get(file)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== file)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const file of graph.keys()) if (!indexOf.has(file)) visit(file)
  return found
}
