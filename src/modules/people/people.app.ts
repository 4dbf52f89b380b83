import type { FastifyBaseLogger, FastifyInstance, FastifyReply } from 'fastify'
import type { Static } from 'typebox'
import { clearedSessionCookie, sessionCookie } from '../../platform/auth/sessions.ts'
import { AppError } from '../../platform/http/errors.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import { memoryRateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import { closePeopleMail } from './people.mail.ts'
import type { PeopleServices } from './people.routes.ts'
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
import type { PeopleService } from './people.service.ts'

/** Sign-in attempts per minute from one address and for one e-mail address. */
export const SIGN_IN_PER_ADDRESS = 10
export const SIGN_IN_PER_ACCOUNT = 5

const tags = ['app']
const operation = operationsUsing<PeopleServices>()

// API keys of the account (owners and admins)

export const listApiKeys = operation({
  method: 'GET',
  path: '/keys',
  mount: 'app',
  permission: 'keys:manage',
  operationId: 'listApiKeys',
  summary: "The account's API keys (never their secrets)",
  description:
    'Every API key of the account with its name, prefix and scopes, revoked ones too; the secrets are never shown again.',
  tags,
  response: KeysResponse,
  handle: async ({ people }, { tenant }) => ({ keys: await people.listKeys(tenant) }),
})

export const createApiKey = operation({
  method: 'POST',
  path: '/keys',
  mount: 'app',
  permission: 'keys:manage',
  operationId: 'createApiKey',
  summary: 'Create an API key; its secret is in this answer only',
  description: 'Answers 201 with the key’s secret, shown this once; store it, Herold keeps only its hash.',
  tags,
  body: KeyBody,
  status: 201,
  response: KeyCreated,
  handle: ({ people }, { tenant, body }) => people.createKey(tenant, body),
})

export const revokeApiKey = operation({
  method: 'DELETE',
  path: '/keys/{id}',
  mount: 'app',
  permission: 'keys:manage',
  operationId: 'revokeApiKey',
  summary: 'Revoke an API key (at once, on every process)',
  description: 'The key stops working at once on every process; answers the revoked key.',
  tags,
  params: IdParams,
  response: KeyResponse,
  handle: async ({ people }, { tenant, params }) => ({ key: await people.revokeKey(tenant, params.id) }),
})

export const getApiKey = operation({
  method: 'GET',
  path: '/keys/{id}',
  mount: 'app',
  permission: 'keys:manage',
  operationId: 'getApiKey',
  summary: 'One API key (never its secret)',
  description: 'The key’s name, prefix, scopes and whether it is revoked; its secret is never shown again.',
  tags,
  params: IdParams,
  response: KeyResponse,
  handle: async ({ people }, { tenant, params }) => ({ key: await people.getKey(tenant, params.id) }),
})

export const updateApiKey = operation({
  method: 'PATCH',
  path: '/keys/{id}',
  mount: 'app',
  permission: 'keys:manage',
  operationId: 'updateApiKey',
  summary: 'Rename an API key or narrow its scopes',
  description:
    'A key never gains a scope after it was issued (403 apikey_scope_erweiterung: create a new key instead); a revoked key is 409 key_revoked. Takes effect at once on every process.',
  tags,
  params: IdParams,
  body: KeyChangeBody,
  response: KeyResponse,
  handle: async ({ people }, { tenant, params, body }) => ({ key: await people.updateKey(tenant, params.id, body) }),
})

// Team management (owners and admins; owners alone touch owners)

export const resendInvitation = operation({
  method: 'POST',
  path: '/team/invitations/{id}/resend',
  mount: 'app',
  permission: 'team:manage',
  operationId: 'resendInvitation',
  summary: 'Send an invitation again with a new link',
  description:
    'For a person still invited (the id is their member id): a new link valid 7 days goes out by e-mail and earlier links stop working; when no e-mail can be sent the answer carries invite_url. An active member is 409 already_member.',
  tags,
  params: IdParams,
  response: InviteResponse,
  handle: ({ people }, { tenant, params }) => people.resendInvitation(tenant, params.id),
})

export const inviteTeamMember = operation({
  method: 'POST',
  path: '/team/invitations',
  mount: 'app',
  permission: 'team:manage',
  operationId: 'inviteTeamMember',
  summary: 'Invite a person by e-mail',
  description:
    'The invitation link goes out by e-mail (server SMTP, else the account e-mail channel). When no e-mail can be sent, the answer carries `invite_url` so the inviter can pass it on.',
  tags,
  body: InviteBody,
  status: 201,
  response: InviteResponse,
  handle: ({ people }, { tenant, body }) => people.invite(tenant, body),
})

export const changeTeamMemberRole = operation({
  method: 'PATCH',
  path: '/team/{id}',
  mount: 'app',
  permission: 'team:manage',
  operationId: 'changeTeamMemberRole',
  summary: "Change a member's role",
  description: 'Sets the role of a member of the account; the account always keeps an owner.',
  tags,
  params: IdParams,
  body: RoleBody,
  response: MemberResponse,
  handle: async ({ people }, { tenant, params, body }) => ({
    member: await people.setRole(tenant, params.id, body.role),
  }),
})

export const removeTeamMember = operation({
  method: 'DELETE',
  path: '/team/{id}',
  mount: 'app',
  permission: 'team:manage',
  operationId: 'removeTeamMember',
  summary: 'Remove a member from the account (their sessions end)',
  description: 'The member leaves the account and their sessions end; the account always keeps an owner.',
  tags,
  params: IdParams,
  response: MemberResponse,
  handle: async ({ people }, { tenant, params }) => ({ member: await people.removeMember(tenant, params.id) }),
})

/**
 * People's routes under /app (sign-in, setup, invitations, resets, API keys, team management). Everything but the
 * sign-in family needs a session; every POST, PATCH and DELETE with a session needs its CSRF token (the platform's
 * /app plugin checks both, and `config.permission`). The sign-in family sets or clears the session cookie, so it
 * stays plain routes; the keys and team operations are shared with the tools.
 */
export function peopleAppRoutes(deps: Pick<PlatformDeps, 'config' | 'rateLimiter'>, people: PeopleService) {
  const secure = deps.config.publicUrl.startsWith('https://')
  const limiter = deps.rateLimiter ?? memoryRateLimiter()

  /** The session cookie on the answer (200, or 201 for a new member) and the session it starts as its body. */
  const signedIn = (reply: FastifyReply, token: string, status: 200 | 201 = 200) => {
    reply.header('set-cookie', sessionCookie(token, secure)).code(status)
    return people.sessionView(token)
  }

  async function limited(key: string, limit: number) {
    const rate = await limiter.consume(key, limit)
    if (!rate.allowed) {
      throw new AppError(429, 'rate_limited', 'Too many sign-in attempts; wait a minute and try again', {
        headers: { 'retry-after': String(rate.resetSeconds) },
      })
    }
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
      async (request) => people.sessionView(request.appSession!.token),
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
        await people.setLanguage(request.appSession!.userId, request.body.language)
        return people.sessionView(request.appSession!.token)
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
        const result = await people.signIn({ email, password: request.body.password })
        if (!result) {
          throw new AppError(401, 'sign_in_failed', 'E-mail address or password is wrong', {
            key: 'anmeldung_fehlgeschlagen',
          })
        }
        return signedIn(reply, result.session.token)
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
        await people.signOut(request.appSession!.sessionId)
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
        const next = await people.changePassword({
          userId: session.userId,
          accountId: session.tenant.accountId,
          current: request.body.current_password,
          next: request.body.new_password,
        })
        return signedIn(reply, next.token)
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
        return people.setupLink(request.params.token)
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
        const result = await people.completeSetup(request.body)
        return signedIn(reply, result.session.token, 201)
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
        return people.invitation(request.params.token)
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
        const result = await people.acceptInvitation(request.body)
        return signedIn(reply, result.session.token, 201)
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
          email = people.normalizeEmail(request.body.email)
        } catch {
          reply.code(202)
          return { accepted: true }
        }
        await limited(`reset-ip:${request.ip}`, SIGN_IN_PER_ADDRESS)
        await limited(`reset-user:${email}`, SIGN_IN_PER_ACCOUNT)
        // the look-up, the link and the e-mail happen after the answer: its timing cannot tell who is a member
        inBackground(request.log, async () => {
          const sent = await people.resetPassword(email)
          if (!sent) request.log.warn('a password-reset e-mail could not be sent: set HEROLD_SMTP_URL')
        })
        reply.code(202)
        return { accepted: true }
      },
    )

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
        await people.completePasswordReset(request.body)
        reply.code(204)
      },
    )

    // API keys and team management, shared with the tools
    mountOperations(app, { people }, [
      listApiKeys,
      createApiKey,
      revokeApiKey,
      getApiKey,
      updateApiKey,
      resendInvitation,
      inviteTeamMember,
      changeTeamMemberRole,
      removeTeamMember,
    ])
  }
}
