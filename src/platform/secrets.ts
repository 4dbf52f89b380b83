import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { type Config, ConfigError, decodeSecretKey } from '../config.ts'

/**
 * Encryption at rest for secrets Herold must be able to read back (a webhook signing secret is an HMAC key:
 * hashing it would make signing impossible). AES-256-GCM; the stored form is `v1.<iv>.<tag>.<ciphertext>`,
 * base64url parts.
 */
export interface SecretBox {
  seal(plaintext: string): string
  open(sealed: string): string
}

export const SECRET_KEY_FILE = 'secret.key'

export function secretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('the secret key must be 32 bytes')
  return {
    seal(plaintext) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', key, iv)
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      return ['v1', iv, cipher.getAuthTag(), ciphertext]
        .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
        .join('.')
    },
    open(sealed) {
      const [version, iv, tag, ciphertext] = sealed.split('.')
      if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('not a sealed secret')
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8')
    },
  }
}

const resolved = new WeakMap<Config, SecretBox>()

/**
 * The key comes from HEROLD_SECRET_KEY. Embedded mode without it generates one on first start and keeps it in
 * the data directory (`secret.key`, readable by the owner only), so a single-machine install needs no setup; a
 * server deployment (DATABASE_URL) must set it, since its processes share the database but not a disk.
 */
export function secretBoxFor(config: Config): SecretBox {
  const known = resolved.get(config)
  if (known) return known
  const box = secretBox(resolveKey(config))
  resolved.set(config, box)
  return box
}

function resolveKey(config: Config): Buffer {
  if (config.secretKey) return decodeSecretKey(config.secretKey)
  if (config.databaseUrl) {
    throw new ConfigError(
      'HEROLD_SECRET_KEY is required when DATABASE_URL is set (every process needs the same key); generate one with: openssl rand -base64 32',
    )
  }
  if (config.dataDir.startsWith('memory://')) return randomBytes(32)
  const file = path.join(config.dataDir, SECRET_KEY_FILE)
  if (existsSync(file)) return decodeSecretKey(readFileSync(file, 'utf8').trim())
  mkdirSync(config.dataDir, { recursive: true })
  const key = randomBytes(32)
  writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' })
  return key
}
