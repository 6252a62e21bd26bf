/** The JSON API of this same origin, as the dashboard reads it. */

export type Status = 'pending' | 'confirmed' | 'finalized'

export type SyncStatus = {
  chainId: number
  headBlock: number | null
  indexedBlock: number | null
  indexedAt: string | null
  finalizedBlock: number | null
  lagBlocks: number | null
  lagSeconds: number | null
  /** Null on a chain without pre-confirmations. */
  pendingLogsPerSecond: number | null
  reorgsLastHour: number
  /** Attributed transactions whose gas used the range jobs' follow-up has not filled yet. */
  gasUsedMissing: number
  /** What is kept of raw history: RETENTION_LOGS_DAYS (null: everything) and the oldest log's block time. */
  retention: { logsDays: number | null; logsSince: string | null }
  blockTimeMs: number | null
  preconfirmations: { enabled: boolean; source: 'probe' | 'config' } | null
  /** The read replica the API reads from (`DATABASE_READ_URL`); null without one. */
  readReplica: { state: 'serving' | 'lagging' | 'down'; lagMs: number | null; maxLagMs: number; checkedAt: string | null } | null
}

export type Counts = { attributions: number; confirmed: number; pending: number; distinctSenders: number; gasUsed: string }

/** Attributions of a code per ERC-8021 role (schema 2: app, wallet, service; null for schemas 0 and 1). */
export type RoleCounts = { role: string | null; attributions: number; confirmed: number; pending: number }

export type LeaderboardItem = Counts & { builderCode: string; walletAddress: string | null; roles: RoleCounts[] }
export type Leaderboard = { since: string; until: string; items: LeaderboardItem[] }

export type Stats = {
  builderCode: string
  walletAddress: string | null
  /** From the on-chain registry (BUILDER_CODES_REGISTRY), where it knows the code. */
  registry: { tokenId: string; owner: string | null; payoutAddress: string | null; registeredBlock: number; registeredAt: string } | null
  interval: 'hour' | 'day'
  since: string
  until: string
  total: Counts & { roles: RoleCounts[] }
  buckets: (Counts & { start: string })[]
}

export type Attribution = {
  txHash: string
  userOpHash: string | null
  blockNumber: number
  blockTimestamp: string
  /** The node's milliseconds; null where it serves none. */
  blockTimestampMs?: number | null
  from: string
  sender: string
  builderCode: string
  walletAddress: string | null
  schemaId: number
  status: Status
  removed: boolean
  gasUsed: number | null
  role?: string | null
}

export type Registration = { builderCode: string; walletAddress: string }

/** An answer other than 2xx, with the API's `{"error":{"code","message"}}` when it sent one. */
export class ApiRequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

async function answer<T>(response: Response): Promise<T> {
  const body: unknown = await response.json().catch(() => null)
  if (response.ok) return body as T
  const error = (body as { error?: { code?: string; message?: string } } | null)?.error
  throw new ApiRequestError(response.status, error?.code ?? 'http_error', error?.message ?? `The API answered ${response.status}.`)
}

export async function getJson<T>(path: string, query: Record<string, string | number | boolean | undefined> = {}, signal?: AbortSignal): Promise<T> {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value))
  const search = params.size > 0 ? `?${params}` : ''
  return answer<T>(await fetch(`${path}${search}`, { headers: { accept: 'application/json' }, signal }))
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  return answer<T>(await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) }))
}

export const codePath = (code: string) => `/codes/${encodeURIComponent(code)}`
export const transactionPath = (hash: string) => `/v1/transactions/${hash}/attribution`
