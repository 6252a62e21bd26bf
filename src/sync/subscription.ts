import WebSocket from 'ws'
import type { Logger } from '../internal/logger.js'
import type { LogInput } from '../store/index.js'
import { toBlockHeader, type BlockHeader, type RpcBlockHeader } from '../rpc/index.js'
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
  filter: { address?: string[]; topics?: string[][] }
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
export async function followNewHeads({ url, logger, signal, onHead, silentAfterMs, httpHead }: NewHeadsSubscriptionParameters): Promise<void> {
  await resubscribing('newHeads', url, logger, signal, () =>
    new Promise<void>((resolve, reject) => {
      const socket = new WebSocket(url)
      let lastMessageAt = Date.now()
      let announced = -1
      const watchdog = setInterval(
        () => {
          const head = httpHead()
          if (Date.now() - lastMessageAt > silentAfterMs() && head !== undefined && head > announced) {
            logger.warn({ url: redactUrl(url), last_announced: announced, http_head: head }, 'newHeads subscription silent while the head moves: reopening')
            socket.terminate()
          }
        },
        Math.max(50, Math.min(1_000, silentAfterMs() / 4)),
      )
      const close = () => socket.close()
      signal.addEventListener('abort', close, { once: true })
      socket.on('open', () => socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] })))
      socket.on('message', (data) => {
        let message: { id?: number; error?: { message: string }; method?: string; params?: { result?: RpcBlockHeader } }
        try {
          message = JSON.parse(data.toString())
        } catch {
          return
        }
        if (message.id === 1 && message.error) {
          socket.close()
          return reject(new Error(`eth_subscribe newHeads: ${message.error.message}`))
        }
        if (message.id === 1) lastMessageAt = Date.now()
        const result = message.method === 'eth_subscription' ? message.params?.result : undefined
        if (result?.hash && result.number) {
          lastMessageAt = Date.now()
          const header = toBlockHeader(result)
          announced = Math.max(announced, header.number)
          onHead(header)
        }
      })
      socket.on('error', (error) => reject(error))
      socket.on('close', () => {
        clearInterval(watchdog)
        signal.removeEventListener('abort', close)
        resolve()
      })
    }),
  )
}

function subscribeOnce(
  url: string,
  filter: PendingLogsSubscriptionParameters['filter'],
  logger: Logger,
  signal: AbortSignal,
  onLogs: (logs: LogInput[]) => Promise<unknown>,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url)
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
    const close = () => socket.close()
    signal.addEventListener('abort', close, { once: true })
    socket.on('open', () => {
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['pendingLogs', filter] }))
    })
    socket.on('message', (data) => {
      let message: { id?: number; error?: { message: string }; method?: string; params?: { result?: LogInput } }
      try {
        message = JSON.parse(data.toString())
      } catch {
        return
      }
      if (message.id === 1 && message.error) {
        socket.close()
        return reject(new Error(`eth_subscribe pendingLogs: ${message.error.message}`))
      }
      if (message.method === 'eth_subscription' && message.params?.result) {
        if (pending.add(message.params.result) && !flushing) setTimeout(flush, FLUSH_MS)
      }
    })
    socket.on('error', (error) => reject(error))
    socket.on('close', () => {
      signal.removeEventListener('abort', close)
      resolve()
    })
  })
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
