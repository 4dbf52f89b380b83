import { eq } from 'drizzle-orm'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply } from 'fastify'
import type { Static } from 'typebox'
import { accounts } from '../../platform/auth/auth.tables.ts'
import { users } from '../../platform/auth/people.tables.ts'
import { clearedSessionCookie, csrfTokenFor, resolveSession, sessionCookie } from '../../platform/auth/sessions.ts'
import { AppError } from '../../platform/http/errors.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import { memoryRateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import { renewInvitation } from './people.invitations.ts'
import { createKey, getKey, listKeys, revokeKey, updateKey } from './people.keys.ts'
import { closePeopleMail, invitationMail, type PeopleMailChannels, resetMail, sendPeopleMail } from './people.mail.ts'
import {
  AcceptBody,
  Accepted,
  IdParams,
  InvitationResponse,
  InviteBody,
  InviteResponse,
  KeyBody,
  KeyChangeBody,
  KeyCreated,
  KeyResponse,
  KeysResponse,
  LanguageBody,
  MemberResponse,
  PasswordBody,
  ResetCompleteBody,
  ResetRequestBody,
  RoleBody,
  SessionResponse,
  SetupBody,
  SetupLinkResponse,
  SignInBody,
  TokenParams,
} from './people.schemas.ts'
import {
  acceptInvitation,
  changePassword,
  completePasswordReset,
  completeSetup,
  invitationInfo,
  invite,
  membershipsOf,
  normalizeEmail,
  removeMember,
  revokeSession,
  setRole,
  signIn,
  startPasswordReset,
  usableToken,
} from './people.service.ts'

/** Sign-in attempts per minute from one address and for one e-mail address. */
export const SIGN_IN_PER_ADDRESS = 10
export const SIGN_IN_PER_ACCOUNT = 5

const tags = ['app']

/**
 * People's routes under /app (sign-in, setup, invitations, resets, API keys, team management). Everything but the
 * sign-in family needs a session; every POST, PATCH and DELETE with a session needs its CSRF token (the platform's
 * /app plugin checks both, and `config.permission`).
 */
export function peopleAppRoutes(deps: PlatformDeps, channels: PeopleMailChannels) {
  const db = deps.database.orm
  const { clock, config } = deps
  const secure = config.publicUrl.startsWith('https://')
  const limiter = deps.rateLimiter ?? memoryRateLimiter()

  const startSession = (reply: FastifyReply, token: string) => reply.header('set-cookie', sessionCookie(token, secure))

  async function sessionView(token: string) {
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

  async function limited(key: string, limit: number) {
    const rate = await limiter.consume(key, limit)
    if (!rate.allowed) {
      throw new AppError(429, 'rate_limited', 'Too many sign-in attempts; wait a minute and try again', {
        headers: { 'retry-after': String(rate.resetSeconds) },
      })
    }
  }

  async function accountName(accountId: string): Promise<{ name: string; language: string }> {
    const [row] = await db
      .select({ name: accounts.name, language: accounts.language })
      .from(accounts)
      .where(eq(accounts.id, accountId))
    return row ?? { name: '', language: 'de' }
  }

  /**
   * Work started after a request's answer (a password reset's look-up and e-mail). It lives in this process only: a
   * reset lost to a crash is asked for again, and the durable job queue needs an account, which is what must not
   * be looked up before the answer. Closing the server waits for it.
   */
  const background = new Set<Promise<void>>()
  function inBackground(log: FastifyBaseLogger, task: () => Promise<void>): void {
    const run = new Promise<void>((resolve) => setImmediate(resolve))
      .then(task)
      .catch((error: unknown) => log.error({ err: error }, 'background work of a public request failed'))
      .finally(() => background.delete(run))
    background.add(run)
  }

  return async (app: FastifyInstance): Promise<void> => {
    app.addHook('onClose', async () => {
      await Promise.allSettled([...background])
      closePeopleMail()
    })

    app.get(
      '/session',
      {
        schema: {
          operationId: 'getSession',
          summary: 'The signed-in member, their account, role and CSRF token',
          description:
            'The CSRF token it answers goes into X-CSRF-Token on every POST, PUT, PATCH and DELETE with the session.',
          tags,
          response: { 200: SessionResponse },
        },
      },
      async (request) => sessionView(request.appSession!.token),
    )

    app.put<{ Body: Static<typeof LanguageBody> }>(
      '/session/language',
      {
        schema: {
          operationId: 'setSessionLanguage',
          summary: "The member's interface language",
          description: 'Sets the language of the web app for the signed-in member (de or en); answers the session.',
          tags,
          body: LanguageBody,
          response: { 200: SessionResponse },
        },
      },
      async (request) => {
        await db.update(users).set({ language: request.body.language }).where(eq(users.id, request.appSession!.userId))
        return sessionView(request.appSession!.token)
      },
    )

    app.post<{ Body: Static<typeof SignInBody> }>(
      '/sign-in',
      {
        config: { public: true },
        schema: {
          operationId: 'signIn',
          summary: 'Sign in with e-mail and password',
          description:
            'Sets the session cookie. A wrong e-mail address or password is 401 sign_in_failed; attempts are rate-limited.',
          tags,
          body: SignInBody,
          response: { 200: SessionResponse },
        },
      },
      async (request, reply) => {
        const email = request.body.email.trim().toLowerCase()
        await limited(`signin-ip:${request.ip}`, SIGN_IN_PER_ADDRESS)
        await limited(`signin-user:${email}`, SIGN_IN_PER_ACCOUNT)
        const result = await signIn(db, clock, { email, password: request.body.password })
        if (!result) {
          throw new AppError(401, 'sign_in_failed', 'E-mail address or password is wrong', {
            key: 'anmeldung_fehlgeschlagen',
          })
        }
        startSession(reply, result.session.token)
        return sessionView(result.session.token)
      },
    )

    app.post(
      '/sign-out',
      {
        schema: {
          operationId: 'signOut',
          summary: 'Sign out: the session ends on the server',
          description: 'Ends the session on the server and clears its cookie; answers 204.',
          tags,
        },
      },
      async (request, reply) => {
        await revokeSession(db, clock, request.appSession!.sessionId)
        reply.header('set-cookie', clearedSessionCookie(secure)).code(204)
      },
    )

    app.post<{ Body: Static<typeof PasswordBody> }>(
      '/password',
      {
        schema: {
          operationId: 'changePassword',
          summary: 'Change the password: every session of the member ends, this browser gets a new one',
          description:
            'Needs the current password. Every session of the member ends; this browser gets a new session cookie.',
          tags,
          body: PasswordBody,
          response: { 200: SessionResponse },
        },
      },
      async (request, reply) => {
        const session = request.appSession!
        const next = await changePassword(db, clock, {
          userId: session.userId,
          accountId: session.tenant.accountId,
          current: request.body.current_password,
          next: request.body.new_password,
        })
        startSession(reply, next.token)
        return sessionView(next.token)
      },
    )

    app.get<{ Params: Static<typeof TokenParams> }>(
      '/setup/:token',
      {
        config: { public: true },
        schema: {
          operationId: 'getSetupLink',
          summary: 'Whether a first-start setup link is still valid',
          description:
            'Answers the account the link sets up; a link that is unknown, used or expired is 410 link_invalid.',
          tags,
          params: TokenParams,
          response: { 200: SetupLinkResponse },
        },
      },
      async (request) => {
        const row = await usableToken(db, clock, 'setup', request.params.token)
        if (!row?.accountId) {
          throw new AppError(410, 'link_invalid', 'This link is invalid, was already used or has expired', {
            key: 'link_ungueltig',
          })
        }
        return { valid: true, account: await accountName(row.accountId) }
      },
    )

    app.post<{ Body: Static<typeof SetupBody> }>(
      '/setup',
      {
        config: { public: true },
        schema: {
          operationId: 'completeSetup',
          summary: 'Create the owner through the first-start link',
          description:
            'Creates the account owner with the link of the first start, signs them in and answers 201; the link is used up.',
          tags,
          body: SetupBody,
          response: { 201: SessionResponse },
        },
      },
      async (request, reply) => {
        await limited(`setup-ip:${request.ip}`, SIGN_IN_PER_ADDRESS)
        const result = await completeSetup(db, clock, request.body)
        startSession(reply, result.session.token).code(201)
        return sessionView(result.session.token)
      },
    )

    app.get<{ Params: Static<typeof TokenParams> }>(
      '/invitations/:token',
      {
        config: { public: true },
        schema: {
          operationId: 'getInvitation',
          summary: 'What an invitation link offers',
          description: 'The account and role an invitation link offers, read before accepting it.',
          tags,
          params: TokenParams,
          response: { 200: InvitationResponse },
        },
      },
      async (request) => {
        const info = await invitationInfo(db, clock, request.params.token)
        return { ...info, account_name: (await accountName(info.account_id)).name }
      },
    )

    app.post<{ Body: Static<typeof AcceptBody> }>(
      '/invitations/accept',
      {
        config: { public: true },
        schema: {
          operationId: 'acceptInvitation',
          summary: 'Accept an invitation',
          description: 'Joins the account with the role the invitation link offers, signs in and answers 201.',
          tags,
          body: AcceptBody,
          response: { 201: SessionResponse },
        },
      },
      async (request, reply) => {
        await limited(`accept-ip:${request.ip}`, SIGN_IN_PER_ADDRESS)
        const result = await acceptInvitation(db, clock, request.body)
        startSession(reply, result.session.token).code(201)
        return sessionView(result.session.token)
      },
    )

    app.post<{ Body: Static<typeof ResetRequestBody> }>(
      '/password-reset',
      {
        config: { public: true },
        schema: {
          operationId: 'requestPasswordReset',
          summary: 'Send a password-reset link',
          description: 'Answers 202 whether or not the address belongs to someone, so it reveals no member.',
          tags,
          body: ResetRequestBody,
          response: { 202: Accepted },
        },
      },
      async (request, reply) => {
        let email: string
        try {
          email = normalizeEmail(request.body.email)
        } catch {
          reply.code(202)
          return { accepted: true }
        }
        await limited(`reset-ip:${request.ip}`, SIGN_IN_PER_ADDRESS)
        await limited(`reset-user:${email}`, SIGN_IN_PER_ACCOUNT)
        // the look-up, the link and the e-mail happen after the answer: its timing cannot tell who is a member
        inBackground(request.log, async () => {
          const started = await startPasswordReset(db, clock, email)
          if (!started) return
          const language = started.user.language === 'en' ? 'en' : 'de'
          const link = `${config.publicUrl}/reset/${started.token}`
          const accountId = await firstMembership(started.user.id)
          const sent = await sendPeopleMail(deps, channels, accountId, {
            to: started.user.email,
            ...resetMail(language, { link }),
          })
          if (!sent) request.log.warn('a password-reset e-mail could not be sent: set HEROLD_SMTP_URL')
        })
        reply.code(202)
        return { accepted: true }
      },
    )

    async function firstMembership(userId: string): Promise<string | null> {
      return (await membershipsOf(db, userId)).find((m) => m.status === 'active')?.accountId ?? null
    }

    app.post<{ Body: Static<typeof ResetCompleteBody> }>(
      '/password-reset/complete',
      {
        config: { public: true },
        schema: {
          operationId: 'completePasswordReset',
          summary: 'Set a new password through a reset link',
          description: 'Sets the new password with the link of a reset e-mail and answers 204; the link is used up.',
          tags,
          body: ResetCompleteBody,
        },
      },
      async (request, reply) => {
        await completePasswordReset(db, clock, request.body)
        reply.code(204)
      },
    )

    // API keys of the account (owners and admins)
    app.get(
      '/keys',
      {
        config: { permission: 'keys:manage' },
        schema: {
          operationId: 'listApiKeys',
          summary: "The account's API keys (never their secrets)",
          description:
            'Every API key of the account with its name, prefix and scopes, revoked ones too; the secrets are never shown again.',
          tags,
          response: { 200: KeysResponse },
        },
      },
      async (request) => {
        const session = request.appSession!
        return { keys: await listKeys(db, session.tenant.accountId) }
      },
    )

    app.post<{ Body: Static<typeof KeyBody> }>(
      '/keys',
      {
        config: { permission: 'keys:manage' },
        schema: {
          operationId: 'createApiKey',
          summary: 'Create an API key; its secret is in this answer only',
          description: 'Answers 201 with the key’s secret, shown this once; store it, Herold keeps only its hash.',
          tags,
          body: KeyBody,
          response: { 201: KeyCreated },
        },
      },
      async (request, reply) => {
        const session = request.appSession!
        const created = await createKey(db, {
          accountId: session.tenant.accountId,
          name: request.body.name,
          scopes: request.body.scopes,
        })
        reply.code(201)
        return created
      },
    )

    app.delete<{ Params: Static<typeof IdParams> }>(
      '/keys/:id',
      {
        config: { permission: 'keys:manage' },
        schema: {
          operationId: 'revokeApiKey',
          summary: 'Revoke an API key (at once, on every process)',
          description: 'The key stops working at once on every process; answers the revoked key.',
          tags,
          params: IdParams,
          response: { 200: KeyResponse },
        },
      },
      async (request) => {
        const session = request.appSession!
        return { key: await revokeKey(db, clock, session.tenant.accountId, request.params.id) }
      },
    )

    app.get<{ Params: Static<typeof IdParams> }>(
      '/keys/:id',
      {
        config: { permission: 'keys:manage' },
        schema: {
          operationId: 'getApiKey',
          summary: 'One API key (never its secret)',
          description: 'The key’s name, prefix, scopes and whether it is revoked; its secret is never shown again.',
          tags,
          params: IdParams,
          response: { 200: KeyResponse },
        },
      },
      async (request) => {
        const session = request.appSession!
        return { key: await getKey(db, session.tenant.accountId, request.params.id) }
      },
    )

    app.patch<{ Params: Static<typeof IdParams>; Body: Static<typeof KeyChangeBody> }>(
      '/keys/:id',
      {
        config: { permission: 'keys:manage' },
        schema: {
          operationId: 'updateApiKey',
          summary: 'Rename an API key or narrow its scopes',
          description:
            'A key never gains a scope after it was issued (403 apikey_scope_erweiterung: create a new key instead); a revoked key is 409 key_revoked. Takes effect at once on every process.',
          tags,
          params: IdParams,
          body: KeyChangeBody,
          response: { 200: KeyResponse },
        },
      },
      async (request) => {
        const session = request.appSession!
        return { key: await updateKey(db, session.tenant.accountId, request.params.id, request.body) }
      },
    )

    // Team management (owners and admins; owners alone touch owners)
    app.post<{ Params: Static<typeof IdParams> }>(
      '/team/invitations/:id/resend',
      {
        config: { permission: 'team:manage' },
        schema: {
          operationId: 'resendInvitation',
          summary: 'Send an invitation again with a new link',
          description:
            'For a person still invited (the id is their member id): a new link valid 7 days goes out by e-mail and earlier links stop working; when no e-mail can be sent the answer carries invite_url. An active member is 409 already_member.',
          tags,
          params: IdParams,
          response: { 200: InviteResponse },
        },
      },
      async (request) => {
        const session = request.appSession!
        const { member, token } = await renewInvitation(db, clock, {
          accountId: session.tenant.accountId,
          memberId: request.params.id,
          actorRole: session.role,
        })
        const link = `${config.publicUrl}/invitations/${token}`
        const language = session.tenant.account.language === 'en' ? 'en' : 'de'
        const sent = await sendPeopleMail(deps, channels, session.tenant.accountId, {
          to: member.email,
          ...invitationMail(language, { accountName: session.tenant.account.name, link, role: member.role }),
        })
        return { member, email_sent: sent, ...(sent ? {} : { invite_url: link }) }
      },
    )

    app.post<{ Body: Static<typeof InviteBody> }>(
      '/team/invitations',
      {
        config: { permission: 'team:manage' },
        schema: {
          operationId: 'inviteTeamMember',
          summary: 'Invite a person by e-mail',
          description:
            'The invitation link goes out by e-mail (server SMTP, else the account e-mail channel). When no e-mail can be sent, the answer carries `invite_url` so the inviter can pass it on.',
          tags,
          body: InviteBody,
          response: { 201: InviteResponse },
        },
      },
      async (request, reply) => {
        const session = request.appSession!
        const { member, token } = await invite(db, clock, {
          accountId: session.tenant.accountId,
          email: request.body.email,
          role: request.body.role,
          actorRole: session.role,
        })
        const link = `${config.publicUrl}/invitations/${token}`
        const language = session.tenant.account.language === 'en' ? 'en' : 'de'
        const sent = await sendPeopleMail(deps, channels, session.tenant.accountId, {
          to: member.email,
          ...invitationMail(language, { accountName: session.tenant.account.name, link, role: member.role }),
        })
        reply.code(201)
        return { member, email_sent: sent, ...(sent ? {} : { invite_url: link }) }
      },
    )

    app.patch<{ Params: Static<typeof IdParams>; Body: Static<typeof RoleBody> }>(
      '/team/:id',
      {
        config: { permission: 'team:manage' },
        schema: {
          operationId: 'changeTeamMemberRole',
          summary: "Change a member's role",
          description: 'Sets the role of a member of the account; the account always keeps an owner.',
          tags,
          params: IdParams,
          body: RoleBody,
          response: { 200: MemberResponse },
        },
      },
      async (request) => {
        const session = request.appSession!
        return {
          member: await setRole(db, {
            accountId: session.tenant.accountId,
            userId: request.params.id,
            role: request.body.role,
            actorRole: session.role,
          }),
        }
      },
    )

    app.delete<{ Params: Static<typeof IdParams> }>(
      '/team/:id',
      {
        config: { permission: 'team:manage' },
        schema: {
          operationId: 'removeTeamMember',
          summary: 'Remove a member from the account (their sessions end)',
          description: 'The member leaves the account and their sessions end; the account always keeps an owner.',
          tags,
          params: IdParams,
          response: { 200: MemberResponse },
        },
      },
      async (request) => {
        const session = request.appSession!
        return {
          member: await removeMember(db, clock, {
            accountId: session.tenant.accountId,
            userId: request.params.id,
            actorRole: session.role,
          }),
        }
      },
    )
  }
}
