import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { LRUCache } from 'lru-cache'
import { z } from 'zod'
import { ATTRIBUTION_ROLES } from '../../attribution/index.js'
import { requestedChain, requestedChains, type ApiContext } from '../context.js'
import { decodeCursor, encodeCursor } from '../cursor.js'
import { ApiError } from '../errors.js'
import { sendJsonText } from '../serializer.js'
import {
  builderCodeStatsReport,
  INTERVAL_MS,
  leaderboard,
  listAttributions,
  roundToBuckets,
  type LeaderboardParameters,
  type LeaderboardRow,
  type StatsInterval,
} from '../../store/reads/index.js'
import {
  chainIdParam,
  chainsParam,
  blockNumber,
  builderCode,
  checkRange,
  coverage,
  coverageOf,
  DEFAULT_LIMIT,
  errorResponses,
  includeRemoved,
  isBlockNumber,
  isCode,
  isIsoMilliseconds,
  isLowerHash,
  isoTime,
  limit,
  statuses,
  statusSchema,
  timestamp,
  timestampMs,
  walletAddress,
} from '../schemas.js'

/** Cursors carry the block time of the page's last row (the list's order), then its key. */
const CURSOR_VERSION = 'a3'
/** Cursors written before the list was ordered by block time: the key alone, continued in block number order. */
const KEY_CURSOR_VERSION = 'a2'
const isUserOpHash = (value: unknown): value is string => value === '' || isLowerHash(value)
const isRoleKey = (value: unknown): value is string => value === '' || ATTRIBUTION_ROLES.some((role) => role === value)
const roleSchema = z.enum(ATTRIBUTION_ROLES).nullable().meta({
  description: 'Schema 2: app (a), wallet (w) or service (s); x402 uses them for seller, facilitator and client. Null for schemas 0 and 1.',
})
/** Buckets one stats answer may hold: ~14 months of hours, ~27 years of days. */
export const MAX_STATS_BUCKETS = 10_000
const DEFAULT_STATS_SPAN_MS: Record<StatsInterval, number> = { hour: 7 * INTERVAL_MS.day, day: 30 * INTERVAL_MS.day }
const DEFAULT_LEADERBOARD_SPAN_MS = INTERVAL_MS.day
const DEFAULT_LEADERBOARD_LIMIT = 20
/**
 * How long one computed leaderboard answers every request for the same range and limit. Ranking sums
 * every code's hourly buckets of the range (at 1,000 codes over 24 hours, about 6 ms of PostgreSQL),
 * so dashboards polling it cost one ranking a second, not one per viewer.
 */
export const LEADERBOARD_CACHE_MS = 1_000
/** Leaderboards (range and limit) kept at once. */
const LEADERBOARD_CACHE_ENTRIES = 64

const attributionCursor = z
  .string()
  .transform((token, ctx) => {
    const keyParts = [isBlockNumber, isLowerHash, isUserOpHash, isCode, isRoleKey] as const
    const timed = decodeCursor(token, CURSOR_VERSION, [isIsoMilliseconds, ...keyParts])
    if (timed !== null) {
      const [time, ...key] = timed
      return { time, key }
    }
    const key = decodeCursor(token, KEY_CURSOR_VERSION, keyParts)
    if (key === null) {
      ctx.addIssue({ code: 'custom', message: 'is not a cursor returned by this endpoint' })
      return z.NEVER
    }
    return { time: undefined, key }
  })
  .meta({ description: 'nextCursor of the previous page.' })

const attributionItem = z
  .object({
    chainId: z.number().int(),
    txHash: z.string().meta({ description: 'Transaction carrying the suffix (the bundle transaction for a user operation).' }),
    userOpHash: z.string().nullable().meta({ description: 'ERC-4337 user operation hash; null for a plain transaction.' }),
    blockNumber: z.number().int(),
    blockHash: z.string(),
    blockTimestamp: isoTime,
    blockTimestampMs: timestampMs,
    from: z.string().meta({ description: 'Transaction sender (the bundler for a user operation).' }),
    to: z.string().nullable(),
    sender: z.string().meta({ description: "The user operation's sender, else the transaction sender." }),
    builderCode: z.string(),
    role: roleSchema,
    registry: z
      .object({ address: z.string(), chainId: z.string().meta({ description: 'Decimal: schema 1 allows up to 32 bytes.' }) })
      .nullable()
      .meta({ description: 'The registry the suffix names for this code (schema 1, or schema 2’s r for the role).' }),
    walletAddress: z.string().nullable().meta({ description: 'Wallet that registered the code here; null when not registered here.' }),
    schemaId: z.number().int().meta({ description: 'ERC-8021 schema id (0, 1 or 2).' }),
    codes: z.array(z.string()).meta({ description: 'Every code of the suffix, in suffix order.' }),
    gasUsed: z.number().int().nullable(),
    status: statusSchema,
    removed: z.boolean(),
  })
  .meta({ id: 'Attribution' })

const attributionPage = z
  .object({
    items: z.array(attributionItem),
    nextCursor: z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last page.' }),
    coverage,
  })
  .meta({ id: 'AttributionPage' })

const statsCounts = z.object({
  attributions: z.number().int().meta({ description: 'Attributed transactions and user operations, not removed.' }),
  confirmed: z.number().int().meta({ description: 'Of which confirmed or finalized.' }),
  pending: z.number().int().meta({ description: 'Of which still pre-confirmed.' }),
  distinctSenders: z.number().int(),
  gasUsed: z.string().meta({ description: 'Gas used by the attributed transactions where known, as a decimal string.' }),
})

const roleCounts = z
  .array(
    z.object({
      role: roleSchema,
      attributions: z.number().int(),
      confirmed: z.number().int(),
      pending: z.number().int(),
    }),
  )
  .meta({
    description:
      'The attributions split by the role the code held (a code in two roles of one suffix counts in each); only roles with rows.',
  })

/** What the BuilderCodes registry says of a code; shared with the code page. */
export const registryRecord = z
  .object({
    tokenId: z.string().meta({ description: 'ERC-721 token id, decimal.' }),
    owner: z.string().nullable().meta({ description: 'Current owner of the token; null when burnt.' }),
    payoutAddress: z.string().nullable(),
    registeredBlock: z.number().int(),
    registeredAt: isoTime,
  })
  .nullable()
  .meta({
    id: 'RegistryCode',
    description:
      'The code on the BuilderCodes registry (BUILDER_CODES_REGISTRY), as its logs that are not removed say; null when not there.',
  })

const builderCodeStatsAnswer = z
  .object({
    builderCode: z.string(),
    walletAddress: z.string().nullable(),
    registry: registryRecord,
    interval: z.enum(['hour', 'day']),
    since: isoTime.meta({ description: 'Start of the first bucket: the requested since rounded down.' }),
    until: isoTime.meta({ description: 'End of the last bucket (exclusive): the requested until rounded up.' }),
    total: z.object({ ...statsCounts.shape, roles: roleCounts }),
    buckets: z.array(
      z.object({ start: isoTime.meta({ description: 'Start of the UTC hour or day.' }), ...statsCounts.shape, roles: roleCounts }),
    ),
  })
  .meta({ id: 'BuilderCodeStats' })

const leaderboardAnswer = z
  .object({
    since: isoTime.meta({ description: 'The requested since rounded down to a UTC hour.' }),
    until: isoTime.meta({ description: 'The requested until rounded up to a UTC hour (exclusive).' }),
    items: z.array(z.object({ builderCode: z.string(), walletAddress: z.string().nullable(), ...statsCounts.shape, roles: roleCounts })),
  })
  .meta({ id: 'Leaderboard' })

/**
 * `since`/`until` of a request (defaults: until = now, since = `defaultSpanMs` earlier) widened to whole
 * buckets, refused when inverted or longer than {@link MAX_STATS_BUCKETS} buckets.
 */
function bucketRange(interval: StatsInterval, query: { since?: Date; until?: Date }, defaultSpanMs: number) {
  const requestedUntil = query.until ?? new Date()
  const requestedSince = query.since ?? new Date(requestedUntil.getTime() - defaultSpanMs)
  checkRange(requestedSince.getTime(), requestedUntil.getTime(), 'since', 'until')
  const range = roundToBuckets(interval, requestedSince, requestedUntil)
  if ((range.until.getTime() - range.since.getTime()) / INTERVAL_MS[interval] > MAX_STATS_BUCKETS)
    throw new ApiError(
      400,
      'range_too_large',
      `since to until spans more than ${MAX_STATS_BUCKETS} ${interval}s; narrow it or use a larger interval.`,
    )
  return range
}

/**
 * Writes whole-hour UTC instants (bucket starts, in order) as ISO 8601: the date by a `Date` once a day,
 * the hour appended. A `toISOString` per bucket cost about 0.9 µs, 0.15 ms for a week by hour.
 */
function bucketStartWriter(): (startMs: number) => string {
  let day = Number.NaN
  let date = ''
  return (startMs) => {
    const startDay = Math.floor(startMs / INTERVAL_MS.day)
    const hour = (startMs - startDay * INTERVAL_MS.day) / INTERVAL_MS.hour
    if (!Number.isInteger(hour)) return new Date(startMs).toISOString()
    if (startDay !== day) {
      day = startDay
      date = new Date(startDay * INTERVAL_MS.day).toISOString().slice(0, 10)
    }
    return `${date}T${hour < 10 ? '0' : ''}${hour}:00:00.000Z`
  }
}

/** `GET /v1/attributions`, `GET /v1/builder-codes/{code}/stats` and `GET /v1/leaderboard`. */
export const attributionRoutes: FastifyPluginAsyncZod<ApiContext> = async (app, { db, ...served }) => {
  // forceFetch() also makes concurrent requests for the same leaderboard wait for one ranking.
  const leaderboards = new LRUCache<string, LeaderboardRow[], LeaderboardParameters>({
    max: LEADERBOARD_CACHE_ENTRIES,
    ttl: LEADERBOARD_CACHE_MS,
    fetchMethod: (_key, _stale, { context }) => leaderboard(db, context),
  })

  app.get(
    '/v1/attributions',
    {
      schema: {
        tags: ['attributions'],
        operationId: 'listAttributions',
        summary: 'Attributed transactions and user operations, newest first',
        description:
          'Newest first: by block time, then block number (with fromBlock or toBlock, by block number: the two orders differ only for rows of orphaned forks). Keyset-paginated: follow nextCursor; rows inserted meanwhile never make a page skip or repeat a row. A row that moves to another block meanwhile (above the finalized block only: a pending row sealed in a later block, a transaction mined again after a reorg) can be missed or repeated: bound toBlock by finalizedBlock of /v1/status for a walk where none can. walletAddress selects the code that wallet registered here.',
        querystring: z.strictObject({
          chainId: chainIdParam.optional(),
          builderCode: builderCode.optional(),
          walletAddress: walletAddress.optional(),
          fromBlock: blockNumber.optional(),
          toBlock: blockNumber.optional(),
          since: timestamp.optional().meta({ description: 'Block time at or after (ISO 8601).' }),
          until: timestamp.optional().meta({ description: 'Block time before (ISO 8601).' }),
          status: statuses.optional(),
          role: z
            .enum(ATTRIBUTION_ROLES, 'must be app, wallet or service')
            .optional()
            .meta({ description: 'Only codes in this schema-2 role.' }),
          includeRemoved: includeRemoved.optional(),
          limit: limit.optional(),
          cursor: attributionCursor.optional(),
        }),
        response: { 200: attributionPage, ...errorResponses(400, 429, 503) },
      },
    },
    async (request, reply) => {
      const q = request.query
      const chainId = requestedChain(served, q.chainId)
      checkRange(q.fromBlock, q.toBlock, 'fromBlock', 'toBlock')
      checkRange(q.since?.getTime(), q.until?.getTime(), 'since', 'until')
      const pageSize = q.limit ?? DEFAULT_LIMIT
      const { items, end, more, openRepairs } = await listAttributions(db, {
        chainId,
        builderCode: q.builderCode,
        walletAddress: q.walletAddress,
        fromBlock: q.fromBlock,
        toBlock: q.toBlock,
        since: q.since,
        until: q.until,
        statuses: q.status,
        role: q.role,
        includeRemoved: q.includeRemoved ?? false,
        after: q.cursor?.key,
        afterTime: q.cursor?.time,
        limit: pageSize,
      })
      const nextCursor = more && end ? encodeCursor(CURSOR_VERSION, [end.time, ...end.key]) : null
      // The items come as the JSON they are sent as (see listAttributions); the page around them is written here.
      return sendJsonText(
        reply,
        `{"items":[${items.join(',')}],"nextCursor":${JSON.stringify(nextCursor)},"coverage":${JSON.stringify(coverageOf(openRepairs))}}`,
      )
    },
  )

  app.get(
    '/v1/builder-codes/:code/stats',
    {
      schema: {
        tags: ['attributions'],
        operationId: 'getBuilderCodeStats',
        summary: "A builder code's activity per UTC hour or day",
        description:
          `Rows not removed, with block time in [since, until); since is rounded down and until up to whole UTC hours or days, and ` +
          `the answer reports the rounded range. Defaults: until = now, since = 7 days (hour) or 30 days (day) earlier; at most ` +
          `${MAX_STATS_BUCKETS} buckets. Read from a rollup kept in step with every write; only the total distinctSenders of a range ` +
          `that ends before the code's latest attribution is counted from the rows, which is slower. chainId=all sums every chain ` +
          `served (each chain's senders counted apart).`,
        params: z.strictObject({ code: builderCode }),
        querystring: z.strictObject({
          chainId: chainsParam.optional(),
          since: timestamp.optional(),
          until: timestamp.optional(),
          interval: z.enum(['hour', 'day'], 'must be hour or day').optional().meta({ description: 'Bucket size. Default day.' }),
        }),
        response: { 200: builderCodeStatsAnswer, ...errorResponses(400, 429, 503) },
      },
    },
    async (request) => {
      const code = request.params.code
      const chainId = requestedChains(served, request.query.chainId)
      const interval = request.query.interval ?? 'day'
      const { since, until } = bucketRange(interval, request.query, DEFAULT_STATS_SPAN_MS[interval])
      const { stats, roles, walletAddress, registry } = await builderCodeStatsReport(db, {
        chainId,
        builderCode: code,
        interval,
        since,
        until,
      })
      const writeStart = bucketStartWriter()
      return {
        builderCode: code,
        walletAddress,
        registry: registry && { ...registry, registeredAt: registry.registeredAt.toISOString() },
        interval,
        since: since.toISOString(),
        until: until.toISOString(),
        total: { ...stats.total, roles: roles.total },
        buckets: stats.buckets.map(({ start, ...counts }) => ({
          start: writeStart(start),
          ...counts,
          roles: roles.buckets.get(start) ?? [],
        })),
      }
    },
  )

  app.get(
    '/v1/leaderboard',
    {
      schema: {
        tags: ['attributions'],
        operationId: 'getLeaderboard',
        summary: 'The builder codes with the most attributions in a time range',
        description:
          `Codes ordered by attributions not removed with block time in [since, until), rounded to whole UTC hours; each code's ` +
          `counts equal its stats for the same range with interval=hour. Defaults: until = now, since = 24 hours earlier, limit ${DEFAULT_LEADERBOARD_LIMIT}. ` +
          `One ranking answers every request for the same chains, range and limit for ${LEADERBOARD_CACHE_MS / 1000} s. ` +
          `chainId=all ranks the codes by their attributions on every chain served, summed.`,
        querystring: z.strictObject({
          chainId: chainsParam.optional(),
          since: timestamp.optional(),
          until: timestamp.optional(),
          limit: limit.optional(),
        }),
        response: { 200: leaderboardAnswer, ...errorResponses(400, 429, 503) },
      },
    },
    async (request) => {
      const { since, until } = bucketRange('hour', request.query, DEFAULT_LEADERBOARD_SPAN_MS)
      const limit = request.query.limit ?? DEFAULT_LEADERBOARD_LIMIT
      const chainId = requestedChains(served, request.query.chainId)
      const chains = typeof chainId === 'number' ? chainId : chainId.join(',')
      const items = await leaderboards.forceFetch(`${chains}-${since.getTime()}-${until.getTime()}-${limit}`, {
        context: { chainId, since, until, limit },
      })
      return { since: since.toISOString(), until: until.toISOString(), items }
    },
  )
}
