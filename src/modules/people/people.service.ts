import type { Role } from '../../platform/auth/people.tables.ts'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import { AppError } from '../../platform/http/errors.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import { normalizeEmail, usableToken } from './people.credentials.ts'
import { acceptInvitation, invitationInfo, invite, pendingInvitation, renewInvitation } from './people.invitations.ts'
import { createKey, getKey, listKeys, revokeKey, updateKey } from './people.keys.ts'
import { invitationMail, type PeopleMailChannels, resetMail, sendPeopleMail } from './people.mail.ts'
import { getMember, listMembers, type MemberLeft, membershipsOf, removeMember, setRole } from './people.members.ts'
import {
  accountSummary,
  changePassword,
  completePasswordReset,
  completeSetup,
  revokeSession,
  sessionView,
  setLanguage,
  signIn,
  startPasswordReset,
} from './people.sessions.ts'

/** What the people service needs of the platform and of the other modules. */
export type PeopleDeps = Pick<PlatformDeps, 'database' | 'clock' | 'config'>
export interface PeopleNeeds {
  /** the account's e-mail channel, the way out for invitations and resets when the server has no SMTP settings */
  channels: PeopleMailChannels
  /** what other modules do when a member is removed or made a viewer, in that transaction (`reactions.memberLeft`) */
  memberLeft?: readonly MemberLeft[]
}

/** The role of the member acting; only a member (a web-app session or an assistant they signed in) manages the team. */
function actorRole(tenant: TenantContext): Role {
  const role = tenant.actor.role
  if (!role) throw new AppError(403, 'forbidden', 'Only a member can manage the team', { key: 'rolle_fehlt' })
  return role
}

/**
 * The people of the accounts: the team (members and their roles), invitations, API keys and the web app's sessions
 * (sign-in, setup, password changes and resets). The functions are in people.members.ts, people.invitations.ts,
 * people.keys.ts and people.sessions.ts; this service binds them to the process's database, clock and mail.
 */
export function createPeopleService(deps: PeopleDeps, needs: PeopleNeeds) {
  const db = deps.database.orm
  const { clock, config } = deps

  /** Mails an invitation link; when no e-mail can be sent, the answer carries the link to pass on. */
  async function mailInvitation(
    tenant: TenantContext,
    { member, token }: { member: Awaited<ReturnType<typeof getMember>>; token: string },
  ) {
    const link = `${config.publicUrl}/invitations/${token}`
    const language = tenant.account.language === 'en' ? 'en' : 'de'
    const sent = await sendPeopleMail(deps, needs.channels, tenant.accountId, {
      to: member.email,
      ...invitationMail(language, { accountName: tenant.account.name, link, role: member.role }),
    })
    return { member, email_sent: sent, ...(sent ? {} : { invite_url: link }) }
  }

  return {
    // the team
    listMembers: (tenant: TenantContext, page: { limit: number; offset: number }) =>
      listMembers(db, tenant.accountId, page.limit, page.offset),
    getMember: (tenant: TenantContext, userId: string) => getMember(db, tenant.accountId, userId),
    setRole: (tenant: TenantContext, userId: string, role: Role) =>
      setRole(
        db,
        {
          accountId: tenant.accountId,
          userId,
          role,
          actorRole: actorRole(tenant),
          actorId: tenant.actor.userId ?? null,
        },
        { clock, memberLeft: needs.memberLeft ?? [] },
      ),
    removeMember: (tenant: TenantContext, userId: string) =>
      removeMember(
        db,
        clock,
        { accountId: tenant.accountId, userId, actorRole: actorRole(tenant), actorId: tenant.actor.userId ?? null },
        needs.memberLeft ?? [],
      ),

    // invitations
    /** Whether the member acting may invite a person with this role (403 otherwise): only owners invite owners. */
    mayInvite(tenant: TenantContext, role: Role): void {
      if (actorRole(tenant) !== 'owner' && role === 'owner') {
        throw new AppError(403, 'forbidden', 'Only an owner can change owners', { key: 'rolle_fehlt' })
      }
    },
    /** Invites a person by e-mail with a role and mails them the link. */
    async invite(tenant: TenantContext, input: { email: string; role: Role }) {
      const invited = await invite(db, clock, { accountId: tenant.accountId, ...input, actorRole: actorRole(tenant) })
      return mailInvitation(tenant, invited)
    },
    /** The invitation of a person still invited (409 already_member for an active one). */
    pendingInvitation: (tenant: TenantContext, memberId: string) => pendingInvitation(db, tenant.accountId, memberId),
    /** A new invitation link for a person still invited, mailed; earlier links stop working. */
    async resendInvitation(tenant: TenantContext, memberId: string) {
      const renewed = await renewInvitation(db, clock, {
        accountId: tenant.accountId,
        memberId,
        actorRole: actorRole(tenant),
      })
      return mailInvitation(tenant, renewed)
    },
    /** What an invitation link offers, with the account's name. */
    async invitation(token: string) {
      const info = await invitationInfo(db, clock, token)
      return { ...info, account_name: (await accountSummary(db, info.account_id)).name }
    },
    acceptInvitation: (input: Parameters<typeof acceptInvitation>[2]) => acceptInvitation(db, clock, input),

    // API keys
    listKeys: (tenant: TenantContext) => listKeys(db, tenant.accountId),
    getKey: (tenant: TenantContext, id: string) => getKey(db, tenant.accountId, id),
    createKey: (tenant: TenantContext, input: { name: string; scopes: string[] }) =>
      createKey(db, { accountId: tenant.accountId, ...input }),
    /** A new key, refused (403 apikey_scope_fehlt) when it would get a scope the caller lacks. */
    createKeyWithin(tenant: TenantContext, input: { name: string; scopes: string[] }) {
      const beyond = input.scopes.filter((s) => !(tenant.actor.scopes as string[]).includes(s))
      if (beyond.length > 0) {
        throw new AppError(403, 'forbidden', `A key cannot get scopes the caller lacks: ${beyond.join(', ')}`, {
          key: 'apikey_scope_fehlt',
        })
      }
      return createKey(db, { accountId: tenant.accountId, ...input })
    },
    updateKey: (tenant: TenantContext, id: string, change: Parameters<typeof updateKey>[3]) =>
      updateKey(db, tenant.accountId, id, change),
    revokeKey: (tenant: TenantContext, id: string) => revokeKey(db, clock, tenant.accountId, id),

    // the web app's sessions
    sessionView: (token: string) => sessionView(db, clock, token),
    setLanguage: (userId: string, language: 'de' | 'en') => setLanguage(db, userId, language),
    signIn: (input: { email: string; password: string }) => signIn(db, clock, input),
    signOut: (sessionId: string) => revokeSession(db, clock, sessionId),
    changePassword: (input: Parameters<typeof changePassword>[2]) => changePassword(db, clock, input),
    /** The account a first-start link sets up; 410 link_invalid for one unknown, used or expired. */
    async setupLink(token: string) {
      const row = await usableToken(db, clock, 'setup', token)
      if (!row?.accountId) {
        throw new AppError(410, 'link_invalid', 'This link is invalid, was already used or has expired', {
          key: 'link_ungueltig',
        })
      }
      return { valid: true, account: await accountSummary(db, row.accountId) }
    },
    completeSetup: (input: Parameters<typeof completeSetup>[2]) => completeSetup(db, clock, input),
    /**
     * Starts a password reset and mails its link, when the address (already normalized) belongs to a member with a
     * password; false when an e-mail could not be sent, true otherwise (including when there is no such member).
     */
    async resetPassword(email: string): Promise<boolean> {
      const started = await startPasswordReset(db, clock, email)
      if (!started) return true
      const language = started.user.language === 'en' ? 'en' : 'de'
      const link = `${config.publicUrl}/reset/${started.token}`
      const accountId = (await membershipsOf(db, started.user.id)).find((m) => m.status === 'active')?.accountId ?? null
      return sendPeopleMail(deps, needs.channels, accountId, {
        to: started.user.email,
        ...resetMail(language, { link }),
      })
    },
    completePasswordReset: (input: Parameters<typeof completePasswordReset>[2]) =>
      completePasswordReset(db, clock, input),
    normalizeEmail,
  }
}

export type PeopleService = ReturnType<typeof createPeopleService>
