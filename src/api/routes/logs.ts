import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { requestedChain, type ApiContext } from '../context.js'
import { decodeCursor, encodeCursor } from '../cursor.js'
import { hasLeadingLogFilter, listLogs, logKey, type LogRow } from '../../store/reads/index.js'
import { ApiError } from '../errors.js'
import {
  chainIdParam,
  address,
  blockNumber,
  checkRange,
  coverage,
  coverageOf,
  DEFAULT_LIMIT,
  errorResponses,
  hash,
  includeRemoved,
  isBlockNumber,
  isLowerHash,
  isoTime,
  limit,
  list,
  statuses,
  statusSchema,
  timestampMs,
} from '../schemas.js'

const CURSOR_VERSION = 'l2'
const isIndex = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0

const logCursor = z
  .string()
  .transform((token, ctx) => {
    const key = decodeCursor(token, CURSOR_VERSION, [isBlockNumber, isIndex, isLowerHash, isLowerHash, isIndex])
    if (key === null) {
      ctx.addIssue({ code: 'custom', message: 'is not a cursor returned by this endpoint' })
      return z.NEVER
    }
    return key
  })
  .meta({ description: 'nextCursor of the previous page.' })

const topicFilter = (position: number) =>
  list(hash, 'topic')
    .optional()
    .meta({ description: `Comma-separated values, any of which topic ${position} may equal (eth_getLogs semantics).` })

const logItem = z
  .object({
    chainId: z.number().int(),
    address: z.string(),
    topics: z.array(z.string()),
    data: z.string(),
    blockNumber: z.number().int(),
    blockHash: z.string().meta({ description: '32 zero bytes while the log is pending.' }),
    blockTimestamp: isoTime,
    blockTimestampMs: timestampMs,
    transactionHash: z.string(),
    transactionIndex: z.number().int(),
    logIndex: z.number().int(),
    status: statusSchema,
    removed: z.boolean(),
  })
  .meta({ id: 'Log' })

const logPage = z
  .object({
    items: z.array(logItem),
    nextCursor: z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last page.' }),
    coverage,
  })
  .meta({ id: 'LogPage' })

function toItem(row: LogRow): z.output<typeof logItem> {
  const topics: string[] = []
  for (const topic of [row.topic0, row.topic1, row.topic2, row.topic3]) if (topic !== null) topics.push(topic)
  return {
    chainId: row.chainId,
    address: row.address,
    topics,
    data: row.data,
    blockNumber: row.blockNumber,
    blockHash: row.blockHash,
    blockTimestamp: row.blockTimestamp,
    blockTimestampMs: row.blockTimestampMs,
    transactionHash: row.transactionHash,
    transactionIndex: row.transactionIndex,
    logIndex: row.logIndex,
    status: row.status,
    removed: row.removed,
  }
}

/** `GET /v1/logs`: the index read like `eth_getLogs`, in chain order, keyset-paginated. */
export const logRoutes: FastifyPluginAsyncZod<ApiContext> = async (app, { db, ...served }) => {
  app.get(
    '/v1/logs',
    {
      schema: {
        tags: ['logs'],
        operationId: 'listLogs',
        summary: 'Indexed logs filtered like eth_getLogs, oldest first',
        description:
          'Keyset-paginated: follow nextCursor. topic1–3 filter only with address or topic0 (400 unindexed_filter otherwise): no index leads with them. A pending log that its sealed block places at another height meanwhile can be missed or repeated: bound toBlock by finalizedBlock of /v1/status for a walk where none can.',
        querystring: z.strictObject({
          chainId: chainIdParam.optional(),
          address: list(address, 'address').optional().meta({ description: 'Comma-separated contract addresses.' }),
          topic0: topicFilter(0),
          topic1: topicFilter(1),
          topic2: topicFilter(2),
          topic3: topicFilter(3),
          fromBlock: blockNumber.optional(),
          toBlock: blockNumber.optional(),
          status: statuses.optional(),
          includeRemoved: includeRemoved.optional(),
          limit: limit.optional(),
          cursor: logCursor.optional(),
        }),
        response: { 200: logPage, ...errorResponses(400, 429, 503) },
      },
    },
    async (request) => {
      const q = request.query
      const chainId = requestedChain(served, q.chainId)
      checkRange(q.fromBlock, q.toBlock, 'fromBlock', 'toBlock')
      const topics = [q.topic0, q.topic1, q.topic2, q.topic3]
      // No index leads with topic1–3: alone they would filter history row by row.
      if (!hasLeadingLogFilter({ addresses: q.address, topics }) && topics.some((values) => values !== undefined))
        throw new ApiError(400, 'unindexed_filter', 'topic1, topic2 and topic3 filter only together with address or topic0.')
      const pageSize = q.limit ?? DEFAULT_LIMIT
      const { rows, more, openRepairs } = await listLogs(db, {
        chainId,
        addresses: q.address,
        topics,
        fromBlock: q.fromBlock,
        toBlock: q.toBlock,
        statuses: q.status,
        includeRemoved: q.includeRemoved ?? false,
        after: q.cursor,
        limit: pageSize,
      })
      const last = rows.at(-1)
      return {
        items: rows.map(toItem),
        nextCursor: more && last ? encodeCursor(CURSOR_VERSION, logKey(last)) : null,
        coverage: coverageOf(openRepairs),
      }
    },
  )
}
