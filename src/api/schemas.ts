import { z } from 'zod'
import { ATTRIBUTION_CODE_PATTERN, normalizeWalletAddress } from '../attribution/index.js'
import { STATUSES, type Status } from '../store/schema.js'
import { ApiError } from './errors.js'

/** Request and response pieces shared by the routes; every request string is checked before it reaches SQL. */

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 1000
const MIN_YEAR = 1970
const MAX_YEAR = 9999
/** How many values one list parameter may carry (`address=a,b,…`). */
export const MAX_LIST_ITEMS = 100

const HEX_ADDRESS = /^0[xX][0-9a-fA-F]{40}$/
const HEX_HASH = /^0[xX][0-9a-fA-F]{64}$/
const BLOCK_NUMBER = /^(0x[0-9a-fA-F]{1,14}|[0-9]{1,16})$/

export const isBlockNumber = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0
export const isLowerHash = (value: unknown): value is string => typeof value === 'string' && /^0x[0-9a-f]{64}$/.test(value)
/** A time exactly as the API writes it (`toISOString`: UTC, to the millisecond, a real date). */
export const isIsoMilliseconds = (value: unknown): value is string =>
  typeof value === 'string' && /^\d{4}-/.test(value) && !Number.isNaN(Date.parse(value)) && new Date(value).toISOString() === value
export const isCode = (value: unknown): value is string => typeof value === 'string' && ATTRIBUTION_CODE_PATTERN.test(value)

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'Stable snake_case error code.', example: 'invalid_wallet_address' }),
      message: z.string().meta({ description: 'What went wrong, in one sentence.' }),
    }),
  })
  .meta({ id: 'Error', description: 'Every error response has this shape.' })

/** Error responses a route may give, for the OpenAPI document. */
export const errorResponses = (...statuses: (400 | 401 | 404 | 413 | 415 | 429 | 500 | 502 | 503)[]) =>
  Object.fromEntries(statuses.map((status) => [status, errorSchema])) as Record<number, typeof errorSchema>

/** A wallet in any letter case; a mixed-case one must carry a valid EIP-55 checksum. Lowercased. */
export const walletAddress = z
  .string()
  .regex(HEX_ADDRESS, 'must be a 0x-prefixed 20-byte hex address')
  .transform((value, ctx) => {
    const normalized = normalizeWalletAddress(value)
    if (normalized === null) {
      ctx.addIssue({ code: 'custom', message: 'has mixed letter case that is not a valid EIP-55 checksum' })
      return z.NEVER
    }
    return normalized
  })
  .meta({
    description: 'Wallet address; any letter case (mixed case must be a valid EIP-55 checksum).',
    example: '0xd8da6bf26964af9d7eed9e03e53415d37aa96045',
  })

/** A contract address in any letter case, lowercased (no checksum check, as `eth_getLogs`). */
export const address = z
  .string()
  .regex(HEX_ADDRESS, 'must be a 0x-prefixed 20-byte hex address')
  .transform((value) => value.toLowerCase())

export const hash = z
  .string()
  .regex(HEX_HASH, 'must be a 0x-prefixed 32-byte hex hash')
  .transform((value) => value.toLowerCase())

export const builderCode = z
  .string()
  .regex(ATTRIBUTION_CODE_PATTERN, 'must match ^[a-z0-9_]{1,32}$')
  .meta({ description: 'A builder code as it appears in ERC-8021 suffixes.', example: 'bc_k3x9a2mf' })

export const chainIdParam = z
  .string()
  .regex(/^\d{1,15}$/, 'must be a decimal chain id')
  .transform(Number)
  .meta({ description: "The chain's EIP-155 id; default: the deployment's first configured chain.", example: '8453' })

/** `chainId` of the stats and leaderboard routes: one chain's id, or `all` for every chain served. */
export const chainsParam = z
  .string()
  .regex(/^(\d{1,15}|all)$/, 'must be a decimal chain id or all')
  .transform((value) => (value === 'all' ? ('all' as const) : Number(value)))
  .meta({
    description:
      "The chain's EIP-155 id, or all: every chain this deployment serves, summed (a sender counts once per chain it sent from; the wallet and registry record named are the first configured chain's). Default: the deployment's first configured chain.",
    example: 'all',
  })

export const blockNumber = z
  .string()
  .regex(BLOCK_NUMBER, 'must be a block number, decimal or 0x hex')
  .transform(Number)
  .refine((value) => Number.isSafeInteger(value), `must be at most ${Number.MAX_SAFE_INTEGER}`)
  .meta({ description: 'Block number, decimal or 0x-prefixed hex.', example: '12345' })

/** ISO 8601 date (`2025-01-31`, UTC midnight) or date-time with a zone (`2025-01-31T12:00:00Z`). */
export const timestamp = z
  .string()
  .max(40, 'must be an ISO 8601 date or date-time')
  .refine(
    (value) => z.iso.datetime({ offset: true }).safeParse(value).success || z.iso.date().safeParse(value).success,
    'must be an ISO 8601 date or date-time with a time zone, e.g. 2025-01-31T12:00:00Z',
  )
  .transform((value) => new Date(value))
  .refine((date) => {
    const year = date.getUTCFullYear()
    return !Number.isNaN(date.getTime()) && year >= MIN_YEAR && year <= MAX_YEAR
  }, `must be a valid time between ${MIN_YEAR} and ${MAX_YEAR}`)
  .meta({ description: 'ISO 8601 date or date-time with a time zone.', example: '2025-01-31T00:00:00Z' })

/** A comma-separated list (or the parameter repeated), each item checked by `item`. */
export function list<T extends z.ZodType<unknown, string>>(item: T, what: string) {
  return z
    .union([z.string(), z.array(z.string()).max(MAX_LIST_ITEMS)])
    .transform((value) => (Array.isArray(value) ? value : [value]).flatMap((part) => part.split(',')))
    .pipe(z.array(item).min(1, `must name at least one ${what}`).max(MAX_LIST_ITEMS, `may name at most ${MAX_LIST_ITEMS} ${what}s`))
    .transform((items) => [...new Set(items as z.output<T>[])])
}

export const statuses = list(z.enum(STATUSES, `must be one of ${STATUSES.join(', ')}`), 'status')
  .transform((items) => items as Status[])
  .meta({ description: 'Comma-separated statuses: pending, confirmed, finalized. Default: all.', example: 'confirmed,finalized' })

export const includeRemoved = z
  .enum(['true', 'false', '1', '0'], 'must be true or false')
  .transform((value) => value === 'true' || value === '1')
  .meta({ description: 'Also return rows orphaned by a reorg or dropped while pending. Default false.' })

export const limit = z
  .string()
  .regex(/^[0-9]{1,4}$/, `must be an integer from 1 to ${MAX_LIMIT}`)
  .transform(Number)
  .refine((value) => value >= 1 && value <= MAX_LIMIT, `must be an integer from 1 to ${MAX_LIMIT}`)
  .meta({ description: `Page size, 1 to ${MAX_LIMIT}. Default ${DEFAULT_LIMIT}.`, example: '100' })

export const statusSchema = z.enum(STATUSES)

export const isoTime = z.string().meta({ description: 'ISO 8601 date-time, UTC.', example: '2025-01-31T12:00:00.000Z' })

export const timestampMs = z.number().int().nullable().meta({
  description: 'Block time in milliseconds since the Unix epoch, as the node served it (timestampMs); null where it serves none.',
  example: 1_738_324_800_200,
})

/** Refuses an inverted range (`from` after `to`); either end may be open. */
export function checkRange(from: number | undefined, to: number | undefined, fromName: string, toName: string): void {
  if (from !== undefined && to !== undefined && from > to)
    throw new ApiError(400, 'invalid_range', `${fromName} must not be after ${toName}.`)
}

/** Whether an answer over some blocks may be partial: the open repairs touching them. */
export const coverage = z
  .object({
    complete: z
      .boolean()
      .meta({ description: 'False while a repair is open over the asked blocks: some of their rows may be missing until it closes.' }),
    openRepairs: z
      .array(
        z.object({
          fromBlock: z.number().int(),
          toBlock: z.number().int(),
          reason: z.enum(['reorg', 'orphaned']).meta({ description: 'A reorg at the tip, or blocks found orphaned below it.' }),
          quarantined: z.boolean().meta({
            description: 'Its reads kept failing: no longer retried until the blocks are marked again (see codetrail_repairs_quarantined).',
          }),
        }),
      )
      .meta({ description: 'Block ranges being read again after a reorg or orphan mark (at most 100), oldest block first.' }),
  })
  .meta({
    id: 'Coverage',
    description: 'Whether the index holds every block of the asked range (fromBlock..toBlock, the whole chain when open).',
  })

/** The `coverage` field of an answer over these repairs. */
export const coverageOf = (openRepairs: z.output<typeof coverage>['openRepairs']): z.output<typeof coverage> => ({
  complete: openRepairs.length === 0,
  openRepairs,
})
