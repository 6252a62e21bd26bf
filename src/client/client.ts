/** A small client for agents: register a wallet and read its builder code from a codetrail API. */
import createClient from 'openapi-fetch'
import type { components, paths } from './openapi.js'

export type BuilderCodeRegistration = components['schemas']['BuilderCodeRegistration']
export type BuilderCodeRecord = components['schemas']['BuilderCodeRecord']

/** A non-2xx answer: the HTTP status and the API's error code and message. */
export class BuilderCodeClientError extends Error {
  override name = 'BuilderCodeClientError'
  readonly status: number
  readonly code: string

  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** The body of a 2xx answer to an `openapi-fetch` call; any other answer throws a {@link BuilderCodeClientError}. */
export async function answer<T>(request: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await request
  if (response.ok) return data as T
  const problem = (error as { error?: { code?: string; message?: string } } | undefined)?.error
  throw new BuilderCodeClientError(
    response.status,
    problem?.code ?? 'http_error',
    problem?.message ?? `codetrail answered HTTP ${response.status}`,
  )
}

export type BuilderCodeClient = {
  /** The wallet's code, registering it on first use; the same wallet always gets the same code. */
  register(walletAddress: string): Promise<BuilderCodeRegistration>
  /** The wallet's record and coverage, or `null` when it has no code. */
  get(walletAddress: string): Promise<BuilderCodeRecord | null>
}

/**
 * @example
 * const codes = createBuilderCodeClient('http://127.0.0.1:8080')
 * const { builderCode } = await codes.register('0xd8da6bf26964af9d7eed9e03e53415d37aa96045')
 */
export function createBuilderCodeClient(baseUrl: string, { fetch: fetchFn = fetch }: { fetch?: typeof fetch } = {}): BuilderCodeClient {
  const client = createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ''),
    headers: { accept: 'application/json' },
    fetch: fetchFn,
  })

  return {
    register: (walletAddress) => answer(client.POST('/v1/agents/builder-codes', { body: { walletAddress } })),
    async get(walletAddress) {
      try {
        return await answer(client.GET('/v1/agents/builder-codes/{walletAddress}', { params: { path: { walletAddress } } }))
      } catch (error) {
        if (error instanceof BuilderCodeClientError && error.status === 404) return null
        throw error
      }
    },
  }
}
