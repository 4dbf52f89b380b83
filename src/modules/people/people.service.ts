import { randomBytes, randomUUID } from 'node:crypto'
import { hash, verify } from '@node-rs/argon2'
import { and, asc, count, eq, gt, isNull, ne, sql } from 'drizzle-orm'
import { hashSecret } from '../../platform/auth/credentials.ts'
import { memberships, ROLES, type Role, sessions, users, userTokens } from '../../platform/auth/people.tables.ts'
import { createSession } from '../../platform/auth/sessions.ts'
import { issueToken, type TokenKind } from '../../platform/auth/user-tokens.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { databaseOffset, type Page, toPage } from '../../platform/http/pagination.ts'

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

const invalid = (message: string, key = 'ungueltig') => new AppError(400, 'bad_request', message, { key })

export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase()
  if (email.length > 254 || !EMAIL.test(email)) throw invalid('email is not a valid e-mail address')
  return email
}

function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    throw invalid(`password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`, 'passwort_zu_kurz')
  }
}

function checkName(raw: string): string {
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

async function useToken(db: Db, clock: Clock, row: TokenRow): Promise<void> {
  await db.update(userTokens).set({ usedAt: clock.now() }).where(eq(userTokens.tokenHash, row.tokenHash))
}

const invalidLink = () =>
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
  await db
    .update(sessions)
    .set({ revokedAt: clock.now() })
    .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)))
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

export interface MemberView {
  id: string
  name: string
  email: string
  role: Role
  status: 'invited' | 'active'
  last_active_at: string | null
  created_at: string
}

function memberView(row: {
  user: { id: string; name: string; email: string }
  role: Role
  status: 'invited' | 'active'
  lastActiveAt: Date | null
  createdAt: Date
}): MemberView {
  return {
    id: row.user.id,
    // an invited person's name is theirs, from another account perhaps, until they accept: the account sees none
    name: row.status === 'invited' ? '' : row.user.name,
    email: row.user.email,
    role: row.role,
    status: row.status,
    last_active_at: row.lastActiveAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
  }
}

const memberColumns = {
  user: { id: users.id, name: users.name, email: users.email },
  role: memberships.role,
  status: memberships.status,
  lastActiveAt: memberships.lastActiveAt,
  createdAt: memberships.createdAt,
}

export async function listMembers(db: Db, accountId: string, limit: number, offset: number): Promise<Page<MemberView>> {
  const rows = await db
    .select(memberColumns)
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(eq(memberships.accountId, accountId))
    .orderBy(asc(memberships.createdAt), asc(memberships.userId))
    .limit(limit + 1)
    .offset(databaseOffset(offset))
  const page = toPage(rows, limit, offset)
  return { ...page, items: page.items.map(memberView) }
}

export async function getMember(db: Db, accountId: string, userId: string): Promise<MemberView> {
  const [row] = /^[0-9a-f-]{36}$/i.test(userId)
    ? await db
        .select(memberColumns)
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(and(eq(memberships.accountId, accountId), eq(memberships.userId, userId)))
    : []
  if (!row) throw new AppError(404, 'not_found', 'No such team member')
  return memberView(row)
}

async function activeOwners(db: Db, accountId: string, except: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(memberships)
    .where(
      and(
        eq(memberships.accountId, accountId),
        eq(memberships.role, 'owner'),
        eq(memberships.status, 'active'),
        ne(memberships.userId, except),
      ),
    )
  return Number(row.n)
}

const lastOwner = () =>
  new AppError(409, 'last_owner', 'An account keeps at least one active owner', { key: 'letzter_inhaber' })

/**
 * Who may change whom: owners anyone; admins anyone but owners, and nobody into an owner. Checked here, on the
 * server, whatever the app shows.
 */
function assertMayManage(actorRole: Role, target: Role, next?: Role): void {
  const owner = actorRole === 'owner'
  if (actorRole !== 'admin' && !owner) {
    throw new AppError(403, 'forbidden', 'Only owners and admins manage the team', { key: 'rolle_fehlt' })
  }
  if (!owner && (target === 'owner' || next === 'owner')) {
    throw new AppError(403, 'forbidden', 'Only an owner can change owners', { key: 'rolle_fehlt' })
  }
}

export async function setRole(
  db: Db,
  input: { accountId: string; userId: string; role: Role; actorRole: Role },
): Promise<MemberView> {
  if (!isRole(input.role)) throw invalid('role must be owner, admin, member or viewer')
  return db.transaction(async (tx) => {
    const member = await getMember(tx, input.accountId, input.userId)
    assertMayManage(input.actorRole, member.role, input.role)
    if (member.role === 'owner' && input.role !== 'owner' && (await activeOwners(tx, input.accountId, member.id)) === 0)
      throw lastOwner()
    await tx
      .update(memberships)
      .set({ role: input.role })
      .where(and(eq(memberships.accountId, input.accountId), eq(memberships.userId, input.userId)))
    return { ...member, role: input.role }
  })
}

/** Removes a member from an account: their sessions in it end at once; the user stays for other accounts. */
export async function removeMember(
  db: Db,
  clock: Clock,
  input: { accountId: string; userId: string; actorRole: Role },
): Promise<MemberView> {
  return db.transaction(async (tx) => {
    const member = await getMember(tx, input.accountId, input.userId)
    assertMayManage(input.actorRole, member.role)
    if (member.role === 'owner' && (await activeOwners(tx, input.accountId, member.id)) === 0) throw lastOwner()
    await tx
      .delete(memberships)
      .where(and(eq(memberships.accountId, input.accountId), eq(memberships.userId, input.userId)))
    await revokeUserSessions(tx, clock, input.userId, { accountId: input.accountId })
    await tx
      .update(userTokens)
      .set({ usedAt: clock.now() })
      .where(
        and(
          eq(userTokens.accountId, input.accountId),
          eq(userTokens.userId, input.userId),
          eq(userTokens.kind, 'invite'),
          isNull(userTokens.usedAt),
        ),
      )
    return member
  })
}

/** An invitation: the member appears as `invited` until they accept the link. */
export async function invite(
  db: Db,
  clock: Clock,
  input: { accountId: string; email: string; role: Role; actorRole: Role },
): Promise<{ member: MemberView; token: string }> {
  const email = normalizeEmail(input.email)
  if (!isRole(input.role)) throw invalid('role must be owner, admin, member or viewer')
  assertMayManage(input.actorRole, input.role, input.role)
  return db.transaction(async (tx) => {
    let user = await userByEmail(tx, email)
    if (!user) [user] = await tx.insert(users).values({ id: randomUUID(), email }).returning()
    const [existing] = await tx
      .select({ status: memberships.status })
      .from(memberships)
      .where(and(eq(memberships.accountId, input.accountId), eq(memberships.userId, user.id)))
    if (existing?.status === 'active') {
      throw new AppError(409, 'already_member', `${email} is already a member of this account`, {
        key: 'schon_mitglied',
      })
    }
    await tx
      .insert(memberships)
      .values({
        accountId: input.accountId,
        userId: user.id,
        role: input.role,
        status: 'invited',
        createdAt: clock.now(),
      })
      .onConflictDoUpdate({ target: [memberships.accountId, memberships.userId], set: { role: input.role } })
    const token = await issueToken(tx, clock, {
      kind: 'invite',
      ttlMs: INVITE_TTL_MS,
      accountId: input.accountId,
      userId: user.id,
      email,
      role: input.role,
    })
    // the answer echoes the address as the inviter gave it, nothing of a user who may exist elsewhere
    return { member: { ...(await getMember(tx, input.accountId, user.id)), email }, token }
  })
}

/**
 * What an invitation link shows before it is accepted: only what the inviter gave (the link may have been handed to
 * the inviter), never whether the address has a Herold sign-in already. The form is the same for everyone.
 */
export async function invitationInfo(
  db: Db,
  clock: Clock,
  token: string,
): Promise<{ email: string; role: Role; account_id: string; needs_password: true }> {
  const row = await usableToken(db, clock, 'invite', token)
  if (!row?.userId || !row.accountId || !row.email || !row.role) throw invalidLink()
  return { email: row.email, role: row.role, account_id: row.accountId, needs_password: true }
}

/**
 * Accepts an invitation. Everyone gives a name and a password, checked the same way first (so the errors cannot
 * tell whether the address has a sign-in). A new person's name and password are set; a person who has a password
 * already (a member of another account) proves it with that password and keeps their name. Then the membership is
 * active and a session starts in the inviting account.
 */
export async function acceptInvitation(
  db: Db,
  clock: Clock,
  input: { token: string; name?: string; password: string },
): Promise<{ user: User; accountId: string; session: { id: string; token: string } }> {
  const info = await invitationInfo(db, clock, input.token)
  const name = checkName(input.name ?? '')
  checkPassword(input.password)
  let passwordHash: string | null = null
  const existing = await userByEmail(db, info.email)
  if (existing?.passwordHash) {
    if (!(await verifyPassword(existing.passwordHash, input.password))) {
      throw new AppError(403, 'forbidden', 'The password is wrong', { key: 'passwort_falsch' })
    }
  } else {
    passwordHash = await hashPassword(input.password)
  }
  return db.transaction(async (tx) => {
    const row = await usableToken(tx, clock, 'invite', input.token, { lock: true })
    if (!row?.userId || !row.accountId) throw invalidLink()
    const [membership] = await tx
      .update(memberships)
      .set({ status: 'active' })
      .where(and(eq(memberships.accountId, row.accountId), eq(memberships.userId, row.userId)))
      .returning()
    if (!membership) throw invalidLink()
    let [user] = await tx.select().from(users).where(eq(users.id, row.userId))
    if (passwordHash) {
      ;[user] = await tx
        .update(users)
        .set({ name, passwordHash, passwordChangedAt: clock.now() })
        .where(eq(users.id, row.userId))
        .returning()
    }
    await useToken(tx, clock, row)
    const session = await createSession(tx, clock, { userId: row.userId, accountId: row.accountId })
    return { user, accountId: row.accountId, session }
  })
}

/** Every membership of a user (the app's account switcher and the CLI's list). */
export async function membershipsOf(db: Db, userId: string) {
  return db
    .select({ accountId: memberships.accountId, role: memberships.role, status: memberships.status })
    .from(memberships)
    .where(eq(memberships.userId, userId))
    .orderBy(asc(memberships.createdAt))
}
