import WebSocket from 'ws'
import { InconsistentAnswerError } from '../verify.js'
import { parseBlockHeader, type BlockHeader } from './getBlock.js'
import { parseLogs, type LogsRequest, type RpcLog } from './getLogs.js'

const METHOD = 'eth_subscribe'

/** One open subscription: `closed` settles when the socket closes (rejects when the node refused it or the socket failed). */
export type Subscription = { closed: Promise<void>; terminate(): void }

export type SubscribeHandlers<T> = {
  /** Closes the socket. */
  signal: AbortSignal
  /** Each notification, checked; a malformed one is dropped (the pollers fill what it would have said). */
  onResult: (result: T) => void
  /** The node accepted the subscription. */
  onSubscribed?: () => void
}

/** `eth_subscribe` over a WebSocket of its own: one subscription, until the socket closes. */
function subscribe<T>(
  url: string,
  params: readonly unknown[],
  parse: (result: unknown) => T | null,
  { signal, onResult, onSubscribed }: SubscribeHandlers<T>,
): Subscription {
  const socket = new WebSocket(url)
  const closed = new Promise<void>((resolve, reject) => {
    const close = () => socket.close()
    signal.addEventListener('abort', close, { once: true })
    socket.on('open', () => socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: METHOD, params })))
    socket.on('message', (data) => {
      let message: { id?: number; error?: { message: string }; method?: string; params?: { result?: unknown } }
      try {
        message = JSON.parse(data.toString())
      } catch {
        return
      }
      if (message.id === 1 && message.error) {
        socket.close()
        return reject(new Error(`${METHOD} ${String(params[0])}: ${message.error.message}`))
      }
      if (message.id === 1) onSubscribed?.()
      if (message.method !== 'eth_subscription' || message.params?.result == null) return
      let result: T | null
      try {
        result = parse(message.params.result)
      } catch (error) {
        if (error instanceof InconsistentAnswerError) return
        throw error
      }
      if (result !== null) onResult(result)
    })
    socket.on('error', (error) => reject(error))
    socket.on('close', () => {
      signal.removeEventListener('abort', close)
      resolve()
    })
  })
  return { closed, terminate: () => socket.terminate() }
}

/**
 * `eth_subscribe ["newHeads"]`: each announced head, decoded.
 *
 * @example
 * const subscription = subscribeNewHeads(wsUrl, { signal, onResult: (header) => follower.wake(header.number) })
 * await subscription.closed
 */
export function subscribeNewHeads(url: string, handlers: SubscribeHandlers<BlockHeader>): Subscription {
  return subscribe(url, ['newHeads'], (result) => parseBlockHeader(result, METHOD), handlers)
}

export type PendingLogsFilter = Pick<LogsRequest, 'address' | 'topics'>

/**
 * `eth_subscribe ["pendingLogs", filter]` (Base nodes): each pre-confirmed log of the newest
 * flashblock, checked to be one the filter asked for.
 *
 * @example
 * const subscription = subscribePendingLogs(wsUrl, { address }, { signal, onResult: (log) => buffer.add(log) })
 */
export function subscribePendingLogs(url: string, filter: PendingLogsFilter, handlers: SubscribeHandlers<RpcLog>): Subscription {
  return subscribe(
    url,
    ['pendingLogs', filter],
    (result) => parseLogs([result], { fromBlock: 'pending', toBlock: 'pending', ...filter })[0]!,
    handlers,
  )
}
