import { and, desc, eq, isNull, ne } from 'drizzle-orm'
import { type Static, Type } from 'typebox'
import { hashSecret } from '../../platform/auth/credentials.ts'
import { memberships, type Role, users, userTokens } from '../../platform/auth/people.tables.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { getMember, invite } from './people.service.ts'

/** Pending invitations of an account: who was invited, with which role, and whether the link still works. */

export const Invitation = Type.Object(
  {
    member_id: Type.String({ format: 'uuid', description: 'the invited person’s id (as in list_team_members)' }),
    email: Type.String(),
    role: Type.String(),
    invited_at: Type.String({ format: 'date-time' }),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'when the newest link stops working; null: no usable link (expired or never sent)',
    }),
    expired: Type.Boolean({ description: 'no link works any more: resend the invitation' }),
  },
  { title: 'Invitation' },
)

export async function listInvitations(db: Db, clock: Clock, accountId: string) {
  const invited = await db
    .select({ id: users.id, email: users.email, role: memberships.role, createdAt: memberships.createdAt })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.accountId, accountId), eq(memberships.status, 'invited')))
    .orderBy(desc(memberships.createdAt), desc(memberships.userId))
  const now = clock.now()
  const result: Array<Static<typeof Invitation>> = []
  for (const person of invited) {
    const [token] = await db
      .select({ expiresAt: userTokens.expiresAt, createdAt: userTokens.createdAt })
      .from(userTokens)
      .where(
        and(
          eq(userTokens.accountId, accountId),
          eq(userTokens.userId, person.id),
          eq(userTokens.kind, 'invite'),
          isNull(userTokens.usedAt),
        ),
      )
      .orderBy(desc(userTokens.expiresAt))
      .limit(1)
    const live = token && token.expiresAt.getTime() > now.getTime()
    result.push({
      member_id: person.id,
      email: person.email,
      role: person.role,
      invited_at: (token?.createdAt ?? person.createdAt).toISOString(),
      expires_at: live ? token.expiresAt.toISOString() : null,
      expired: !live,
    })
  }
  return result
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
  await db
    .update(userTokens)
    .set({ usedAt: clock.now() })
    .where(
      and(
        eq(userTokens.accountId, input.accountId),
        eq(userTokens.userId, input.memberId),
        eq(userTokens.kind, 'invite'),
        isNull(userTokens.usedAt),
        ne(userTokens.tokenHash, hashSecret(renewed.token)),
      ),
    )
  return renewed
}
