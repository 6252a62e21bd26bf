import { execFile } from 'node:child_process'
import { chownSync } from 'node:fs'
import { promisify } from 'node:util'
import type pg from 'pg'

const run = promisify(execFile)

/** Runs a PostgreSQL tool as the `postgres` OS user (the server refuses to run as root); resolves to its stdout. */
export async function asPostgres(command: string, args: string[]): Promise<string> {
  const { stdout } = process.getuid?.() === 0 ? await run('runuser', ['-u', 'postgres', '--', command, ...args]) : await run(command, args)
  return stdout
}

/** The directory of the server's own programs (`postgres`, `pg_ctl`, `pg_basebackup`), by the major version it reports. */
export async function postgresBinDir(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ major: string }>(`SELECT current_setting('server_version_num')::int / 10000 AS major`)
  return `/usr/lib/postgresql/${rows[0]!.major}/bin`
}

/** Hands `paths` to the `postgres` OS user when running as root, so the server and its tools may use them. */
export async function ownByPostgres(...paths: string[]): Promise<void> {
  if (process.getuid?.() !== 0) return
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim())
  for (const path of paths) chownSync(path, uid, uid)
}
