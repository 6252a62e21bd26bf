/**
 * The newHeads subscription's freshness watchdog: a WebSocket that stays open but stops announcing
 * heads while the head seen over HTTP moves on is closed and subscribed again. A real node does not go
 * silent on demand, so a JSON-RPC WebSocket server plays the node.
 */
import type { AddressInfo } from 'node:net'
import { WebSocketServer, type WebSocket } from 'ws'
import { afterAll, describe, expect, it } from 'vitest'
import { silentLogger } from '../src/internal/logger.js'
import type { BlockHeader } from '../src/rpc/index.js'
import { followNewHeads } from '../src/sync/subscription.js'
import { waitFor } from './helpers/compare.js'

const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

const header = (n: number) => ({
  number: `0x${n.toString(16)}`,
  hash: `0x${n.toString(16).padStart(64, '0')}`,
  parentHash: `0x${(n - 1).toString(16).padStart(64, '0')}`,
  timestamp: '0x6553f100',
})

async function listening(): Promise<WebSocketServer> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise((resolve) => server.once('listening', resolve))
  return server
}

describe('newHeads subscription', () => {
  it('reopens a subscription that stays open but falls silent while the HTTP head moves', async () => {
    const server = await listening()
    cleanups.push(() => new Promise((resolve) => server.close(resolve)))
    const connections: WebSocket[] = []
    // The first connection announces blocks 1–3 and then nothing, open; later ones announce from 10 on.
    server.on('connection', (socket) => {
      const index = connections.push(socket) - 1
      socket.on('message', (data) => {
        const request = JSON.parse(data.toString()) as { id: number; method: string; params: unknown[] }
        if (request.method !== 'eth_subscribe' || request.params[0] !== 'newHeads') return
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: `0xs${index}` }))
        const first = index === 0 ? 1 : 10
        for (let n = first; n < first + 3; n++) {
          socket.send(
            JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: `0xs${index}`, result: header(n) } }),
          )
        }
      })
    })
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
    const heads: BlockHeader[] = []
    let httpHead = 3
    const moving = setInterval(() => httpHead++, 50)
    cleanups.push(async () => clearInterval(moving))
    const stop = new AbortController()
    const following = followNewHeads({
      url,
      logger: silentLogger,
      signal: stop.signal,
      onHead: (h) => heads.push(h),
      silentAfterMs: () => 300,
      httpHead: () => httpHead,
    })

    await waitFor(async () => heads.some((h) => h.number === 12), 'heads from a second subscription', 20_000, 50)
    stop.abort()
    await following
    expect(connections.length).toBeGreaterThanOrEqual(2)
    expect(heads.slice(0, 6).map((h) => h.number)).toEqual([1, 2, 3, 10, 11, 12])
    expect(heads[0]).toMatchObject({ hash: header(1).hash, parentHash: header(1).parentHash })
  })

  it('keeps a silent subscription open while the HTTP head does not move either', async () => {
    const server = await listening()
    cleanups.push(() => new Promise((resolve) => server.close(resolve)))
    let connections = 0
    server.on('connection', (socket) => {
      connections++
      socket.on('message', (data) => {
        const request = JSON.parse(data.toString()) as { id: number }
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: '0xs' }))
        socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0xs', result: header(5) } }))
      })
    })
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
    const stop = new AbortController()
    let heads = 0
    const following = followNewHeads({
      url,
      logger: silentLogger,
      signal: stop.signal,
      onHead: () => heads++,
      silentAfterMs: () => 100,
      httpHead: () => 5,
    })
    await waitFor(async () => heads === 1, 'the first head', 10_000, 20)
    // Many watchdog periods pass with the chain standing still: nothing to reopen for.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    stop.abort()
    await following
    expect(connections).toBe(1)
  })
})
