/** A small client for agents: register a wallet and read its builder code from a codetrail API. */

export type BuilderCodeRegistration = { builderCode: string; walletAddress: string }

export type BuilderCodeCoverageSide = { transactions: number | null; attributed: number }

export type BuilderCodeRecord = BuilderCodeRegistration & {
  createdAt: string
  source: 'local' | 'upstream'
  coverage: { latest: BuilderCodeCoverageSide; pending: BuilderCodeCoverageSide }
}

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
  const base = baseUrl.replace(/\/+$/, '')

  async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
    const response = await fetchFn(`${base}${path}`, { ...init, headers: { accept: 'application/json', ...init.headers } })
    const body = (await response.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null
    if (!response.ok)
      throw new BuilderCodeClientError(
        response.status,
        body?.error?.code ?? 'http_error',
        body?.error?.message ?? `codetrail answered HTTP ${response.status}`,
      )
    return body as T
  }

  return {
    register: (walletAddress) =>
      call('/v1/agents/builder-codes', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ walletAddress }),
      }),
    async get(walletAddress) {
      try {
        return await call<BuilderCodeRecord>(`/v1/agents/builder-codes/${encodeURIComponent(walletAddress)}`)
      } catch (error) {
        if (error instanceof BuilderCodeClientError && error.status === 404) return null
        throw error
      }
    },
  }
}
