/** Numbers and times for people: grouped digits, the browser's language and time zone, UTC on hover. */

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 })
const decimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 })
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 })
const localTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })
// Five blocks share a second on Base: where the node serves milliseconds, they tell the blocks apart.
const localTimeMs = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
  second: '2-digit',
  fractionalSecondDigits: 3,
})

export const formatInteger = (value: number | bigint) => integer.format(value)
export const formatDecimal = (value: number) => decimal.format(value)

/** Gas comes as a decimal string (it can pass 2^53): grouped in full, compact when long. */
export function formatGas(value: string): string {
  const gas = BigInt(value)
  return gas >= 10_000_000n ? compact.format(gas) : integer.format(gas)
}

export const formatLocalTime = (iso: string, withMs = false) => (withMs ? localTimeMs : localTime).format(new Date(iso))
export const formatUtcTime = (iso: string, withMs = false) =>
  `${new Date(iso)
    .toISOString()
    .replace('T', ' ')
    .replace(withMs ? /Z$/ : /\.\d+Z$/, '')} UTC`

export function formatDuration(seconds: number): string {
  if (seconds < 120) return `${formatInteger(Math.round(seconds))} s`
  if (seconds < 7200) return `${formatDecimal(seconds / 60)} min`
  return `${formatDecimal(seconds / 3600)} h`
}

/** `0x1234…abcd`: the full value goes in a title and the accessible name. */
export const shortHex = (value: string) => (value.length > 14 ? `${value.slice(0, 6)}…${value.slice(-4)}` : value)
