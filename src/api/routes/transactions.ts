import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { requestedChain, type ApiContext } from '../context.js'
import { ApiError } from '../errors.js'
import { getTransactionAttribution } from '../../store/reads/index.js'
import { REGISTRY_UNVERIFIED_REASONS } from '../../store/schema.js'
import { chainIdParam, errorResponses, hash, isoTime, statusSchema, timestampMs } from '../schemas.js'

const suffix = z
  .object({
    schemaId: z.number().int().nullable().meta({ description: 'ERC-8021 schema id; null when unreadable.' }),
    codes: z.array(z.string()).meta({ description: 'Valid codes of the suffix, in order; empty when malformed.' }),
    registry: z
      .object({
        address: z.string(),
        chainId: z.string().meta({ description: 'Decimal chain id of the registry.' }),
        verified: z.boolean().nullable().meta({
          description:
            "Whether every code is registered there (from the registry's indexed events where its chain indexes it, else `isRegistered` on that chain's node); null when unknown.",
        }),
        unverifiedReason: z.enum(REGISTRY_UNVERIFIED_REASONS).nullable().meta({
          description:
            "Why `verified` is null: `chain_not_configured` (the registry's chain is not indexed here), `node_error` (its node did not answer; asked again later), `invalid_answer` (no registry answered at that address; asked again later), `registry_reorg` (a reorg of the registry's chain removed a registration it was verified against; asked again). Null when `verified` is known.",
        }),
      })
      .nullable()
      .meta({ description: 'Schema 1: the custom code registry.' }),
    cbor: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: 'Schema 2: every CBOR field (app, wallet, service codes, registries, metadata).' }),
    malformedReason: z.string().nullable().meta({ description: 'Why the suffix could not be read; null when it was.' }),
  })
  .meta({ id: 'Erc8021Suffix' })

const match = z.object({
  userOpHash: z
    .string()
    .nullable()
    .meta({ description: 'The user operation whose callData carried the code; null for the transaction itself.' }),
  sender: z.string(),
  builderCode: z.string(),
  walletAddress: z.string().nullable().meta({ description: 'Wallet that registered the code here; null when not registered here.' }),
  schemaId: z.number().int(),
  codes: z.array(z.string()),
  status: statusSchema,
  removed: z.boolean(),
})

const transactionAttribution = z
  .object({
    chainId: z.number().int(),
    hash: z.string(),
    blockNumber: z.number().int(),
    blockHash: z.string(),
    blockTimestamp: isoTime,
    blockTimestampMs: timestampMs,
    transactionIndex: z.number().int(),
    from: z.string(),
    to: z.string().nullable(),
    inputSize: z.number().int().meta({ description: 'Calldata size in bytes.' }),
    gasUsed: z.number().int().nullable(),
    userOperations: z.number().int().meta({ description: 'ERC-4337 user operations found in the calldata.' }),
    status: statusSchema,
    removed: z.boolean(),
    suffix: suffix.nullable().meta({ description: "The transaction's own ERC-8021 suffix; null when its calldata has none." }),
    attributions: z.array(match).meta({ description: 'Codes matched from the transaction and its user operations.' }),
  })
  .meta({ id: 'TransactionAttribution' })

/** `GET /v1/transactions/{hash}/attribution`. */
export const transactionRoutes: FastifyPluginAsyncZod<ApiContext> = async (app, { db, ...served }) => {
  app.get(
    '/v1/transactions/:hash/attribution',
    {
      schema: {
        tags: ['attributions'],
        operationId: 'getTransactionAttribution',
        summary: "A transaction's decoded ERC-8021 suffix and matched builder codes",
        description: 'A transaction hash means something on one chain: where the deployment indexes several, name it with chainId.',
        params: z.strictObject({ hash }),
        querystring: z.strictObject({ chainId: chainIdParam.optional() }),
        response: { 200: transactionAttribution, ...errorResponses(400, 404, 429, 503) },
      },
    },
    async (request) => {
      const chainId = requestedChain(served, request.query.chainId, { required: true })
      const found = await getTransactionAttribution(db, chainId, request.params.hash)
      if (!found) throw new ApiError(404, 'not_found', `Transaction ${request.params.hash} is not indexed.`)
      const { transaction: tx, matches } = found
      return {
        chainId,
        hash: tx.hash,
        blockNumber: tx.blockNumber,
        blockHash: tx.blockHash,
        blockTimestamp: tx.blockTimestamp,
        blockTimestampMs: tx.blockTimestampMs,
        transactionIndex: tx.transactionIndex,
        from: tx.fromAddress,
        to: tx.toAddress,
        inputSize: tx.inputSize,
        gasUsed: tx.gasUsed,
        userOperations: tx.userOperations,
        status: tx.status,
        removed: tx.removed,
        suffix: tx.hasSuffix
          ? {
              schemaId: tx.schemaId,
              codes: tx.codes ?? [],
              registry:
                tx.registryAddress !== null && tx.registryChainId !== null
                  ? {
                      address: tx.registryAddress,
                      chainId: tx.registryChainId,
                      verified: tx.registryVerified,
                      unverifiedReason: tx.registryVerified === null ? tx.registryUnverifiedReason : null,
                    }
                  : null,
              cbor: (tx.cbor as Record<string, unknown> | null) ?? null,
              malformedReason: tx.malformedReason,
            }
          : null,
        attributions: matches.map((m) => ({
          userOpHash: m.userOpHash === '' ? null : m.userOpHash,
          sender: m.sender,
          builderCode: m.builderCode,
          walletAddress: m.walletAddress,
          schemaId: m.schemaId,
          codes: m.codes,
          status: m.status,
          removed: m.removed,
        })),
      }
    },
  )
}
