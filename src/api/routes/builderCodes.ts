import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { getTransactionCount } from '../../rpc/index.js'
import type { Database } from '../../store/index.js'
import type { ApiContext } from '../context.js'
import { ApiError } from '../errors.js'
import { countWalletAttributions, findBuilderCode, findBuilderCodeByWallet } from '../../store/reads/index.js'
import { builderCode, errorResponses, isoTime, walletAddress } from '../schemas.js'
import { registryRecord } from './attributions.js'

/** A slow node must not hold a registration lookup for long; the nonces are then null. */
const NONCE_TIMEOUT_MS = 2_000

const registration = z
  .object({
    builderCode: builderCode,
    walletAddress: z.string().meta({ description: 'The wallet, lowercase.', example: '0xd8da6bf26964af9d7eed9e03e53415d37aa96045' }),
  })
  .meta({ id: 'BuilderCodeRegistration' })

const coverageSide = z.object({
  transactions: z
    .number()
    .int()
    .nullable()
    .meta({ description: "The wallet's transaction count (nonce) at this block tag; null when the node did not answer." }),
  attributed: z.number().int().meta({ description: "The wallet's indexed transactions and user operations carrying its own code." }),
})

const builderCodeRecord = z
  .object({
    builderCode: builderCode,
    walletAddress: z.string(),
    createdAt: isoTime,
    source: z.enum(['local', 'upstream']).meta({ description: 'local: derived here; upstream: issued by BUILDER_API_URL.' }),
    coverage: z
      .object({
        latest: coverageSide.meta({ description: 'Mined state: nonce at latest vs confirmed and finalized attributions.' }),
        pending: coverageSide.meta({ description: 'Including pre-confirmed state: pending nonce vs every attribution not removed.' }),
      })
      .meta({ description: 'How many of the wallet’s transactions carry its code.' }),
  })
  .meta({ id: 'BuilderCodeRecord' })

const knownCode = z
  .object({
    builderCode: builderCode,
    registered: z.literal(true).meta({ description: 'Known from at least one source.' }),
    source: z.enum(['registry', 'api', 'local']).meta({
      description:
        'registry: on the BuilderCodes registry (wins when several know it); api: issued by BUILDER_API_URL; local: derived here.',
    }),
    walletAddress: z
      .string()
      .nullable()
      .meta({ description: 'Wallet the code was issued to through the registration API; null for a code known only on-chain.' }),
    createdAt: isoTime.nullable().meta({ description: 'When the code was issued through the API; null for a code known only on-chain.' }),
    registry: registryRecord,
  })
  .meta({ id: 'BuilderCode' })

/** Both spellings Base's docs use (`walletAddress`, `wallet_address`), read as `walletAddress`, so its errors are the same. */
const registrationBody = z.preprocess((body) => {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('wallet_address' in body) || 'walletAddress' in body)
    return body
  const { wallet_address: address, ...rest } = body as Record<string, unknown>
  return { walletAddress: address, ...rest }
}, z.strictObject({ walletAddress }))

/** `POST /v1/agents/builder-codes`, `GET /v1/agents/builder-codes/{walletAddress}` and `GET /v1/builder-codes/{code}`. */
export const builderCodeRoutes: FastifyPluginAsyncZod<ApiContext> = async (
  app,
  { db, primaryDb, chainId, rpc, registrar, registrationRateLimit },
) => {
  // A replica may not have replayed a registration made just now: a miss there is asked of the primary.
  const readOwnWrite = async <T>(read: (from: Database) => Promise<T | null | undefined>) =>
    (await read(db)) ?? (db === primaryDb ? null : await read(primaryDb))

  app.post(
    '/v1/agents/builder-codes',
    {
      ...(registrationRateLimit && { config: { rateLimit: registrationRateLimit } }),
      schema: {
        tags: ['builder codes'],
        operationId: 'registerBuilderCode',
        summary: 'Register a wallet and get its builder code',
        description:
          'Idempotent: the same wallet, in any letter case, always gets the same code. With BUILDER_API_URL set, the code comes from that service (502 upstream_error when it fails).',
        body: registrationBody,
        response: { 200: registration, ...errorResponses(400, 413, 415, 429, 502, 503) },
      },
    },
    async (request) => {
      const record = await registrar.register(request.body.walletAddress)
      return { builderCode: record.builderCode, walletAddress: record.walletAddress }
    },
  )

  app.get(
    '/v1/agents/builder-codes/:walletAddress',
    {
      schema: {
        tags: ['builder codes'],
        operationId: 'getBuilderCode',
        summary: "A wallet's builder code and how many of its transactions carry it",
        params: z.strictObject({ walletAddress }),
        querystring: z.strictObject({}),
        response: { 200: builderCodeRecord, ...errorResponses(400, 404, 429, 503) },
      },
    },
    async (request) => {
      const wallet = request.params.walletAddress
      const record = await readOwnWrite((from) => findBuilderCodeByWallet(from, chainId, wallet))
      if (!record) throw new ApiError(404, 'not_found', `No builder code is registered for ${wallet}.`)
      const [counts, nonces] = await Promise.all([
        countWalletAttributions(db, { chainId, walletAddress: wallet, builderCode: record.builderCode }),
        Promise.all(
          (['latest', 'pending'] as const).map((tag) =>
            rpc ? getTransactionCount(rpc, wallet, tag, { timeoutMs: NONCE_TIMEOUT_MS }).catch(() => null) : null,
          ),
        ),
      ])
      return {
        builderCode: record.builderCode,
        walletAddress: record.walletAddress,
        createdAt: record.createdAt.toISOString(),
        source: record.source,
        coverage: {
          latest: { transactions: nonces[0] ?? null, attributed: counts.confirmed },
          pending: { transactions: nonces[1] ?? null, attributed: counts.confirmed + counts.pending },
        },
      }
    },
  )

  app.get(
    '/v1/builder-codes/:code',
    {
      schema: {
        tags: ['builder codes'],
        operationId: 'getBuilderCodeRecord',
        summary: 'A builder code from any source: the BuilderCodes registry, the upstream API or issued here',
        params: z.strictObject({ code: builderCode }),
        querystring: z.strictObject({}),
        response: { 200: knownCode, ...errorResponses(400, 404, 429, 503) },
      },
    },
    async (request) => {
      const code = request.params.code
      const found = await readOwnWrite((from) => findBuilderCode(from, chainId, code))
      if (!found) throw new ApiError(404, 'not_found', `No source knows the builder code ${code}.`)
      return {
        builderCode: code,
        registered: true as const,
        source: found.source,
        walletAddress: found.walletAddress,
        createdAt: found.createdAt?.toISOString() ?? null,
        registry: found.registry && { ...found.registry, registeredAt: found.registry.registeredAt.toISOString() },
      }
    },
  )
}
