/** What stands in for a secret in any output. */
export const MASK = '***'

/** Pieces shorter than this are not searched for in free text: masking every "v2" or "rpc" would garble logs. */
const MIN_SECRET_LENGTH = 4

/** Query parameters of a database or Redis URL that hold credentials (`?password=`, `?sslkey=`). */
const CREDENTIAL_PARAM = /pass|secret|key|token/i

/**
 * A URL as it may be shown: scheme, host and port, with everything else (userinfo, path, query,
 * fragment) masked, since providers put API keys in any of them.
 *
 * @example
 * redactUrl('https://key@base-mainnet.example.com:8443/v2/abc?apikey=def') // 'https://base-mainnet.example.com:8443/***'
 */
export function redactUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return MASK
  }
  // No host (`localhost:8545` reads as scheme `localhost:`): nothing after the scheme is shown.
  if (!parsed.host) return `${parsed.protocol}${MASK}`
  const hidden = parsed.username || parsed.password || parsed.pathname.replace(/^\/$/, '') || parsed.search || parsed.hash
  return `${parsed.protocol}//${parsed.host}${hidden ? `/${MASK}` : ''}`
}

/**
 * The parts of a URL that may be secret, raw and percent-decoded: the password and credential query
 * values, and unless `credentialsOnly` (a database or Redis URL, whose user and database names are not
 * secret) the user name, every path segment, the query and every query value.
 */
export function secretsOfUrl(url: string | undefined, { credentialsOnly = false } = {}): string[] {
  if (!url) return []
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return [url]
  }
  const pieces = [parsed.password]
  if (!credentialsOnly) pieces.push(parsed.username, ...parsed.pathname.split('/'), parsed.search.slice(1))
  for (const [name, value] of parsed.searchParams) if (!credentialsOnly || CREDENTIAL_PARAM.test(name)) pieces.push(value)
  const decoded = pieces.flatMap((piece) => {
    try {
      return [piece, decodeURIComponent(piece)]
    } catch {
      return [piece]
    }
  })
  return [...new Set(decoded)].filter((piece) => piece.length >= MIN_SECRET_LENGTH)
}

/**
 * A function that masks every occurrence of the given secrets in a text: the last guard for messages
 * that quote what a node or a library echoed (an HTTP 401 body repeating the request's path).
 */
export function createRedactor(secrets: readonly string[]): (text: string) => string {
  const sorted = [...new Set(secrets)].filter((secret) => secret.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length)
  if (sorted.length === 0) return (text) => text
  const pattern = new RegExp(sorted.map((secret) => secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g')
  return (text) => text.replace(pattern, MASK)
}
