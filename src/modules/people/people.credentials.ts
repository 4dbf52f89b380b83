import { randomBytes, randomUUID } from 'node:crypto'
import { hash, verify } from '@node-rs/argon2'
import { and, eq, gt, isNull, ne, sql } from 'drizzle-orm'
import { hashSecret } from '../../platform/auth/credentials.ts'
import { memberships, ROLES, type Role, users, userTokens } from '../../platform/auth/people.tables.ts'
import type { TokenKind } from '../../platform/auth/user-tokens.ts'
import type { Clock } from '../../platform/clock.ts'
import { inAccount } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'

/** Passwords, e-mail addresses, one-time tokens and members made by hand (the CLI, the first start). */
export const INVITE_TTL_MS = 7 * 24 * 60 * 60 * 1000
export const RESET_TTL_MS = 60 * 60 * 1000
export const PASSWORD_MIN = 10
export const PASSWORD_MAX = 200
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

// algorithm 2 is Argon2id (a const enum in the typings); the OWASP minimum (19 MiB, 2 passes): about 30 ms per hash on one core.
const ARGON = { algorithm: 2 as const, memoryCost: 19456, timeCost: 2, parallelism: 1 }
// verified when an address is unknown, so a sign-in takes as long for a stranger as for a member
let dummyHash: Promise<string> | undefined

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON)
}

export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'))
  try {
    return await verify(stored ?? (await dummyHash), password)
  } catch {
    return false
  }
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value)
}

export const invalid = (message: string, key = 'ungueltig') => new AppError(400, 'bad_request', message, { key })

export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase()
  if (email.length > 254 || !EMAIL.test(email)) throw invalid('email is not a valid e-mail address')
  return email
}

export function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    throw invalid(`password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`, 'passwort_zu_kurz')
  }
}

export function checkName(raw: string): string {
  const name = raw.trim()
  if (name.length === 0 || name.length > 120) throw invalid('name must be 1 to 120 characters')
  return name
}

export type User = typeof users.$inferSelect

export async function userByEmail(db: Db, email: string): Promise<User | undefined> {
  const [row] = await db.select().from(users).where(sql`lower(${users.email}) = ${email.trim().toLowerCase()}`)
  return row
}

export type TokenRow = typeof userTokens.$inferSelect

/** A token still usable (unused, unexpired) of a kind; with `lock` for the transaction that uses it. */
export async function usableToken(
  db: Db,
  clock: Clock,
  kind: TokenKind,
  token: string,
  options: { lock?: boolean } = {},
): Promise<TokenRow | undefined> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return undefined
  const query = db
    .select()
    .from(userTokens)
    .where(
      and(
        eq(userTokens.tokenHash, hashSecret(token)),
        eq(userTokens.kind, kind),
        isNull(userTokens.usedAt),
        gt(userTokens.expiresAt, clock.now()),
      ),
    )
  const [row] = options.lock ? await query.for('update') : await query
  return row
}

export async function useToken(db: Db, clock: Clock, row: TokenRow): Promise<void> {
  await db.update(userTokens).set({ usedAt: clock.now() }).where(eq(userTokens.tokenHash, row.tokenHash))
}

/** Ends a member's unused invite links, all but the one whose token hash is `keep` (a renewed invitation's). */
export async function endInviteLinks(
  db: Db,
  clock: Clock,
  member: { accountId: string; userId: string; keep?: string },
): Promise<void> {
  const keep = member.keep ? ne(userTokens.tokenHash, member.keep) : undefined
  const open = [eq(userTokens.userId, member.userId), eq(userTokens.kind, 'invite'), isNull(userTokens.usedAt), keep]
  await db
    .update(userTokens)
    .set({ usedAt: clock.now() })
    .where(inAccount(userTokens, member.accountId, ...open))
}

export const invalidLink = () =>
  new AppError(410, 'link_invalid', 'This link is invalid, was already used or has expired', { key: 'link_ungueltig' })

/** Creates a user with a password and an active membership (the CLI and the first-start setup). */
export async function createMember(
  db: Db,
  input: { accountId: string; email: string; name: string; password: string; role: Role },
): Promise<User> {
  const email = normalizeEmail(input.email)
  const name = checkName(input.name)
  checkPassword(input.password)
  if (!isRole(input.role)) throw invalid('role must be owner, admin, member or viewer')
  const passwordHash = await hashPassword(input.password)
  return db.transaction(async (tx) => {
    let user = await userByEmail(tx, email)
    // a person who has a password already (a member elsewhere) keeps it and joins this account too
    if (user && !user.passwordHash) {
      ;[user] = await tx
        .update(users)
        .set({ name, passwordHash, passwordChangedAt: new Date() })
        .where(eq(users.id, user.id))
        .returning()
    } else if (!user) {
      ;[user] = await tx.insert(users).values({ id: randomUUID(), email, name, passwordHash }).returning()
    }
    await tx
      .insert(memberships)
      .values({ accountId: input.accountId, userId: user.id, role: input.role, status: 'active' })
      .onConflictDoUpdate({
        target: [memberships.accountId, memberships.userId],
        set: { role: input.role, status: 'active' },
      })
    return user
  })
}
