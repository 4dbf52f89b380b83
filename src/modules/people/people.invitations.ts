import { and, eq, isNull, ne } from 'drizzle-orm'
import { hashSecret } from '../../platform/auth/credentials.ts'
import { type Role, userTokens } from '../../platform/auth/people.tables.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { getMember, invite } from './people.service.ts'

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
