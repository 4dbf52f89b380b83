import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Clock } from '../../platform/clock.ts'
import type { RateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import { confirmEmailPage, messagePage, signupDonePage, signupPage, unsubscribePage } from './consent.pages.ts'
import type { ConsentService, RequestEvidence } from './consent.service.ts'

/** A form token is good for two hours after the page was shown. */
const FORM_TOKEN_TTL_MS = 2 * 60 * 60 * 1000
const FORM_BODY_LIMIT = 16 * 1024
const COOKIE = 'herold_signup'

export interface PublicConsentDeps {
  service: ConsentService
  secrets: SecretBox
  clock: Clock
  /** form posts per account and client address */
  limiter: RateLimiter
  /** HEROLD_PUBLIC_URL: cookies are Secure behind https */
  publicUrl: string
}

type FormBody = Record<string, string>

function field(body: unknown, name: string): string {
  const value = (body as FormBody | undefined)?.[name]
  return typeof value === 'string' ? value : ''
}

function cookieOf(request: FastifyRequest, name: string): string {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key === name) return rest.join('=')
  }
  return ''
}

function evidenceOf(request: FastifyRequest): RequestEvidence {
  return { ip: request.ip, userAgent: String(request.headers['user-agent'] ?? '').slice(0, 500) }
}

function html(reply: FastifyReply, status: number, body: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header(
      'content-security-policy',
      "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' https:; form-action 'self'; frame-ancestors 'none'",
    )
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(body)
}

const notFoundPage = (reply: FastifyReply) =>
  html(reply, 404, messagePage('Page not found', 'This page does not exist.'))

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * The public pages of the consent flows ({app_url}/public/…): the landing page sign-up, the e-mail confirmation
 * link and the unsubscribe link. The sign-up form is protected against cross-site posts by a double submit: a
 * SameSite=Strict cookie holds a random nonce and the form carries it sealed with the account and the time.
 */
export function publicConsentRoutes(deps: PublicConsentDeps) {
  const { service, secrets, clock } = deps
  const secure = deps.publicUrl.startsWith('https://')

  function issueFormToken(accountId: string, reply: FastifyReply): string {
    const nonce = randomBytes(16).toString('base64url')
    const path = `/public/signup/${accountId}`
    reply.header(
      'set-cookie',
      `${COOKIE}=${nonce}; Path=${path}; HttpOnly; SameSite=Strict; Max-Age=${FORM_TOKEN_TTL_MS / 1000}${secure ? '; Secure' : ''}`,
    )
    return secrets.seal(JSON.stringify({ k: 'signup', a: accountId, n: nonce, t: clock.now().getTime() }))
  }

  function formTokenValid(token: string, accountId: string, cookieNonce: string): boolean {
    if (token === '' || cookieNonce === '') return false
    try {
      const parsed = JSON.parse(secrets.open(token)) as { k?: unknown; a?: unknown; n?: unknown; t?: unknown }
      if (parsed.k !== 'signup' || parsed.a !== accountId || typeof parsed.n !== 'string') return false
      if (typeof parsed.t !== 'number' || clock.now().getTime() - parsed.t > FORM_TOKEN_TTL_MS) return false
      return sameText(parsed.n, cookieNonce)
    } catch {
      return false
    }
  }

  return async (app: FastifyInstance): Promise<void> => {
    app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
      (_request, body, done) => {
        const form: FormBody = {}
        for (const [key, value] of new URLSearchParams(String(body))) if (!(key in form)) form[key] = value
        done(null, form)
      },
    )
    // RFC 8058 one-click posts may come as multipart/form-data: the unsubscribe does not depend on the body
    app.addContentTypeParser(
      'multipart/form-data',
      { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
      (_r, body, done) => done(null, { raw: String(body) }),
    )
    const hide = { hide: true }

    app.get<{ Params: { account: string } }>(
      '/public/signup/:account',
      { config: { public: true }, schema: hide },
      async (request, reply) => {
        const landing = await service.landingAccount(request.params.account)
        if (!landing) return notFoundPage(reply)
        const page = signupPage({
          accountName: landing.account.name,
          action: `/public/signup/${landing.account.id}`,
          formToken: issueFormToken(landing.account.id, reply),
          consentText: landing.consentText,
          logoUrl: landing.logoUrl,
          values: { name: '', phone: '', email: '', consent: false },
        })
        return html(reply, 200, page)
      },
    )

    app.post<{ Params: { account: string } }>(
      '/public/signup/:account',
      { config: { public: true }, schema: hide },
      async (request, reply) => {
        const landing = await service.landingAccount(request.params.account)
        if (!landing) return notFoundPage(reply)
        const { account } = landing
        const rate = await deps.limiter.consume(`signup:${account.id}:${request.ip}`)
        if (!rate.allowed) {
          reply.header('retry-after', String(rate.resetSeconds))
          return html(reply, 429, messagePage('Too many sign-ups', 'Please wait a minute and try again.'))
        }
        const values = {
          name: field(request.body, 'name'),
          phone: field(request.body, 'phone'),
          email: field(request.body, 'email'),
          consent: field(request.body, 'consent') !== '',
        }
        const again = (status: number, error: string) =>
          html(
            reply,
            status,
            signupPage({
              accountName: account.name,
              action: `/public/signup/${account.id}`,
              formToken: issueFormToken(account.id, reply),
              consentText: landing.consentText,
              logoUrl: landing.logoUrl,
              values,
              error,
            }),
          )
        if (!formTokenValid(field(request.body, 'form_token'), account.id, cookieOf(request, COOKIE))) {
          return again(403, 'The form has expired. Please check your details and send it again.')
        }
        const result = await service.signup(account, values, {
          ...evidenceOf(request),
          consentText: landing.consentText,
        })
        if (!result.ok) return again(400, result.error)
        return html(reply, 200, signupDonePage({ accountName: account.name, chat: result.chat, email: result.email }))
      },
    )

    // GET shows a button and only POST confirms: link scanners of mail providers open links, they do not submit forms
    app.get<{ Params: { token: string } }>(
      '/public/optin/:token',
      { config: { public: true }, schema: hide },
      async (request, reply) => {
        const state = await service.emailTokenState(request.params.token)
        if (state === 'valid') return html(reply, 200, confirmEmailPage(`/public/optin/${request.params.token}`))
        return tokenPage(reply, state)
      },
    )

    app.post<{ Params: { token: string } }>(
      '/public/optin/:token',
      { config: { public: true }, schema: hide },
      async (request, reply) => {
        const rate = await deps.limiter.consume(`optin:${request.ip}`)
        if (!rate.allowed) return html(reply, 429, messagePage('Too many requests', 'Please wait a minute.'))
        return tokenPage(reply, await service.confirmEmail(request.params.token, evidenceOf(request)))
      },
    )

    // the signed token is longer than a route parameter may be: it is the rest of the path
    app.get<{ Params: { '*': string } }>(
      '/public/unsubscribe/*',
      { config: { public: true, secretParams: ['*'] }, schema: hide },
      async (request, reply) => {
        const token = request.params['*']
        if (!service.unsubscribeTarget(token)) return notFoundPage(reply)
        return html(reply, 200, unsubscribePage(`/public/unsubscribe/${token}`))
      },
    )

    app.post<{ Params: { '*': string } }>(
      '/public/unsubscribe/*',
      { config: { public: true, secretParams: ['*'] }, schema: hide },
      async (request, reply) => {
        const oneClick = field(request.body, 'List-Unsubscribe') === 'One-Click'
        const done = await service.unsubscribe(request.params['*'], { ...evidenceOf(request), oneClick })
        if (!done) return notFoundPage(reply)
        return html(reply, 200, messagePage('Unsubscribed', 'You will receive no more e-mails from us.'))
      },
    )
  }
}

function tokenPage(reply: FastifyReply, state: 'confirmed' | 'used' | 'expired' | 'invalid') {
  switch (state) {
    case 'confirmed':
      return html(reply, 200, messagePage('Thank you', 'Your e-mail address is confirmed.'))
    case 'used':
      return html(reply, 200, messagePage('Already confirmed', 'This link was already used.'))
    case 'expired':
      return html(reply, 410, messagePage('Link expired', 'This link has expired. Please sign up again.'))
    default:
      return notFoundPage(reply)
  }
}
