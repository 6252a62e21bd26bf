import type { Address } from 'viem'
import { z } from 'zod'
import { ATTRIBUTION_CODE_PATTERN, deriveBuilderCode } from '../attribution/index.js'
import { insertBuilderCode, type BuilderCodeRecord, type Database } from '../store/index.js'
import { findBuilderCodeByWallet } from '../store/reads/index.js'
import { ApiError } from './errors.js'

/** Collisions in a 36^8 space are rare; this many in a row means something else is wrong. */
const MAX_DERIVATION_ATTEMPTS = 32
const DEFAULT_UPSTREAM_TIMEOUT_MS = 10_000
export const UPSTREAM_PATH = '/v1/agents/builder-codes'

/** The upstream answer in either spelling (`builderCode` or the older `builder_code`). */
const upstreamAnswer = z
  .object({
    builderCode: z.string().optional(),
    builder_code: z.string().optional(),
    walletAddress: z.string().optional(),
    wallet_address: z.string().optional(),
  })
  .transform((body) => ({ builderCode: body.builderCode ?? body.builder_code, walletAddress: body.walletAddress ?? body.wallet_address }))

export type CreateBuilderCodeRegistrarParameters = {
  db: Database
  chainId: number
  /** `BUILDER_API_URL`; unset: codes are derived here. */
  builderApiUrl?: string
  upstreamTimeoutMs?: number
}

/**
 * Registers wallets: returns the stored code when the wallet has one, else derives one
 * ({@link deriveBuilderCode}, next attempt on a collision with another wallet's code) or asks the
 * upstream service, and stores it. The database's unique keys settle concurrent registrations.
 */
export function createBuilderCodeRegistrar({
  db,
  chainId,
  builderApiUrl,
  upstreamTimeoutMs = DEFAULT_UPSTREAM_TIMEOUT_MS,
}: CreateBuilderCodeRegistrarParameters) {
  async function registerLocal(walletAddress: Address): Promise<BuilderCodeRecord> {
    for (let attempt = 0; attempt < MAX_DERIVATION_ATTEMPTS; attempt++) {
      const builderCode = deriveBuilderCode(walletAddress, attempt)
      const inserted = await insertBuilderCode(db.$client, { chainId, builderCode, walletAddress, source: 'local' })
      if (inserted) return inserted
      // Either this wallet was registered concurrently, or another wallet holds the code.
      const existing = await findBuilderCodeByWallet(db, chainId, walletAddress)
      if (existing) return existing
    }
    throw new Error(`no free builder code for ${walletAddress} after ${MAX_DERIVATION_ATTEMPTS} attempts`)
  }

  async function askUpstream(url: string, walletAddress: Address): Promise<string> {
    let response: Response
    try {
      response = await fetch(`${url}${UPSTREAM_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ walletAddress }),
        signal: AbortSignal.timeout(upstreamTimeoutMs),
      })
    } catch (error) {
      throw new ApiError(502, 'upstream_error', `The builder code service could not be reached (${networkReason(error)}).`, {
        cause: error,
      })
    }
    if (!response.ok) {
      await response.body?.cancel()
      throw new ApiError(502, 'upstream_error', `The builder code service answered HTTP ${response.status}.`)
    }
    const body = upstreamAnswer.safeParse(await response.json().catch(() => undefined))
    const answer = body.success ? body.data : undefined
    if (!answer?.builderCode || !ATTRIBUTION_CODE_PATTERN.test(answer.builderCode))
      throw new ApiError(502, 'upstream_error', `The builder code service answered HTTP ${response.status} without a valid builder code.`)
    if (answer.walletAddress !== undefined && answer.walletAddress.toLowerCase() !== walletAddress)
      throw new ApiError(502, 'upstream_error', `The builder code service answered HTTP ${response.status} for another wallet.`)
    return answer.builderCode
  }

  async function registerUpstream(url: string, walletAddress: Address): Promise<BuilderCodeRecord> {
    const builderCode = await askUpstream(url, walletAddress)
    const inserted = await insertBuilderCode(db.$client, { chainId, builderCode, walletAddress, source: 'upstream' })
    if (inserted) return inserted
    const existing = await findBuilderCodeByWallet(db, chainId, walletAddress)
    if (existing) return existing
    throw new ApiError(
      502,
      'upstream_error',
      `The builder code service answered with ${builderCode}, which another wallet already holds here.`,
    )
  }

  return {
    /** The wallet's code, registering it on first use; `walletAddress` must be lowercase. */
    async register(walletAddress: Address): Promise<BuilderCodeRecord> {
      const existing = await findBuilderCodeByWallet(db, chainId, walletAddress)
      if (existing) return existing
      return builderApiUrl ? registerUpstream(builderApiUrl, walletAddress) : registerLocal(walletAddress)
    },
  }
}

export type BuilderCodeRegistrar = ReturnType<typeof createBuilderCodeRegistrar>

function networkReason(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out'
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined
  return typeof cause?.code === 'string' ? cause.code : 'network error'
}
