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
/** The library reads standard base64; secrets issued before were base64url (the same key bytes). */
const standardSecret = (secret: string) => `whsec_${Buffer.from(secret.replace(/^whsec_/, ''), 'base64').toString('base64')}`

export function signedHeaders(secrets: readonly string[], id: string, body: string, at = new Date()): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(standardSecret(secret)).sign(id, at, body)).join(' '),
  }
}
