import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Writes `text` as a codetrail config file in a new temporary directory; returns its path. */
export function writeConfigFile(text: string, name = 'codetrail.config.yaml'): string {
  const file = join(mkdtempSync(join(tmpdir(), 'codetrail-config-')), name)
  writeFileSync(file, text)
  return file
}
