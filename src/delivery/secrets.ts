import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

/** Prefix of a secret sealed with `SECRETS_KEY`; anything else is stored as it is. */
const SEALED = 'enc:v1:'
const IV_BYTES = 12

/** The secret as stored: sealed with AES-256-GCM when a key is set, else as it is. */
export function sealSecret(key: Buffer | undefined, secret: string): string {
  if (!key) return secret
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
  return `${SEALED}${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${sealed.toString('base64')}`
}

/** A stored secret in the clear; a sealed one needs the key it was sealed with. */
export function openSecret(key: Buffer | undefined, stored: string): string {
  if (!stored.startsWith(SEALED)) return stored
  if (!key) throw new Error('a webhook secret is sealed with SECRETS_KEY, which is not set')
  const [iv, tag, sealed] = stored.slice(SEALED.length).split(':') as [string, string, string]
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'))
  decipher.setAuthTag(Buffer.from(tag, 'base64'))
  try {
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64')), decipher.final()]).toString('utf8')
  } catch {
    throw new Error('a webhook secret does not open with SECRETS_KEY (sealed with another key?)')
  }
}
