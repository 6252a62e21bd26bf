import pg from 'pg'
import type { Logger } from '../internal/logger.js'
import { sleep } from '../utils/loop.js'

const RECONNECT_MS = 1_000

/**
 * `LISTEN`s on `channel` over a connection of its own (beside `pool`, with its settings: a listening
 * connection never serves queries) and calls `onNotify` with each payload, connecting again after an
 * error (callers poll as well: a notification missed meanwhile only delays). Returns a function that
 * stops listening and closes the connection.
 */
export function listen(pool: pg.Pool, channel: string, onNotify: (payload: string) => void, logger: Logger): () => Promise<void> {
  const stopped = new AbortController()
  const running = (async () => {
    while (!stopped.signal.aborted) {
      const client = new pg.Client(pool.options)
      // `on`, not `once`: a second error of a dying connection must not go unhandled (it would end the process).
      const lost = new Promise<void>((resolve) => client.on('error', () => resolve()).once('end', () => resolve()))
      try {
        await client.connect()
        client.on('notification', (message) => {
          if (message.channel === channel) onNotify(message.payload ?? '')
        })
        await client.query(`LISTEN ${channel}`)
        // Whatever was notified while no connection listened: readers look again now.
        onNotify('')
        await Promise.race([lost, new Promise((resolve) => stopped.signal.addEventListener('abort', resolve, { once: true }))])
      } catch (error) {
        logger.warn({ channel, err: error }, 'listen connection lost')
      }
      await client.end().catch(() => {})
      await sleep(RECONNECT_MS, stopped.signal)
    }
  })()
  return async () => {
    stopped.abort()
    await running
  }
}
