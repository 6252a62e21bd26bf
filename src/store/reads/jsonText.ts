import { sql, type SQL } from 'drizzle-orm'

/**
 * JSON that PostgreSQL writes as text, for reads whose rows an API answer carries as they are: a value
 * sent on as one string costs the API no parsing of columns and no serializing of objects. For a page of
 * 100 attributions node-postgres turned 2,100 column values into objects at about 0.5 µs each, and the
 * serializer wrote them out again. Written by PostgreSQL, the page's statement costs it 0.3–0.4 ms more
 * and the API's process about 0.6 ms less, on the process the API's requests queue for; the API bench at
 * 10 M attributions went from 1.29–1.63 to 1.22–1.26 ms of CPU per request (harness/bench/README.md). An
 * object is written by concatenation rather than by `json_build_object`, which on PostgreSQL 15 works
 * out how to write each argument's type on every call (1.0–1.1 ms for the page). The log list
 * (`listLogs`) keeps its rows: written here, a page of 100 logs cost PostgreSQL 0.24 ms more and the API
 * 0.21 ms less (1,000,000 logs, 8 clients paging), no saving in all, and PostgreSQL is the harder of the
 * two to add to.
 */
export type JsonText = SQL<string>

/** Any value as JSON (`to_json`: strings escaped, arrays as arrays), SQL null as `null`. */
export const jsonValue = (value: SQL): JsonText => sql<string>`coalesce(to_json(${value})::text, 'null')`

/** A number or boolean, whose text is its JSON; SQL null as `null`. */
export const jsonScalar = (value: SQL): JsonText => sql<string>`coalesce(${value}::text, 'null')`

/**
 * A string that needs no escaping, because what writes it allows only such strings (a builder code, a
 * status); SQL null as `null`. `to_json` costs PostgreSQL 15 about 0.4 µs a value (it looks up how to
 * write the value's type on every call), quoting about 0.03 µs.
 */
export const jsonPlainString = (value: SQL): JsonText => sql<string>`coalesce('"' || ${value} || '"', 'null')`

/** A `timestamptz` as ISO 8601 in UTC to the millisecond (as `Date#toISOString` writes it); null as `null`. */
export const jsonIsoTime = (value: SQL): JsonText =>
  sql<string>`coalesce('"' || to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`

const FIELD_NAME = /^[A-Za-z][A-Za-z0-9]*$/

/** An object of these fields, in this order, each value already JSON text. */
export function jsonObject(fields: Record<string, JsonText>): JsonText {
  if (Object.keys(fields).length === 0) return sql<string>`'{}'`
  const parts = Object.entries(fields).map(([name, value], index) => {
    if (!FIELD_NAME.test(name)) throw new Error(`jsonObject: field name ${JSON.stringify(name)} is not a plain identifier`)
    return sql`${sql.raw(`'${index === 0 ? '{' : ','}"${name}":'`)} || ${value}`
  })
  return sql<string>`(${sql.join(parts, sql` || `)} || '}')`
}
