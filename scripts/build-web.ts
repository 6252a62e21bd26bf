/**
 * npm run build:web [-- --outdir dir]
 *
 * Bundles the dashboard (src/web) with esbuild into `outdir` (default dist/web): `index.html` and
 * content-hashed, minified `assets/` (scripts, styles, nothing loaded from another host).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { build } from 'esbuild'

const WEB_SOURCE = fileURLToPath(new URL('../src/web/', import.meta.url))
export const DEFAULT_OUTDIR = fileURLToPath(new URL('../dist/web/', import.meta.url))

export type BuildWebResult = { outdir: string; files: { path: string; bytes: number }[] }

/** Bundles the dashboard into `outdir`, replacing what was there. */
export async function buildWeb({ outdir = DEFAULT_OUTDIR }: { outdir?: string } = {}): Promise<BuildWebResult> {
  const assets = join(outdir, 'assets')
  rmSync(outdir, { recursive: true, force: true })
  mkdirSync(assets, { recursive: true })
  const result = await build({
    entryPoints: [join(WEB_SOURCE, 'main.tsx')],
    bundle: true,
    minify: true,
    sourcemap: 'linked',
    format: 'esm',
    target: ['es2022'],
    outdir: assets,
    entryNames: '[name]-[hash]',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: join(WEB_SOURCE, 'tsconfig.json'),
    metafile: true,
    logLevel: 'warning',
  })
  const outputs = Object.entries(result.metafile.outputs).filter(([path]) => !path.endsWith('.map'))
  const named = (extension: string) => basename(outputs.find(([path]) => path.endsWith(extension))![0])
  const html = readFileSync(join(WEB_SOURCE, 'index.html'), 'utf8')
    .replace('%SCRIPT%', `/assets/${named('.js')}`)
    .replace('%STYLE%', `/assets/${named('.css')}`)
  writeFileSync(join(outdir, 'index.html'), html)
  return {
    outdir,
    files: [
      { path: 'index.html', bytes: Buffer.byteLength(html) },
      ...outputs.map(([path, output]) => ({ path: relative(outdir, resolve(path)), bytes: output.bytes })),
    ],
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } })
  const { outdir, files } = await buildWeb({ outdir: values.outdir })
  for (const file of files) process.stdout.write(`${join(outdir, file.path)}  ${(file.bytes / 1024).toFixed(1)} KiB\n`)
}
