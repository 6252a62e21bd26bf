import type { Logger } from '../internal/logger.js'
import type { LogInput } from '../store/index.js'
import { subscribeNewHeads, subscribePendingLogs, type BlockHeader, type PendingLogsFilter } from '../rpc/index.js'
import { sleep } from '../utils/loop.js'
import { redactUrl } from '../utils/redact.js'

/** Notifications that arrive within this window are stored together. */
const FLUSH_MS = 10
/**
 * Transactions whose logs a connection remembers: each flush stores every log seen of a transaction
 * it touches, so ordinals are counted over the whole transaction however its notifications were split
 * across flushes. Past this many the oldest are forgotten (polling fills what that loses), which bounds
 * the memory a stalled database can make the subscriber hold.
 */
const MAX_TRACKED_TRANSACTIONS = 4_096
const RECONNECT_BASE_MS = 250
const RECONNECT_MAX_MS = 10_000

export type PendingLogsSubscriptionParameters = {
  url: string
  filter: PendingLogsFilter
  logger: Logger
  signal: AbortSignal
  /** Stores a batch of pre-confirmed logs (the poller's `store`). */
  onLogs: (logs: LogInput[]) => Promise<unknown>
}

/**
 * Follows `eth_subscribe ["pendingLogs", filter]` on a Base node's WebSocket until `signal` aborts,
 * resubscribing after every drop. Each notification is one log of the newest flashblock; the
 * subscription only cuts latency — the poller still fills what a lagging subscriber misses.
 */
export async function followPendingLogs({ url, filter, logger, signal, onLogs }: PendingLogsSubscriptionParameters): Promise<void> {
  await resubscribing('pendingLogs', url, logger, signal, () => subscribeOnce(url, filter, logger, signal, onLogs))
}

/** Runs `once` (one subscription, resolving when it closes) again after every drop until `signal` aborts, backing off while drops come fast. */
async function resubscribing(name: string, url: string, logger: Logger, signal: AbortSignal, once: () => Promise<void>): Promise<void> {
  let failures = 0
  while (!signal.aborted) {
    const startedAt = Date.now()
    await once().catch((error: Error) => logger.warn({ url: redactUrl(url), reason: error.message }, `${name} subscription failed`))
    if (signal.aborted) break
    failures = Date.now() - startedAt > RECONNECT_MAX_MS ? 1 : failures + 1
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** (failures - 1))
    logger.info({ url: redactUrl(url), delay_ms: delay }, `${name} subscription dropped: resubscribing`)
    await sleep(delay, signal)
  }
}

export type NewHeadsSubscriptionParameters = {
  url: string
  logger: Logger
  signal: AbortSignal
  /** Each announced head, decoded. */
  onHead: (header: BlockHeader) => void
  /** How long the subscription may stay silent (read each check). */
  silentAfterMs: () => number
  /** The newest head seen over HTTP: a silent subscription is reopened only when this moved past what it announced. */
  httpHead: () => number | undefined
}

/**
 * Follows `eth_subscribe ["newHeads"]` until `signal` aborts, resubscribing after every drop. A
 * freshness watchdog closes a subscription that stays open but announces nothing for `silentAfterMs`
 * while the head seen over HTTP moves past the last one it announced; it is then opened again.
 */
export async function followNewHeads({
  url,
  logger,
  signal,
  onHead,
  silentAfterMs,
  httpHead,
}: NewHeadsSubscriptionParameters): Promise<void> {
  await resubscribing('newHeads', url, logger, signal, async () => {
    let lastMessageAt = Date.now()
    let announced = -1
    const subscription = subscribeNewHeads(url, {
      signal,
      onSubscribed: () => (lastMessageAt = Date.now()),
      onResult: (header) => {
        lastMessageAt = Date.now()
        announced = Math.max(announced, header.number)
        onHead(header)
      },
    })
    const watchdog = setInterval(
      () => {
        const head = httpHead()
        if (Date.now() - lastMessageAt > silentAfterMs() && head !== undefined && head > announced) {
          logger.warn(
            { url: redactUrl(url), last_announced: announced, http_head: head },
            'newHeads subscription silent while the head moves: reopening',
          )
          subscription.terminate()
        }
      },
      Math.max(50, Math.min(1_000, silentAfterMs() / 4)),
    )
    try {
      await subscription.closed
    } finally {
      clearInterval(watchdog)
    }
  })
}

async function subscribeOnce(
  url: string,
  filter: PendingLogsFilter,
  logger: Logger,
  signal: AbortSignal,
  onLogs: (logs: LogInput[]) => Promise<unknown>,
): Promise<void> {
  const pending = createPendingLogBuffer(MAX_TRACKED_TRANSACTIONS)
  let flushing: Promise<unknown> | undefined
  const flush = () => {
    if (flushing || !pending.hasChanges()) return
    flushing = onLogs(pending.take())
      .catch((error: Error) => logger.warn({ reason: error.message }, 'storing subscribed pending logs failed'))
      .finally(() => {
        flushing = undefined
        if (pending.hasChanges()) setTimeout(flush, FLUSH_MS)
      })
  }
  await subscribePendingLogs(url, filter, {
    signal,
    onResult: (log) => {
      if (pending.add(log as LogInput) && !flushing) setTimeout(flush, FLUSH_MS)
    },
  }).closed
}

/**
 * The logs a subscription has seen, per transaction, with the transactions changed since the last
 * `take`. A transaction's logs are those of the newest pending block it was seen in (a moved
 * transaction starts over). Holds at most `maxTransactions`; the oldest go first.
 */
export function createPendingLogBuffer(maxTransactions: number) {
  const seen = new Map<string, { block: string; logs: Map<string, LogInput> }>()
  let changed = new Set<string>()
  return {
    /** Adds one notification's log; true when it is the first change since the last `take`. */
    add(log: LogInput): boolean {
      const tx = String(log.transactionHash).toLowerCase()
      const block = String(log.blockNumber)
      let entry = seen.get(tx)
      if (!entry || entry.block !== block) entry = { block, logs: new Map() }
      seen.delete(tx)
      seen.set(tx, entry)
      entry.logs.set(String(log.logIndex), log)
      if (seen.size > maxTransactions) {
        const oldest = seen.keys().next().value as string
        seen.delete(oldest)
        changed.delete(oldest)
      }
      const first = changed.size === 0
      changed.add(tx)
      return first
    },
    hasChanges: () => changed.size > 0,
    /** Every known log of the transactions changed since the last call. */
    take(): LogInput[] {
      const logs = [...changed].flatMap((tx) => [...(seen.get(tx)?.logs.values() ?? [])])
      changed = new Set()
      return logs
    },
  }
}
