import { randomBytes } from 'node:crypto'
import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'
import { hashSecret } from './credentials.ts'
import { type Role, userTokens } from './people.tables.ts'

export type TokenKind = 'setup' | 'invite' | 'reset'

export const SETUP_TTL_MS = 7 * 24 * 60 * 60 * 1000

/** Creates a single-use token and returns the only copy of its secret. */
export async function issueToken(
  db: Db,
  clock: Clock,
  input: { kind: TokenKind; ttlMs: number; accountId?: string; userId?: string; email?: string; role?: Role },
): Promise<string> {
  const token = randomBytes(32).toString('base64url')
  const now = clock.now()
  await db.insert(userTokens).values({
    tokenHash: hashSecret(token),
    kind: input.kind,
    accountId: input.accountId ?? null,
    userId: input.userId ?? null,
    email: input.email ?? null,
    role: input.role ?? null,
    createdAt: now,
    expiresAt: new Date(now.getTime() + input.ttlMs),
  })
  return token
}
