import http from 'node:http'

export type RawRpc = {
  /** One JSON-RPC call; resolves to `result`, throws on an error answer. */
  call: <T>(method: string, params: unknown[]) => Promise<T>
  /** One JSON-RPC batch; results in call order. */
  batch: <T>(calls: { method: string; params: unknown[] }[]) => Promise<T[]>
  close: () => void
}

type Answer = { id: number; result?: unknown; error?: { code: number; message: string } }

/**
 * The plainest JSON-RPC client over `node:http` with a keep-alive agent: the body is read whole and
 * parsed once, nothing is formatted, so it measures what the node and the wire allow.
 */
export function createRawRpc(url: string, maxSockets = 8): RawRpc {
  const agent = new http.Agent({ keepAlive: true, maxSockets })
  const target = new URL(url)

  function post(body: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
        },
        (response) => {
          const chunks: Buffer[] = []
          response.on('data', (chunk: Buffer) => chunks.push(chunk))
          response.on('error', reject)
          response.on('end', () => {
            try {
              if (response.statusCode !== 200) throw new Error(`HTTP ${response.statusCode}`)
              resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
            } catch (error) {
              reject(error)
            }
          })
        },
      )
      request.on('error', reject)
      request.end(body)
    })
  }

  const unwrap = (answer: Answer) => {
    if (answer.error) throw new Error(`JSON-RPC error ${answer.error.code}: ${answer.error.message}`)
    return answer.result
  }

  return {
    call: async <T>(method: string, params: unknown[]) =>
      unwrap((await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))) as Answer) as T,
    batch: async <T>(calls: { method: string; params: unknown[] }[]) => {
      const answers = (await post(JSON.stringify(calls.map((c, id) => ({ jsonrpc: '2.0', id, ...c }))))) as Answer[]
      const byId = new Array<T>(calls.length)
      for (const answer of answers) byId[answer.id] = unwrap(answer) as T
      return byId
    },
    close: () => agent.destroy(),
  }
}

/** Runs `fn` on each item with at most `parallel` in flight. */
export async function inParallel<T>(items: readonly T[], parallel: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(parallel, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!)
    }),
  )
}

/** `[from, to]` cut into ranges of `size` blocks. */
export function blockChunks(from: number, to: number, size: number): [number, number][] {
  const chunks: [number, number][] = []
  for (let start = from; start <= to; start += size) chunks.push([start, Math.min(start + size - 1, to)])
  return chunks
}

export const hex = (n: number) => `0x${n.toString(16)}`
