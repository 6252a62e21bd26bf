import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import copyStreams from 'pg-copy-streams'

const UNIQUE_VIOLATION = '23505'

/** A value of a `COPY` text row: text, a number, a boolean, a text array, or null. */
export type CopyValue = string | number | bigint | boolean | readonly string[] | null

const SPECIAL = /[\\\t\n\r]/g
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }
const escapeText = (text: string) => text.replace(SPECIAL, (c) => ESCAPES[c]!)
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
          ? escapeText(value)
          : typeof value === 'boolean'
            ? value
              ? 't'
              : 'f'
            : typeof value === 'object'
              ? escapeText(`{${value.map(arrayElement).join(',')}}`)
              : String(value)
    line += i === 0 ? field : `\t${field}`
  }
  return `${line}\n`
}

/** `COPY table (columns) FROM STDIN` of pieces in the text (or binary) format, on the caller's connection. */
async function copyInto(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  pieces: Iterable<Buffer | string>,
  binary: boolean,
): Promise<void> {
  const format = binary ? ' (FORMAT binary)' : ''
  await pipeline(Readable.from(pieces), client.query(copyStreams.from(`COPY ${table} (${columns.join(', ')}) FROM STDIN${format}`)))
}

/** A merge in two statements: the stored rows updated from the temporary table first, then the others inserted. */
type UpdateStored = {
  /** The columns of the unique key that find a stored row for an incoming one. */
  key: readonly string[]
  /** The `SET` list of the update; the incoming row is `i`. */
  set: string
  /** Which stored rows the update may change, beside the key; the incoming row is `i`. */
  where: string
}

/** What {@link copyOrMerge} did: how many rows it added or changed, and whether it met stored rows and merged. */
export type CopyOrMergeResult = { changed: number; merged: boolean }

/**
 * Writes rows that should all be new: `COPY` (text, or binary with `binary`) straight into `table`
 * inside a savepoint of the caller's transaction. Only when a row is there already (a unique
 * violation) is the savepoint rolled back and the rows copied into a temporary twin of the table, then
 * merged with `INSERT … SELECT … {onConflict}`; with `updateStored`, the stored rows are updated by a
 * statement of their own first and the insert takes only the others (`onConflict` still meets rows a
 * concurrent writer stored meanwhile), so that no statement both inserts and updates. With `copyFirst`
 * false it merges at once: for rows that may be stored under another value of a partitioned table's key
 * (its partition column), which a `COPY` would not meet and would store twice.
 */
export async function copyOrMerge(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  pieces: readonly (Buffer | string)[],
  {
    rows,
    onConflict,
    binary = false,
    updateStored,
    copyFirst = true,
  }: { rows: number; onConflict: string; binary?: boolean; updateStored?: UpdateStored; copyFirst?: boolean },
): Promise<CopyOrMergeResult> {
  if (copyFirst) {
    await client.query(`SAVEPOINT copy_${table}`)
    try {
      await copyInto(client, table, columns, pieces, binary)
      await client.query(`RELEASE SAVEPOINT copy_${table}`)
      return { changed: rows, merged: false }
    } catch (error) {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error
      await client.query(`ROLLBACK TO SAVEPOINT copy_${table}`)
    }
  }
  const list = columns.join(', ')
  const incoming = `${table}_incoming`
  await client.query(`CREATE TEMP TABLE IF NOT EXISTS ${incoming} ON COMMIT DELETE ROWS AS SELECT ${list} FROM ${table} WITH NO DATA`)
  await client.query(`TRUNCATE ${incoming}`)
  await copyInto(client, incoming, columns, pieces, binary)
  if (!updateStored) {
    const result = await client.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM ${incoming} ${onConflict}`)
    return { changed: result.rowCount ?? 0, merged: true }
  }
  const { key, set, where } = updateStored
  const sameKey = `(${key.map((column) => `${table}.${column}`).join(', ')}) = (${key.map((column) => `i.${column}`).join(', ')})`
  const updated = await client.query(`UPDATE ${table} SET ${set} FROM ${incoming} i WHERE ${sameKey} AND ${where}`)
  const inserted = await client.query(
    `INSERT INTO ${table} (${list}) SELECT ${list} FROM ${incoming} i WHERE NOT EXISTS (SELECT 1 FROM ${table} WHERE ${sameKey}) ${onConflict}`,
  )
  return { changed: (updated.rowCount ?? 0) + (inserted.rowCount ?? 0), merged: true }
}

// Binary COPY: signature, flags and header extension length before the tuples, -1 after them.
export const BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)])
export const BINARY_TRAILER = Buffer.from([0xff, 0xff])
// Seconds from the Unix epoch to PostgreSQL's (2000-01-01), from which binary timestamps count microseconds.
export const POSTGRES_EPOCH_SECONDS = 946_684_800
export const TWO_32 = 2 ** 32
const TEXT_OID = 25
const JSONB_VERSION = 1
const NUMERIC_POSITIVE = 0x0000

/**
 * Tuples of PostgreSQL's binary `COPY` format written field by field into one growing buffer (pg and
 * pg-copy-streams only pass bytes through; no maintained library writes this format for Node). The
 * server parses no text, and the statement goes out as a few large writes rather than one per row.
 */
export class BinaryCopyWriter {
  private buffer = Buffer.allocUnsafe(64 * 1024)
  private view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.byteLength)
  private at = 0

  private reserve(bytes: number): void {
    if (this.at + bytes <= this.buffer.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + bytes))
    this.buffer.copy(grown, 0, 0, this.at)
    this.buffer = grown
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.byteLength)
  }

  /** Starts a tuple of `fields` fields. */
  row(fields: number): this {
    this.reserve(2)
    this.view.setInt16(this.at, fields)
    this.at += 2
    return this
  }

  null(): this {
    this.reserve(4)
    this.view.setInt32(this.at, -1)
    this.at += 4
    return this
  }

  int16(value: number | null): this {
    if (value === null) return this.null()
    this.reserve(6)
    this.view.setInt32(this.at, 2)
    this.view.setInt16(this.at + 4, value)
    this.at += 6
    return this
  }

  int32(value: number | null): this {
    if (value === null) return this.null()
    this.reserve(8)
    this.view.setInt32(this.at, 4)
    this.view.setInt32(this.at + 4, value)
    this.at += 8
    return this
  }

  /** A bigint column from a safe integer. */
  int64(value: number | null): this {
    if (value === null) return this.null()
    this.reserve(12)
    const high = Math.floor(value / TWO_32)
    this.view.setInt32(this.at, 8)
    this.view.setInt32(this.at + 4, high)
    this.view.setUint32(this.at + 8, value - high * TWO_32)
    this.at += 12
    return this
  }

  bool(value: boolean | null): this {
    if (value === null) return this.null()
    this.reserve(5)
    this.view.setInt32(this.at, 1)
    this.buffer[this.at + 4] = value ? 1 : 0
    this.at += 5
    return this
  }

  /** A timestamptz column from Unix seconds. */
  timestamp(seconds: number): this {
    return this.int64((seconds - POSTGRES_EPOCH_SECONDS) * 1_000_000)
  }

  text(value: string | null): this {
    if (value === null) return this.null()
    this.reserve(4 + value.length * 3)
    const bytes = this.buffer.write(value, this.at + 4, 'utf8')
    this.view.setInt32(this.at, bytes)
    this.at += 4 + bytes
    return this
  }

  /** A jsonb column from JSON text. */
  jsonb(json: string | null): this {
    if (json === null) return this.null()
    this.reserve(5 + json.length * 3)
    this.buffer[this.at + 4] = JSONB_VERSION
    const bytes = this.buffer.write(json, this.at + 5, 'utf8')
    this.view.setInt32(this.at, bytes + 1)
    this.at += 5 + bytes
    return this
  }

  /** A one-dimensional text[] column without null elements. */
  textArray(values: readonly string[] | null): this {
    if (values === null) return this.null()
    const start = this.at
    this.reserve(4 + 20)
    this.at += 4
    const header = values.length === 0 ? [0, 0, TEXT_OID] : [1, 0, TEXT_OID, values.length, 1]
    for (const word of header) {
      this.view.setInt32(this.at, word)
      this.at += 4
    }
    for (const value of values) this.text(value)
    this.view.setInt32(start, this.at - start - 4)
    return this
  }

  /** A numeric column from a non-negative decimal integer. */
  numeric(decimal: string | null): this {
    if (decimal === null) return this.null()
    if (!/^\d+$/.test(decimal)) throw new Error(`not a non-negative decimal integer: ${decimal}`)
    const digits = decimal.replace(/^0+/, '')
    // Base-10,000 digits, most significant first; trailing zero digits are left out (the weight keeps their place).
    const groups: number[] = []
    for (let end = digits.length; end > 0; end -= 4) groups.unshift(Number(digits.slice(Math.max(0, end - 4), end)))
    const weight = groups.length - 1
    while (groups.length > 0 && groups[groups.length - 1] === 0) groups.pop()
    this.reserve(4 + 8 + groups.length * 2)
    this.view.setInt32(this.at, 8 + groups.length * 2)
    this.view.setInt16(this.at + 4, groups.length)
    this.view.setInt16(this.at + 6, groups.length === 0 ? 0 : weight)
    this.view.setInt16(this.at + 8, NUMERIC_POSITIVE)
    this.view.setInt16(this.at + 10, 0)
    this.at += 12
    for (const group of groups) {
      this.view.setInt16(this.at, group)
      this.at += 2
    }
    return this
  }

  /** The whole statement's data: header, the tuples written, trailer. */
  pieces(): Buffer[] {
    return [BINARY_HEADER, this.buffer.subarray(0, this.at), BINARY_TRAILER]
  }
}
