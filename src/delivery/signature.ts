import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** A new signing secret: `whsec_` and the base64 of a 24-byte key (Standard Webhooks). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`
}

/**
 * The Standard Webhooks headers of a delivery: `webhook-id` (the event id), `webhook-timestamp` (unix
 * seconds) and `webhook-signature`, one `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` per live
 * secret, space-separated (two during a rotation's overlap).
 */
export function signedHeaders(secrets: readonly string[], id: string, body: string, at = new Date()): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
  }
}
