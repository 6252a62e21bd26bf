import { createHmac, timingSafeEqual } from 'node:crypto'

/** How far a signature's time may be from now before `verifySignature` refuses it (replays). */
export const SIGNATURE_TOLERANCE_SECONDS = 300

/** `X-Codetrail-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. */
export function signPayload(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
  return `t=${timestamp},v1=${mac}`
}

/** Whether `header` signs `body` with `secret` (any of its v1 values) within the tolerance of `now`. */
export function verifySignature(
  secret: string,
  body: string,
  header: string,
  { now = Math.floor(Date.now() / 1000), toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS } = {},
): boolean {
  const parts = header.split(',').map((part) => part.split('=') as [string, string | undefined])
  const t = Number(parts.find(([key]) => key === 't')?.[1])
  if (!Number.isSafeInteger(t) || Math.abs(now - t) > toleranceSeconds) return false
  const expected = Buffer.from(signPayload(secret, body, t).slice(`t=${t},v1=`.length), 'hex')
  return parts.some(([key, value]) => {
    if (key !== 'v1' || !value || !/^[0-9a-f]{64}$/.test(value)) return false
    return timingSafeEqual(Buffer.from(value, 'hex'), expected)
  })
}
