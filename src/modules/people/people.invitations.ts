import { randomUUID } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import { hashSecret } from '../../platform/auth/credentials.ts'
import { memberships, type Role, users } from '../../platform/auth/people.tables.ts'
import { createSession } from '../../platform/auth/sessions.ts'
import { issueToken } from '../../platform/auth/user-tokens.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import {
  checkName,
  checkPassword,
  endInviteLinks,
  hashPassword,
  INVITE_TTL_MS,
  invalid,
  invalidLink,
  isRole,
  normalizeEmail,
  type User,
  usableToken,
  userByEmail,
  useToken,
  verifyPassword,
} from './people.credentials.ts'
import { assertMayManage, getMember, type MemberView } from './people.members.ts'

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

/** The invitation of an invited person (404 for anyone else; an active member is 409 already_member). */
export async function pendingInvitation(db: Db, accountId: string, memberId: string) {
  const member = await getMember(db, accountId, memberId)
  if (member.status !== 'invited') {
    throw new AppError(409, 'already_member', `${member.email} accepted the invitation already`, {
      key: 'schon_mitglied',
    })
  }
  return member
}

/**
 * A new invitation link for an invited person, with the role they were invited with; earlier links stop working.
 * Who may invite that role decides, as for a new invitation.
 */
export async function renewInvitation(
  db: Db,
  clock: Clock,
  input: { accountId: string; memberId: string; actorRole: Role },
) {
  const member = await pendingInvitation(db, input.accountId, input.memberId)
  const renewed = await invite(db, clock, {
    accountId: input.accountId,
    email: member.email,
    role: member.role,
    actorRole: input.actorRole,
  })
  await endInviteLinks(db, clock, {
    accountId: input.accountId,
    userId: input.memberId,
    keep: hashSecret(renewed.token),
  })
  return renewed
}
