import { hash, randomBytes } from 'node:crypto'

export const API_KEY_PREFIX = 'hk_'
export const OAUTH_TOKEN_PREFIX = 'hoa_'
const PREFIX_LENGTH = 11

/** 256 random bits, readable prefix; only the hash is stored. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url')
  return { key, prefix: key.slice(0, PREFIX_LENGTH), hash: hashSecret(key) }
}

export function generateOAuthToken(): { token: string; hash: string } {
  const token = OAUTH_TOKEN_PREFIX + randomBytes(32).toString('base64url')
  return { token, hash: hashSecret(token) }
}

// The secrets carry 256 random bits, so a fast hash cannot be brute-forced; a slow one would cost every request.
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex')
}
