import { randomUUID } from 'node:crypto'
import { and, asc, eq, isNull } from 'drizzle-orm'
import { accounts } from '../../platform/auth/auth.tables.ts'
import { memberships, sessions, users, userTokens } from '../../platform/auth/people.tables.ts'
import { createSession, csrfTokenFor, resolveSession } from '../../platform/auth/sessions.ts'
import { issueToken } from '../../platform/auth/user-tokens.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { publishSessionsEnded } from '../../platform/live/publish.ts'

import {
  checkName,
  checkPassword,
  hashPassword,
  invalidLink,
  normalizeEmail,
  RESET_TTL_MS,
  type User,
  usableToken,
  userByEmail,
  useToken,
  verifyPassword,
} from './people.credentials.ts'

/** The first-start link: the first person becomes the owner of the account it was made for. */
export async function completeSetup(
  db: Db,
  clock: Clock,
  input: { token: string; email: string; name: string; password: string },
): Promise<{ user: User; accountId: string; session: { id: string; token: string } }> {
  const email = normalizeEmail(input.email)
  const name = checkName(input.name)
  checkPassword(input.password)
  const passwordHash = await hashPassword(input.password)
  return db.transaction(async (tx) => {
    const row = await usableToken(tx, clock, 'setup', input.token, { lock: true })
    if (!row?.accountId) throw invalidLink()
    if (await userByEmail(tx, email)) throw new AppError(409, 'user_exists', `A user with the e-mail ${email} exists`)
    const [user] = await tx
      .insert(users)
      .values({ id: randomUUID(), email, name, passwordHash, passwordChangedAt: clock.now() })
      .returning()
    await tx.insert(memberships).values({
      accountId: row.accountId,
      userId: user.id,
      role: 'owner',
      status: 'active',
      createdAt: clock.now(),
    })
    await useToken(tx, clock, row)
    const session = await createSession(tx, clock, { userId: user.id, accountId: row.accountId })
    return { user, accountId: row.accountId, session }
  })
}

/** The account a user signs in to: the oldest active membership. */
async function firstAccount(db: Db, userId: string): Promise<string | undefined> {
  const [row] = await db
    .select({ accountId: memberships.accountId })
    .from(memberships)
    .where(and(eq(memberships.userId, userId), eq(memberships.status, 'active')))
    .orderBy(asc(memberships.createdAt), asc(memberships.accountId))
    .limit(1)
  return row?.accountId
}

/** Email and password to a new session; null for any mismatch (the caller answers the same for every reason). */
export async function signIn(
  db: Db,
  clock: Clock,
  input: { email: string; password: string },
): Promise<{ user: User; accountId: string; session: { id: string; token: string } } | null> {
  const user = await userByEmail(db, input.email)
  const ok = await verifyPassword(user?.passwordHash ?? null, input.password)
  if (!user || !ok) return null
  const accountId = await firstAccount(db, user.id)
  if (!accountId) return null
  const session = await createSession(db, clock, { userId: user.id, accountId })
  return { user, accountId, session }
}

export async function revokeSession(db: Db, clock: Clock, sessionId: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .update(sessions)
      .set({ revokedAt: clock.now() })
      .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)))
    // its live streams (the console's GET /app/events) close on every process at the commit
    await publishSessionsEnded(tx, { sessionId })
  })
}

/** Ends every session of a user (password changed or reset), optionally in one account only. */
export async function revokeUserSessions(
  db: Db,
  clock: Clock,
  userId: string,
  options: { accountId?: string } = {},
): Promise<void> {
  await db
    .update(sessions)
    .set({ revokedAt: clock.now() })
    .where(
      and(
        eq(sessions.userId, userId),
        isNull(sessions.revokedAt),
        options.accountId ? eq(sessions.accountId, options.accountId) : undefined,
      ),
    )
  // their live streams close on every process at the commit of the caller's transaction
  await publishSessionsEnded(db, { userId, ...(options.accountId ? { accountId: options.accountId } : {}) })
}

/** Changes a password after checking the current one; every session ends and a new one starts for this browser. */
export async function changePassword(
  db: Db,
  clock: Clock,
  input: { userId: string; accountId: string; current: string; next: string },
): Promise<{ id: string; token: string }> {
  checkPassword(input.next)
  const [user] = await db.select().from(users).where(eq(users.id, input.userId))
  if (!user || !(await verifyPassword(user.passwordHash, input.current))) {
    throw new AppError(403, 'forbidden', 'The current password is wrong', { key: 'passwort_falsch' })
  }
  const passwordHash = await hashPassword(input.next)
  return db.transaction(async (tx) => {
    await tx.update(users).set({ passwordHash, passwordChangedAt: clock.now() }).where(eq(users.id, user.id))
    await revokeUserSessions(tx, clock, user.id)
    return createSession(tx, clock, { userId: user.id, accountId: input.accountId })
  })
}

/** A reset link for a user with a password; null when there is none (the caller answers the same). */
export async function startPasswordReset(
  db: Db,
  clock: Clock,
  email: string,
): Promise<{ user: User; token: string } | null> {
  const user = await userByEmail(db, email)
  if (!user?.passwordHash) return null
  const token = await issueToken(db, clock, { kind: 'reset', ttlMs: RESET_TTL_MS, userId: user.id })
  return { user, token }
}

export async function completePasswordReset(
  db: Db,
  clock: Clock,
  input: { token: string; password: string },
): Promise<void> {
  checkPassword(input.password)
  const passwordHash = await hashPassword(input.password)
  await db.transaction(async (tx) => {
    const row = await usableToken(tx, clock, 'reset', input.token, { lock: true })
    if (!row?.userId) throw invalidLink()
    await tx.update(users).set({ passwordHash, passwordChangedAt: clock.now() }).where(eq(users.id, row.userId))
    await useToken(tx, clock, row)
    // a reset also ends every other reset link of the user
    await tx
      .update(userTokens)
      .set({ usedAt: clock.now() })
      .where(and(eq(userTokens.userId, row.userId), eq(userTokens.kind, 'reset'), isNull(userTokens.usedAt)))
    await revokeUserSessions(tx, clock, row.userId)
  })
}

/** The signed-in member as the web app reads it: their language, account, role, what they may do and the CSRF token. */
export async function sessionView(db: Db, clock: Clock, token: string) {
  const session = await resolveSession(db, clock, token)
  const [user] = await db.select({ language: users.language }).from(users).where(eq(users.id, session.userId))
  const language = (user?.language ?? session.tenant.account.language) === 'en' ? 'en' : 'de'
  return {
    user: { ...session.user, language },
    account: {
      id: session.tenant.accountId,
      name: session.tenant.account.name,
      language: session.tenant.account.language,
      timezone: session.tenant.account.timezone,
    },
    role: session.role,
    scopes: session.tenant.actor.scopes,
    permissions: session.tenant.actor.permissions ?? [],
    csrf_token: csrfTokenFor(token),
  }
}

/** The member's interface language, de or en. */
export async function setLanguage(db: Db, userId: string, language: 'de' | 'en'): Promise<void> {
  await db.update(users).set({ language }).where(eq(users.id, userId))
}

/** The name and language of an account, as a setup or invitation page shows it (empty for an unknown one). */
export async function accountSummary(db: Db, accountId: string): Promise<{ name: string; language: string }> {
  const [row] = await db
    .select({ name: accounts.name, language: accounts.language })
    .from(accounts)
    .where(eq(accounts.id, accountId))
  return row ?? { name: '', language: 'de' }
}
