/**
 * The BuilderCodes registry replayed from its logs, as `public.registry_codes` must show it: the tests
 * of the registry view and the seeded simulation compare the view with this.
 */
import { decodeAbiParameters, toEventSelector } from 'viem'
import { builderCodesRegistryAbi } from '../../src/attribution/registry.js'

const [CODE_REGISTERED, PAYOUT_UPDATED, TRANSFER] = builderCodesRegistryAbi.map((event) => toEventSelector(event)) as [
  string,
  string,
  string,
]
const ZERO_ADDRESS = `0x${'0'.repeat(40)}`

/** A row of `registry_codes` as the comparisons read it. */
export type RegistryRow = {
  token_id: string
  builder_code: string
  owner: string | null
  payout_address: string | null
  registered_block: string
}

/** What the registry's live logs say, replayed in chain order the way the registry applies them. */
export function replayRegistry(logs: { topics: string[]; data: string; block_number: string }[]): RegistryRow[] {
  const tokens = new Map<string, { registered?: { code: string; block: string }; owner?: string; payout?: string }>()
  const of = (topic: string) => tokens.get(topic) ?? tokens.set(topic, {}).get(topic)!
  for (const log of logs) {
    const [topic0, topic1, topic2, topic3] = log.topics
    if (topic0 === CODE_REGISTERED && topic1 !== undefined) {
      const token = of(topic1)
      token.registered ??= { code: decodeAbiParameters([{ type: 'string' }], log.data as `0x${string}`)[0], block: log.block_number }
    } else if (topic0 === PAYOUT_UPDATED && topic1 !== undefined) of(topic1).payout = `0x${log.data.slice(26)}`
    else if (topic0 === TRANSFER && topic3 !== undefined) of(topic3).owner = `0x${topic2!.slice(26)}`
  }
  return [...tokens]
    .filter(([, token]) => token.registered !== undefined && /^[a-z0-9_]{1,32}$/.test(token.registered.code))
    .map(([topic, token]) => ({
      token_id: BigInt(topic).toString(),
      builder_code: token.registered!.code,
      owner: token.owner === undefined || token.owner === ZERO_ADDRESS ? null : token.owner,
      payout_address: token.payout ?? null,
      registered_block: token.registered!.block,
    }))
    .sort((a, b) => a.token_id.localeCompare(b.token_id))
}
