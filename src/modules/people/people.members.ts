import { and, asc, count, eq, ne } from 'drizzle-orm'
import type { MemberLeft } from '../../platform/auth/member-left.ts'
import { memberships, type Role, users } from '../../platform/auth/people.tables.ts'
import { type Clock, systemClock } from '../../platform/clock.ts'
import { inAccount } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { databaseOffset, type Page, toPage } from '../../platform/http/pagination.ts'
import { endInviteLinks, invalid, isRole } from './people.credentials.ts'
import { revokeUserSessions } from './people.sessions.ts'

export type { MemberLeft }

export interface MemberView {
  id: string
  name: string
  email: string
  role: Role
  status: 'invited' | 'active'
  last_active_at: string | null
  created_at: string
}

export function memberView(row: {
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

export const memberColumns = {
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
      inAccount(
        memberships,
        accountId,
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
export function assertMayManage(actorRole: Role, target: Role, next?: Role): void {
  const owner = actorRole === 'owner'
  if (actorRole !== 'admin' && !owner) {
    throw new AppError(403, 'forbidden', 'Only owners and admins manage the team', { key: 'rolle_fehlt' })
  }
  if (!owner && (target === 'owner' || next === 'owner')) {
    throw new AppError(403, 'forbidden', 'Only an owner can change owners', { key: 'rolle_fehlt' })
  }
}

/** Changes a member's role; one made a viewer has left the answering (`memberLeft`, in the same transaction). */
export async function setRole(
  db: Db,
  input: { accountId: string; userId: string; role: Role; actorRole: Role; actorId?: string | null },
  reactions: { clock: Clock; memberLeft: readonly MemberLeft[] } = { clock: systemClock, memberLeft: [] },
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
    if (member.role !== 'viewer' && input.role === 'viewer') {
      const left = { accountId: input.accountId, userId: input.userId, actorId: input.actorId ?? null }
      for (const react of reactions.memberLeft)
        await react(tx, reactions.clock, { ...left, reason: 'member_role_changed' })
    }
    return { ...member, role: input.role }
  })
}

/**
 * Removes a member from an account: their sessions in it end at once; the user stays for other accounts. What they
 * held goes back (`memberLeft`), in the same transaction.
 */
export async function removeMember(
  db: Db,
  clock: Clock,
  input: { accountId: string; userId: string; actorRole: Role; actorId?: string | null },
  memberLeft: readonly MemberLeft[] = [],
): Promise<MemberView> {
  return db.transaction(async (tx) => {
    const member = await getMember(tx, input.accountId, input.userId)
    assertMayManage(input.actorRole, member.role)
    if (member.role === 'owner' && (await activeOwners(tx, input.accountId, member.id)) === 0) throw lastOwner()
    await tx
      .delete(memberships)
      .where(and(eq(memberships.accountId, input.accountId), eq(memberships.userId, input.userId)))
    await revokeUserSessions(tx, clock, input.userId, { accountId: input.accountId })
    await endInviteLinks(tx, clock, input)
    const left = { accountId: input.accountId, userId: input.userId, actorId: input.actorId ?? null }
    for (const react of memberLeft) await react(tx, clock, { ...left, reason: 'member_removed' })
    return member
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
