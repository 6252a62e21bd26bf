/** One Server-Sent Events message: its `id:` and parsed `data:` (comments count as keep-alives). */
export type SseMessage = { id: string; data: any }

/**
 * A Server-Sent Events client over fetch: collects messages into `messages` until `close()`; resolves
 * `opened` once the response headers arrived.
 */
export function openSse(url: string, { lastEventId }: { lastEventId?: string } = {}) {
  const controller = new AbortController()
  const messages: SseMessage[] = []
  let comments = 0
  let status = 0
  const opened = fetch(url, { headers: lastEventId ? { 'Last-Event-ID': lastEventId } : {}, signal: controller.signal }).then(
    (response) => {
      status = response.status
      return response
    },
  )
  const done = opened
    .then(async (response) => {
      const decoder = new TextDecoder()
      let buffer = ''
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const lines = block.split('\n')
          if (lines.every((line) => line.startsWith(':'))) comments++
          const id = lines.find((line) => line.startsWith('id: '))?.slice(4)
          const data = lines.find((line) => line.startsWith('data: '))?.slice(6)
          if (id !== undefined && data !== undefined) messages.push({ id, data: JSON.parse(data) })
        }
      }
    })
    .catch(() => {})
  return {
    messages,
    opened,
    status: () => status,
    comments: () => comments,
    lastId: () => messages.at(-1)?.id,
    async close() {
      controller.abort()
      await done
    },
  }
}
