import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { and, type Column, eq, gt, isNull, lt } from 'drizzle-orm'
import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'
import { AppError } from '../http/errors.ts'
import { accounts, plans } from './auth.tables.ts'
import { hashSecret } from './credentials.ts'
import { memberships, type Role, sessions, users } from './people.tables.ts'
import { ROLE_PERMISSIONS, ROLE_SCOPES } from './roles.ts'
import { type TenantContext, tenantAccount } from './tenant.ts'

export const SESSION_COOKIE = 'herold_session'
export const CSRF_HEADER = 'x-csrf-token'
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000
/** last_seen_at and the membership's last_active_at are written at most this often per session */
const TOUCH_EVERY_MS = 5 * 60 * 1000
const SESSION_PREFIX = 'hs_'

/** The value of one cookie from a Cookie header ('' when absent). */
export function readCookie(header: string | undefined, name: string): string {
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=')
    if (index > 0 && part.slice(0, index).trim() === name) return part.slice(index + 1).trim()
  }
  return ''
}

export function sessionCookie(token: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_TTL_MS / 1000}${secure ? '; Secure' : ''}`
}

export function clearedSessionCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure ? '; Secure' : ''}`
}

/**
 * The CSRF token of a session: derived from its secret, so only a page that can read the app's own responses
 * (GET /app/session) learns it; a cross-site form or fetch carries the cookie but cannot know the token.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHash('sha256').update(`csrf:${sessionToken}`).digest('base64url')
}

export function csrfValid(sessionToken: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || header === '') return false
  const expected = Buffer.from(csrfTokenFor(sessionToken))
  const given = Buffer.from(header)
  return expected.length === given.length && timingSafeEqual(expected, given)
}

export const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export async function createSession(
  db: Db,
  clock: Clock,
  input: { userId: string; accountId: string },
): Promise<{ id: string; token: string }> {
  const token = SESSION_PREFIX + randomBytes(32).toString('base64url')
  const now = clock.now()
  const id = randomUUID()
  await db.insert(sessions).values({
    id,
    tokenHash: hashSecret(token),
    userId: input.userId,
    accountId: input.accountId,
    createdAt: now,
    lastSeenAt: now,
    expiresAt: new Date(now.getTime() + SESSION_TTL_MS),
  })
  return { id, token }
}

export interface ResolvedSession {
  sessionId: string
  /** when the session ends by itself (a live stream closes then) */
  expiresAt: Date
  userId: string
  role: Role
  tenant: TenantContext
  user: { id: string; email: string; name: string; language: string | null }
}

const unauthorized = () => new AppError(401, 'unauthorized', 'Your session has ended; sign in again')

/** Joins the membership of the user in the account named by these columns, when it is active. */
export const activeMembership = (accountId: Column, userId: Column) =>
  and(eq(memberships.accountId, accountId), eq(memberships.userId, userId), eq(memberships.status, 'active'))

/**
 * A session cookie to its member: the session must be unrevoked and unexpired and its membership active; the role
 * is read on every request, so a changed role or a removal takes effect at once.
 */
export async function resolveSession(db: Db, clock: Clock, token: string): Promise<ResolvedSession> {
  if (!token.startsWith(SESSION_PREFIX)) throw unauthorized()
  const now = clock.now()
  const [row] = await db
    .select({
      session: sessions,
      user: { id: users.id, email: users.email, name: users.name, language: users.language },
      role: memberships.role,
      lastActiveAt: memberships.lastActiveAt,
      account: accounts,
      requestsPerMinute: plans.requestsPerMinute,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .innerJoin(memberships, activeMembership(sessions.accountId, sessions.userId))
    .innerJoin(accounts, eq(accounts.id, sessions.accountId))
    .innerJoin(plans, eq(plans.name, accounts.plan))
    .where(and(eq(sessions.tokenHash, hashSecret(token)), isNull(sessions.revokedAt), gt(sessions.expiresAt, now)))
    .limit(1)
  if (!row) throw unauthorized()
  if (row.account.status !== 'active') throw new AppError(403, 'account_blocked', 'This account is blocked')
  if (now.getTime() - row.session.lastSeenAt.getTime() > TOUCH_EVERY_MS || row.lastActiveAt === null) {
    await db
      .update(sessions)
      .set({ lastSeenAt: now })
      .where(and(eq(sessions.id, row.session.id), lt(sessions.lastSeenAt, now)))
    await db
      .update(memberships)
      .set({ lastActiveAt: now })
      .where(and(eq(memberships.accountId, row.account.id), eq(memberships.userId, row.user.id)))
  }
  return {
    sessionId: row.session.id,
    expiresAt: row.session.expiresAt,
    userId: row.user.id,
    role: row.role,
    user: row.user,
    tenant: {
      accountId: row.account.id,
      account: tenantAccount(row.account),
      actor: {
        type: 'session',
        keyId: row.session.id,
        keyName: row.user.name,
        keyPrefix: null,
        scopes: [...ROLE_SCOPES[row.role]],
        requestsPerMinute: row.requestsPerMinute,
        userId: row.user.id,
        role: row.role,
        permissions: [...ROLE_PERMISSIONS[row.role]],
      },
    },
  }
}

/**
 * The session of a request that carries the session cookie and no Authorization header (null otherwise); a
 * state-changing request must also carry the session's CSRF token in X-CSRF-Token.
 */
export async function sessionOfRequest(
  db: Db,
  clock: Clock,
  request: { method: string; headers: Record<string, string | string[] | undefined> },
): Promise<(ResolvedSession & { token: string }) | null> {
  if (request.headers.authorization) return null
  const cookie = request.headers.cookie
  const token = readCookie(typeof cookie === 'string' ? cookie : undefined, SESSION_COOKIE)
  if (token === '') return null
  const session = await resolveSession(db, clock, token)
  if (STATE_CHANGING.has(request.method) && !csrfValid(token, request.headers[CSRF_HEADER])) {
    throw new AppError(403, 'csrf_invalid', 'The request lacks the CSRF token of your session (X-CSRF-Token)', {
      key: 'csrf_token_ungueltig',
    })
  }
  return { ...session, token }
}
