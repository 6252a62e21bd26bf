import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import copyStreams from 'pg-copy-streams'

const UNIQUE_VIOLATION = '23505'

/** A value of a `COPY` text row: text, a number, a boolean, a text array, or null. */
export type CopyValue = string | number | bigint | boolean | readonly string[] | null

const SPECIAL = /[\\\t\n\r]/g
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }
const escape = (text: string) => text.replace(SPECIAL, (c) => ESCAPES[c]!)
const arrayElement = (element: string) => `"${element.replace(/[\\"]/g, '\\$&')}"`

/** One row in PostgreSQL `COPY` text format, newline included (jsonb values go in as their JSON text). */
export function copyLine(values: readonly CopyValue[]): string {
  let line = ''
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    const field =
      value === null || value === undefined
        ? '\\N'
        : typeof value === 'string'
          ? escape(value)
          : typeof value === 'boolean'
            ? value ? 't' : 'f'
            : typeof value === 'object'
              ? escape(`{${value.map(arrayElement).join(',')}}`)
              : String(value)
    line += i === 0 ? field : `\t${field}`
  }
  return `${line}\n`
}

/** `COPY table (columns) FROM STDIN` of pieces in the text (or binary) format, on the caller's connection. */
async function copyInto(client: pg.PoolClient, table: string, columns: readonly string[], pieces: Iterable<Buffer | string>, binary: boolean): Promise<void> {
  const format = binary ? ' (FORMAT binary)' : ''
  await pipeline(Readable.from(pieces), client.query(copyStreams.from(`COPY ${table} (${columns.join(', ')}) FROM STDIN${format}`)))
}

/**
 * Writes rows that should all be new: `COPY` (text, or binary with `binary`) straight into `table`
 * inside a savepoint of the caller's transaction. Only when a row is there already (a unique
 * violation) is the savepoint rolled back and the rows copied into a temporary twin of the table, then
 * merged with `INSERT … SELECT … {onConflict}`. Returns how many rows the write added or changed.
 */
export async function copyOrMerge(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  pieces: readonly (Buffer | string)[],
  { rows, onConflict, binary = false }: { rows: number; onConflict: string; binary?: boolean },
): Promise<number> {
  await client.query(`SAVEPOINT copy_${table}`)
  try {
    await copyInto(client, table, columns, pieces, binary)
    await client.query(`RELEASE SAVEPOINT copy_${table}`)
    return rows
  } catch (error) {
    if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
    await client.query(`ROLLBACK TO SAVEPOINT copy_${table}`)
  }
  const list = columns.join(', ')
  const incoming = `${table}_incoming`
  await client.query(`CREATE TEMP TABLE IF NOT EXISTS ${incoming} ON COMMIT DELETE ROWS AS SELECT ${list} FROM ${table} WITH NO DATA`)
  await client.query(`TRUNCATE ${incoming}`)
  await copyInto(client, incoming, columns, pieces, binary)
  const result = await client.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM ${incoming} ${onConflict}`)
  return result.rowCount ?? 0
}
