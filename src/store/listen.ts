import type pg from 'pg'
import type { Logger } from '../logger.js'
import { sleep } from '../utils/loop.js'

const RECONNECT_MS = 1_000

/**
 * Holds one pooled connection that `LISTEN`s on `channel` and calls `onNotify` with each payload,
 * connecting again after an error (callers poll as well: a notification missed meanwhile only delays).
 * Returns a function that stops listening and releases the connection.
 */
export function listen(pool: pg.Pool, channel: string, onNotify: (payload: string) => void, logger: Logger): () => Promise<void> {
  const stopped = new AbortController()
  let client: pg.PoolClient | undefined
  const running = (async () => {
    while (!stopped.signal.aborted) {
      try {
        client = await pool.connect()
        const lost = new Promise<void>((resolve) => client!.once('error', () => resolve()))
        client.on('notification', (message) => {
          if (message.channel === channel) onNotify(message.payload ?? '')
        })
        await client.query(`LISTEN ${channel}`)
        await Promise.race([lost, new Promise((resolve) => stopped.signal.addEventListener('abort', resolve, { once: true }))])
        // A listening connection never goes back to the pool.
        client.release(true)
        client = undefined
      } catch (error) {
        client?.release(true)
        client = undefined
        logger.warn({ channel, err: error }, 'listen connection lost')
      }
      await sleep(RECONNECT_MS, stopped.signal)
    }
  })()
  return async () => {
    stopped.abort()
    await running
  }
}
