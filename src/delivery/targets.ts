import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import type { LookupFunction, Socket } from 'node:net'
import ipaddr from 'ipaddr.js'
import { CodetrailError } from '../internal/errors.js'

/**
 * Where webhooks may go. Link-local and cloud-metadata addresses are always refused; loopback and
 * private ranges only with `allowPrivate` (`WEBHOOK_ALLOW_PRIVATE=1`, on-premises receivers).
 */
export type TargetPolicy = { allowPrivate: boolean }

/** Names of cloud metadata services, refused before any lookup. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal'])
/** Metadata endpoints that sit inside otherwise private ranges (AWS IPv6, Alibaba, Oracle's is link-local). */
const METADATA_ADDRESSES = new Set(['fd00:ec2::254', '100.100.100.200'])
/** ipaddr.js ranges reachable only with `allowPrivate`; every range but these and `unicast` is refused. */
const PRIVATE_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat'])

export class WebhookTargetError extends CodetrailError {
  override name = 'WebhookTargetError'
  readonly code = 'EWEBHOOKTARGET'
}

/** Why `address` may not receive webhooks under `policy`, or null when it may. */
export function refusedAddress(address: string, { allowPrivate }: TargetPolicy): string | null {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`
  // An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
  const parsed = ipaddr.process(address)
  const shown = parsed.toString()
  if (METADATA_ADDRESSES.has(shown)) return `${shown} is a cloud metadata address`
  const range = parsed.range()
  if (range === 'unicast') return null
  if (range === 'linkLocal') return `${shown} is link-local (cloud metadata lives there)`
  if (PRIVATE_RANGES.has(range))
    return allowPrivate
      ? null
      : `${shown} is a ${range === 'loopback' ? 'loopback' : 'private'} address (set WEBHOOK_ALLOW_PRIVATE=1 for on-premises receivers)`
  return `${shown} is not a public address (${range})`
}

/**
 * Why `url` may not receive webhooks, judged without a lookup (scheme, metadata host names, an IP
 * literal's range), or null. A host name is judged again on the addresses it resolves to, when used.
 */
export function refusedUrl(url: string, policy: TargetPolicy): string | null {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return 'not a URL'
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return 'not an http or https URL'
  const host = target.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase()
  if (METADATA_HOSTS.has(host)) return `${host} is a cloud metadata host`
  // URL has already turned other IPv4 spellings (0x7f.1, 2130706433) into dotted quads.
  return ipaddr.isValid(host) ? refusedAddress(host, policy) : null
}

/**
 * A `lookup` for sockets to receivers: resolves the name once, refuses it when any of its addresses is
 * refused (so DNS cannot hand out a private address beside a public one), and gives the socket exactly
 * the addresses it checked, so what it connects to is what was checked.
 */
export function checkedLookup(policy: TargetPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { family: options.family, hints: options.hints, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0)
      const refusal = addresses.map((entry) => refusedAddress(entry.address, policy)).find((reason) => reason !== null)
      if (refusal || addresses.length === 0) return callback(new WebhookTargetError(`${hostname}: ${refusal ?? 'no address'}`), '', 0)
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses)
      return callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}

export type WebhookTargets = {
  /** Why `url` may not receive webhooks (statically, then each address its name resolves to), or null. */
  check: (url: string) => Promise<string | null>
  /** Keep-alive agents whose sockets connect only to allowed addresses. */
  agents: { 'http:': http.Agent; 'https:': https.Agent }
}

/**
 * Webhook targets under `policy`: the URL check of the subscription route and the agents of delivery.
 * Delivery follows no redirect (node:http never does; a 3xx is a failed delivery).
 */
export function webhookTargets(policy: TargetPolicy): WebhookTargets {
  const lookup = checkedLookup(policy)
  const withCheckedPeer = <A extends http.Agent>(agent: A): A => {
    const createConnection = (agent as unknown as { createConnection: (...args: unknown[]) => Socket }).createConnection.bind(agent)
    // Also judge the address actually connected to: an IP literal never goes through `lookup`.
    ;(agent as unknown as { createConnection: unknown }).createConnection = (...args: unknown[]) => {
      const socket = createConnection(...args)
      socket.once('connect', () => {
        const refusal = socket.remoteAddress ? refusedAddress(socket.remoteAddress, policy) : 'no peer address'
        if (refusal) socket.destroy(new WebhookTargetError(refusal))
      })
      return socket
    }
    return agent
  }
  return {
    agents: {
      'http:': withCheckedPeer(new http.Agent({ keepAlive: true, lookup })),
      'https:': withCheckedPeer(new https.Agent({ keepAlive: true, lookup })),
    },
    async check(url) {
      const refusal = refusedUrl(url, policy)
      if (refusal) return refusal
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
      if (ipaddr.isValid(host)) return null
      // A name that does not resolve now is no target yet; each delivery judges it again when it does.
      return new Promise((resolve) =>
        lookup(host, { all: true }, (error) => resolve(error instanceof WebhookTargetError ? error.message : null)),
      )
    },
  }
}
