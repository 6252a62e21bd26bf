import WebSocket from 'ws'
import type { Logger } from '../logger.js'
import type { LogInput } from '../store/index.js'
import { sleep } from '../utils/loop.js'
import { redactUrl } from '../utils/redact.js'

/** Notifications that arrive within this window are stored together. */
const FLUSH_MS = 10
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
  let failures = 0
  while (!signal.aborted) {
    const startedAt = Date.now()
    await subscribeOnce(url, filter, logger, signal, onLogs).catch((error: Error) =>
      logger.warn({ url: redactUrl(url), reason: error.message }, 'pendingLogs subscription failed'),
    )
    if (signal.aborted) break
    failures = Date.now() - startedAt > RECONNECT_MAX_MS ? 1 : failures + 1
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** (failures - 1))
    logger.info({ url: redactUrl(url), delay_ms: delay }, 'pendingLogs subscription dropped: resubscribing')
    await sleep(delay, signal)
  }
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
    let buffer: LogInput[] = []
    let flushing: Promise<unknown> | undefined
    const flush = () => {
      if (flushing || buffer.length === 0) return
      const logs = buffer
      buffer = []
      flushing = onLogs(logs)
        .catch((error: Error) => logger.warn({ reason: error.message }, 'storing subscribed pending logs failed'))
        .finally(() => {
          flushing = undefined
          if (buffer.length > 0) setTimeout(flush, FLUSH_MS)
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
        buffer.push(message.params.result)
        if (buffer.length === 1) setTimeout(flush, FLUSH_MS)
      }
    })
    socket.on('error', (error) => reject(error))
    socket.on('close', () => {
      signal.removeEventListener('abort', close)
      resolve()
    })
  })
}
