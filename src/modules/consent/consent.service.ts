import { randomUUID } from 'node:crypto'
import { type Account, getAccount } from '../../platform/auth/accounts.service.ts'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest } from '../../platform/http/errors.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import type { ChannelsService } from '../channels/index.ts'
import {
  type ContactsService,
  consentSubject,
  fieldDefinitionsOf,
  normalizePhone,
  recordOptinChange,
} from '../contacts/index.ts'
import type { InboundStored } from '../inbox/index.ts'
import {
  customFieldTexts,
  mayUseCustomFields,
  optinConfirmButton,
  renderTemplate,
  templateVariables,
  unfilledVariables,
  valueLanguage,
} from '../templates/index.ts'
import { consentRequests, optOutOfChat, startOptin } from './consent.optins.ts'
import * as repo from './consent.repository.ts'
import {
  cleanKeywords,
  DEFAULT_START_KEYWORDS,
  DEFAULT_STOP_KEYWORDS,
  defaultLandingConsentText,
  defaultStopConfirmation,
  hashToken,
  inboundIntent,
  looksLikeToken,
  newLinkToken,
  optinMail,
  overlappingKeywords,
  SETTINGS_LIMITS,
  withUnsubscribe,
} from './consent.rules.ts'

export {
  CHAT_OPTIN_QUEUE,
  EMAIL_OPTIN_QUEUE,
  optOutOfChat,
  STOP_CONFIRMATION_QUEUE,
  sendWaitingChatOptins,
  startOptin,
} from './consent.optins.ts'
/** a landing-page sign-up, applied after the page answered (the answer's timing tells nothing about the address) */
export const LANDING_SIGNUP_QUEUE = 'consent.landing_signup'

/** How long the confirmation link of an e-mail double opt-in works. */
export const EMAIL_OPTIN_TTL_MS = 7 * 24 * 60 * 60 * 1000

export type ConsentTenant = Pick<TenantContext, 'accountId'> & {
  account: Pick<TenantContext['account'], 'language'>
}

export interface OptinTemplate {
  id: string
  /** the provider name */
  name: string
  /** the template's own name (shown with the message) */
  displayName: string
  language: string
  content: string
}

export interface ConsentServiceDeps {
  db: Db
  clock: Clock
  secrets: SecretBox
  /** HEROLD_PUBLIC_URL: {app_url} of the landing page and the confirmation and unsubscribe links */
  publicUrl: string
  channels: Pick<ChannelsService, 'sendTemplate' | 'sendText' | 'sendEmail'>
  contacts: Pick<ContactsService, 'createOrKeep'>
  /** the account's approved opt-in confirmation template, in the contact's language when it has one */
  optinTemplate(accountId: string, language: string): Promise<OptinTemplate | null>
  log(level: 'info' | 'warn', message: string, data: Record<string, unknown>): void
  /** an image of the account's media library by id, with its public address (404 media_not_found otherwise) */
  resolveImage?(accountId: string, mediaId: string): Promise<{ url: string }>
}

/** What a form post or link click proves: where it came from. */
export interface RequestEvidence {
  ip: string
  userAgent: string
}

export interface SignupForm {
  name: string
  phone: string
  email: string
  consent: boolean
}

export type SignupResult = { ok: true; chat: boolean; email: boolean } | { ok: false; error: string; field?: string }

export interface SettingsChange {
  start_keywords?: string[] | null
  stop_keywords?: string[] | null
  stop_confirmation?: string | null
  landing_consent_text?: string | null
  landing_logo?: { media_id: string } | null
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

function effective(row: repo.SettingsRow | null, language: string) {
  return {
    startKeywords: row?.startKeywords ?? [...DEFAULT_START_KEYWORDS],
    stopKeywords: row?.stopKeywords ?? [...DEFAULT_STOP_KEYWORDS],
    stopConfirmation: row?.stopConfirmation ?? defaultStopConfirmation(language),
    landingConsentText: row?.landingConsentText ?? defaultLandingConsentText(language),
    landingLogo: row?.landingLogo ?? null,
  }
}

function keywordList(field: string, raw: string[]): string[] {
  const keywords = cleanKeywords(raw)
  if (keywords.length === 0) throw badRequest(`${field} needs at least one keyword`, 'bad_request', { field })
  if (keywords.length > SETTINGS_LIMITS.keywords) {
    throw badRequest(`${field} takes at most ${SETTINGS_LIMITS.keywords} keywords`, 'bad_request', { field })
  }
  const long = keywords.find((k) => k.length > SETTINGS_LIMITS.keyword)
  if (long) {
    throw badRequest(`${field}: a keyword has at most ${SETTINGS_LIMITS.keyword} characters`, 'bad_request', { field })
  }
  return keywords
}

function requiredText(field: string, value: string, max: number): string {
  const text = value.trim()
  if (text === '') throw badRequest(`${field} must not be empty (null restores the default)`, 'bad_request', { field })
  if (text.length > max) throw badRequest(`${field} has at most ${max} characters`, 'bad_request', { field })
  return text
}

/** Whether an inbound chat message is one of the account's start or stop keywords (nothing else may answer it). */
export async function isConsentKeyword(db: Db, accountId: string, message: { type: string; text: string }) {
  const intent = inboundIntent(message, effective(await repo.settingsOf(db, accountId), ''))
  return intent?.kind === 'start' || intent?.kind === 'stop'
}

/** The consent settings' read of consentOnInbound, folded into the inbox's first statement of the message. */
export const consentSettingsPreload = (accountId: string) => repo.settingsAsJsonSql(accountId)

/** `preloaded`: the value of consentSettingsPreload, read with the inbox's own statement (else it is read here). */
export async function consentOnInbound(
  tx: Db,
  clock: Clock,
  message: InboundStored,
  preloaded?: { value: unknown },
): Promise<void> {
  if (message.channel !== 'chat') return
  const row = preloaded ? repo.settingsFromJson(preloaded.value) : await repo.settingsOf(tx, message.accountId)
  const settings = effective(row, '')
  const intent = inboundIntent(message, settings)
  if (!intent) return
  const { accountId, contactId } = message
  if (intent.kind === 'stop') {
    await optOutOfChat(tx, clock, {
      accountId,
      contactId,
      source: 'inbound_keyword',
      evidence: { message_id: message.messageId, keyword: intent.keyword },
    })
    return
  }
  if (intent.kind === 'start') {
    const evidence = { message_id: message.messageId, keyword: intent.keyword }
    await startOptin(tx, clock, { accountId, contactId, channel: 'chat', source: 'inbound_keyword', evidence })
    return
  }
  const request = await repo.chatRequestOf(tx, accountId, contactId)
  if (!request?.buttonText || request.buttonText !== intent.text) return
  await recordOptinChange(tx, clock, {
    accountId,
    contactId,
    channel: 'chat',
    to: 'confirmed',
    source: 'double_opt_in',
    onlyFrom: ['pending'],
    evidence: {
      message_id: message.messageId,
      button: intent.text,
      template_id: request.templateId,
      confirmation_message_id: request.messageId,
    },
  })
}

export function consentService(deps: ConsentServiceDeps) {
  const { db, clock, secrets } = deps

  const unsubscribeUrl = (accountId: string, contactId: string) =>
    `${deps.publicUrl}/public/unsubscribe/${secrets.seal(JSON.stringify({ k: 'unsubscribe', a: accountId, c: contactId }))}`

  /** The account and contact a signed unsubscribe token names, or null when it is not one of ours. */
  function openUnsubscribeToken(token: string): { accountId: string; contactId: string } | null {
    if (!looksLikeToken(token)) return null
    try {
      const parsed = JSON.parse(secrets.open(token)) as { k?: unknown; a?: unknown; c?: unknown }
      if (parsed.k !== 'unsubscribe' || typeof parsed.a !== 'string' || typeof parsed.c !== 'string') return null
      return { accountId: parsed.a, contactId: parsed.c }
    } catch {
      return null
    }
  }

  async function settingsOf(accountId: string, language: string) {
    return effective(await repo.settingsOf(db, accountId), language)
  }

  async function recordChatProblem(
    accountId: string,
    contactId: string,
    state: 'no_template' | 'failed',
    reason: string,
  ) {
    deps.log('warn', `chat opt-in confirmation not sent: ${reason}`, { accountId, contactId })
    await repo.upsertChatRequest(db, { accountId, contactId, state, reason, updatedAt: clock.now() })
  }

  return {
    unsubscribeUrl,
    ...consentRequests({ db, clock }),

    async settings(tenant: ConsentTenant) {
      const settings = await settingsOf(tenant.accountId, tenant.account.language)
      const template = await deps.optinTemplate(tenant.accountId, tenant.account.language)
      return {
        start_keywords: settings.startKeywords,
        stop_keywords: settings.stopKeywords,
        stop_confirmation: settings.stopConfirmation,
        landing_consent_text: settings.landingConsentText,
        landing_page_url: `${deps.publicUrl}/public/signup/${tenant.accountId}`,
        landing_logo: settings.landingLogo,
        optin_confirm_template: template ? { id: template.id, name: template.name, language: template.language } : null,
        chat_optins_without_template: await repo.countChatRequests(db, tenant.accountId, 'no_template'),
        chat_optins_failed: await repo.countChatRequests(db, tenant.accountId, 'failed'),
      }
    },

    /** Given fields change; null restores a field's default. Start and stop keywords may not overlap. */
    async updateSettings(tenant: ConsentTenant, change: SettingsChange) {
      const current = await settingsOf(tenant.accountId, tenant.account.language)
      const row: Parameters<typeof repo.saveSettings>[2] = {}
      if (change.start_keywords !== undefined) {
        row.startKeywords = change.start_keywords === null ? null : keywordList('start_keywords', change.start_keywords)
      }
      if (change.stop_keywords !== undefined) {
        row.stopKeywords = change.stop_keywords === null ? null : keywordList('stop_keywords', change.stop_keywords)
      }
      if (change.stop_confirmation !== undefined) {
        row.stopConfirmation =
          change.stop_confirmation === null
            ? null
            : requiredText('stop_confirmation', change.stop_confirmation, SETTINGS_LIMITS.stopConfirmation)
      }
      if (change.landing_consent_text !== undefined) {
        row.landingConsentText =
          change.landing_consent_text === null
            ? null
            : requiredText('landing_consent_text', change.landing_consent_text, SETTINGS_LIMITS.landingConsentText)
      }
      if (change.landing_logo !== undefined) {
        if (change.landing_logo === null) row.landingLogo = null
        else {
          if (!deps.resolveImage) throw badRequest('The media library is not available', 'media_unavailable')
          const image = await deps.resolveImage(tenant.accountId, change.landing_logo.media_id)
          row.landingLogo = { media_id: change.landing_logo.media_id, url: image.url }
        }
      }
      const start =
        row.startKeywords === undefined ? current.startKeywords : (row.startKeywords ?? DEFAULT_START_KEYWORDS)
      const stop = row.stopKeywords === undefined ? current.stopKeywords : (row.stopKeywords ?? DEFAULT_STOP_KEYWORDS)
      const overlap = overlappingKeywords(start, stop)
      if (overlap.length > 0) {
        throw badRequest(`A keyword cannot both start and stop: ${overlap.join(', ')}`, 'keywords_overlap', {
          keywords: overlap,
        })
      }
      await repo.saveSettings(db, tenant.accountId, row, clock.now())
      return this.settings(tenant)
    },

    /** Job: sends the opt-in confirmation template to a pending contact; without one, records why. */
    async sendChatConfirmation(accountId: string, contactId: string): Promise<void> {
      const contact = await consentSubject(db, accountId, contactId)
      if (contact?.optinChat !== 'pending') return
      if ((await repo.chatRequestOf(db, accountId, contactId))?.state !== 'queued') return
      const account = await getAccount(db, accountId)
      const template = await deps.optinTemplate(accountId, contact.language || account.language)
      if (!template) {
        return recordChatProblem(
          accountId,
          contactId,
          'no_template',
          'the account has no approved optin_confirm template',
        )
      }
      const texts = [template.content]
      const definitions = mayUseCustomFields(texts) ? await fieldDefinitionsOf(db, accountId) : []
      const rendered = renderTemplate({
        texts,
        language: template.language,
        contact: {
          ...contact,
          customFields: customFieldTexts(
            definitions,
            contact.fields,
            valueLanguage(contact.language, template.language),
          ),
        },
        values: {},
        customFields: definitions.map((d) => d.key),
      })
      if (!rendered.ok) {
        return recordChatProblem(
          accountId,
          contactId,
          'failed',
          `the optin_confirm template needs values the contact lacks: ${unfilledVariables(rendered).join(', ')}`,
        )
      }
      const button = optinConfirmButton(template.language).text
      const request = { accountId, contactId, templateId: template.id, language: template.language, buttonText: button }
      // queued → sending before the provider call: a second run of this job sends nothing; the button is known
      // before the send, so a press arriving before this job finishes still matches
      const change = { templateId: template.id, language: template.language, buttonText: button }
      if (!(await repo.claimChatRequest(db, accountId, contactId, { ...change, updatedAt: clock.now() }))) return
      let outcome: Awaited<ReturnType<ChannelsService['sendTemplate']>>
      try {
        outcome = await deps.channels.sendTemplate(
          accountId,
          {
            contactId,
            to: contact.phone,
            name: template.name,
            language: template.language,
            parameters: templateVariables({ content: template.content, buttons: [] }).map((v) => rendered.values[v]),
            text: rendered.texts[0],
            shown: { id: template.id, name: template.displayName, buttons: [{ type: 'QUICK_REPLY', text: button }] },
          },
          { automated: true },
        )
      } catch (error) {
        if (error instanceof AppError) return recordChatProblem(accountId, contactId, 'failed', error.message)
        throw error
      }
      if (!outcome.ok && outcome.error.kind === 'retry_later') throw new Error(outcome.error.message)
      if (!outcome.ok) return recordChatProblem(accountId, contactId, 'failed', outcome.error.message)
      await repo.upsertChatRequest(db, {
        ...request,
        state: 'sent',
        messageId: outcome.message?.id ?? null,
        updatedAt: clock.now(),
      })
    },

    /** Job: the short confirmation after a stop keyword (the customer just wrote: inside the 24-hour window). */
    async sendStopConfirmation(accountId: string, contactId: string): Promise<void> {
      const contact = await consentSubject(db, accountId, contactId)
      if (!contact || contact.phone === '') return
      const account = await getAccount(db, accountId)
      const { stopConfirmation } = await settingsOf(accountId, account.language)
      try {
        const outcome = await deps.channels.sendText(
          accountId,
          { contactId, to: contact.phone, text: stopConfirmation },
          { automated: true },
        )
        if (!outcome.ok) deps.log('warn', 'stop confirmation refused by the provider', { accountId, contactId })
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        deps.log('warn', `stop confirmation not sent: ${error.message}`, { accountId, contactId })
      }
    },

    /** Job: the e-mail with the confirmation link; the token exists only while its mail can have gone out. */
    async sendEmailConfirmation(accountId: string, contactId: string): Promise<void> {
      const contact = await consentSubject(db, accountId, contactId)
      if (contact?.optinEmail !== 'pending' || contact.email === '') return
      const account = await getAccount(db, accountId)
      const { token, hash } = newLinkToken()
      const id = randomUUID()
      const now = clock.now()
      await repo.insertEmailToken(db, {
        accountId,
        id,
        contactId,
        tokenHash: hash,
        email: contact.email,
        expiresAt: new Date(now.getTime() + EMAIL_OPTIN_TTL_MS),
        createdAt: now,
      })
      const mail = optinMail(
        contact.language || account.language,
        account.name,
        `${deps.publicUrl}/public/optin/${token}`,
      )
      let failure: string | null = null
      try {
        const result = await deps.channels.sendEmail(accountId, { to: contact.email, ...mail })
        if (!result.ok) failure = result.error.message
      } catch (error) {
        if (!(error instanceof AppError)) {
          await repo.deleteEmailToken(db, accountId, id)
          throw error
        }
        await repo.deleteEmailToken(db, accountId, id)
        deps.log('warn', `e-mail opt-in confirmation not sent: ${error.message}`, { accountId, contactId })
        return
      }
      if (failure !== null) {
        await repo.deleteEmailToken(db, accountId, id)
        throw new Error(`e-mail opt-in confirmation not sent: ${failure}`)
      }
    },

    /** The state of a confirmation link, for its page. */
    async emailTokenState(token: string): Promise<'valid' | 'used' | 'expired' | 'invalid'> {
      if (!looksLikeToken(token)) return 'invalid'
      const row = await repo.emailTokenByHash(db, hashToken(token))
      if (!row) return 'invalid'
      if (row.usedAt) return 'used'
      if (row.expiresAt.getTime() <= clock.now().getTime()) return 'expired'
      return 'valid'
    },

    /** Confirms optin_email from its link: once, before expiry, and only for the address the link was sent to. */
    async confirmEmail(
      token: string,
      evidence: RequestEvidence,
    ): Promise<'confirmed' | 'used' | 'expired' | 'invalid'> {
      if (!looksLikeToken(token)) return 'invalid'
      return db.transaction(async (tx) => {
        const row = await repo.emailTokenByHash(tx, hashToken(token), { lock: true })
        if (!row) return 'invalid'
        if (row.usedAt) return 'used'
        if (row.expiresAt.getTime() <= clock.now().getTime()) return 'expired'
        const contact = await consentSubject(tx, row.accountId, row.contactId, { lock: true })
        if (!contact || contact.email !== row.email || contact.optinEmail !== 'pending') return 'invalid'
        await repo.markEmailTokenUsed(tx, row.accountId, row.id, clock.now())
        await recordOptinChange(tx, clock, {
          accountId: row.accountId,
          contactId: row.contactId,
          channel: 'email',
          to: 'confirmed',
          source: 'double_opt_in',
          onlyFrom: ['pending'],
          evidence: { token_id: row.id, ip: evidence.ip, user_agent: evidence.userAgent },
        })
        return 'confirmed'
      })
    },

    /** The account and contact of an unsubscribe link, or null. */
    unsubscribeTarget: openUnsubscribeToken,

    /** Opts the link's contact out of e-mail (one-click or the page's button). */
    async unsubscribe(token: string, evidence: RequestEvidence & { oneClick: boolean }): Promise<boolean> {
      const target = openUnsubscribeToken(token)
      if (!target) return false
      await db.transaction(async (tx) => {
        const contact = await consentSubject(tx, target.accountId, target.contactId, { lock: true })
        // a deleted contact gets nothing any more anyway
        if (!contact) return
        await recordOptinChange(tx, clock, {
          accountId: target.accountId,
          contactId: target.contactId,
          channel: 'email',
          to: 'opted_out',
          source: 'unsubscribe_link',
          evidence: { ip: evidence.ip, user_agent: evidence.userAgent, one_click: evidence.oneClick },
        })
      })
      return true
    },

    /**
     * Every marketing e-mail goes through here: only to a contact whose e-mail opt-in is confirmed, with an
     * unsubscribe link in the body and the RFC 8058 List-Unsubscribe headers.
     */
    async sendMarketingEmail(
      accountId: string,
      contactId: string,
      message: { subject: string; text: string; html?: string },
    ) {
      const contact = await consentSubject(db, accountId, contactId)
      if (!contact) throw new AppError(404, 'not_found', 'contact not found')
      if (contact.optinEmail === 'opted_out') {
        throw new AppError(409, 'contact_opted_out', 'The contact opted out of e-mail')
      }
      if (contact.optinEmail !== 'confirmed' || contact.email === '') {
        throw new AppError(409, 'contact_not_optin', "The contact's e-mail opt-in is not confirmed")
      }
      const account = await getAccount(db, accountId)
      const decorated = withUnsubscribe(
        message,
        unsubscribeUrl(accountId, contactId),
        contact.language || account.language,
      )
      return deps.channels.sendEmail(accountId, { to: contact.email, ...decorated })
    },

    /** The landing page's account: null when unknown or blocked (the page answers 404). */
    async landingAccount(
      accountId: string,
    ): Promise<{ account: Account; consentText: string; logoUrl: string | null } | null> {
      let account: Account
      try {
        account = await getAccount(db, accountId)
      } catch {
        return null
      }
      if (account.status !== 'active') return null
      const settings = await settingsOf(account.id, account.language)
      return { account, consentText: settings.landingConsentText, logoUrl: settings.landingLogo?.url ?? null }
    },

    /**
     * A landing-page sign-up, which anyone may post for any address: checked here (bad input is the form again
     * with its error), then stored as a job and applied by applySignup. The page's answer is the same whatever the
     * addresses, and so is the work before it (one insert), so neither tells who signed up before.
     */
    async signup(
      account: Account,
      form: SignupForm,
      evidence: RequestEvidence & { consentText: string },
    ): Promise<SignupResult> {
      const name = form.name.trim()
      const phone = form.phone.trim()
      const email = form.email.trim()
      if (!form.consent) return { ok: false, error: 'Please agree to receive messages.', field: 'consent' }
      if (name.length > 120) return { ok: false, error: 'The name is too long.', field: 'name' }
      if (phone === '' && email === '') {
        return { ok: false, error: 'Please give your mobile number or your e-mail address.', field: 'phone' }
      }
      if (email !== '' && (email.length > 254 || !EMAIL.test(email))) {
        return { ok: false, error: 'Please check your e-mail address.', field: 'email' }
      }
      if (phone !== '' && normalizePhone(phone) === null) {
        return { ok: false, error: 'Please check your mobile number (for example +49 151 23456789).', field: 'phone' }
      }
      const payload = {
        name,
        email,
        phone,
        ip: evidence.ip,
        user_agent: evidence.userAgent,
        consent_text: evidence.consentText,
        submitted_at: clock.now().toISOString(),
      }
      await enqueue(db, clock, { accountId: account.id, queue: LANDING_SIGNUP_QUEUE, payload })
      return { ok: true, chat: phone !== '', email: email !== '' }
    },

    /**
     * Job: applies a landing-page sign-up. An address that belongs to a contact changes nothing on it (name, the
     * other address and fields stay); the addresses that belong to no contact become one new contact (source
     * `landing`). Then the double opt-in starts on each channel given, at the contact holding that address, with
     * the form's IP, user agent, consent text and time as evidence: only its confirmation (sent to that address)
     * changes a consent, and an address already confirmed gets nothing.
     */
    async applySignup(accountId: string, payload: Record<string, unknown>): Promise<void> {
      const text = (key: string) => (typeof payload[key] === 'string' ? (payload[key] as string) : '')
      const [name, email, phone] = [text('name'), text('email'), text('phone')]
      const account = await getAccount(db, accountId)
      let holders: { email: string | null; phone: string | null }
      try {
        holders = await deps.contacts.createOrKeep(
          { accountId, account: { plan: account.plan, language: account.language } },
          { ...(name ? { name } : {}), ...(email ? { email } : {}), ...(phone ? { phone } : {}) },
          'landing',
        )
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        // the plan's contact limit, or a race lost three times: the sign-up is not stored (the page answered
        // already, as for any sign-up); the business sees the limit in its console
        deps.log('warn', `landing sign-up not stored: ${error.code}`, { accountId })
        return
      }
      const proof = {
        ip: text('ip'),
        user_agent: text('user_agent'),
        consent_text: text('consent_text'),
        submitted_at: text('submitted_at'),
      }
      await db.transaction(async (tx) => {
        const landing = { accountId, source: 'landing', evidence: proof }
        if (holders.phone) await startOptin(tx, clock, { ...landing, contactId: holders.phone, channel: 'chat' })
        if (holders.email) await startOptin(tx, clock, { ...landing, contactId: holders.email, channel: 'email' })
      })
    },
  }
}

export type ConsentService = ReturnType<typeof consentService>
