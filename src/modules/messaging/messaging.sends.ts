import { randomUUID } from 'node:crypto'
import { type Account, getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, notFound } from '../../platform/http/errors.ts'
import { type ClaimedJob, completeJob, enqueue, retryJob } from '../../platform/jobs/jobs.ts'
import type { JobContext } from '../../platform/jobs/runner.ts'
import type { ChannelsService } from '../channels/index.ts'
import type { ContactsService } from '../contacts/index.ts'
import type { MessageStatusListener } from '../inbox/index.ts'
import {
  invalidVariablesMessage,
  renderTemplate,
  type TemplatesService,
  type TemplateView,
  templateTexts,
  templateVariables,
  validateVariableValues,
} from '../templates/index.ts'
import { trackLinks } from './messaging.links.ts'
import { hasUnitLeft, monthIn, releaseUnit, reserveUnitAndMarkSending } from './messaging.quota.ts'
import * as repo from './messaging.repository.ts'
import type { SendStatus } from './messaging.tables.ts'

/** The durable job that sends one queued template message, payload { send_id }. */
export const TEMPLATE_SEND_QUEUE = 'messaging.template_send'
/** Throughput refusals (130429, 131049, 131056) are tried again this often before the send ends failed. */
export const MAX_RATE_LIMITED_ATTEMPTS = 8
const RATE_LIMIT_BACKOFF_MS = 30_000
const MAX_VARIABLE_LENGTH = 1024

export type SendsTenant = {
  accountId: string
  account: Pick<Account, 'language' | 'timezone' | 'sendingPaused' | 'plan'>
}

export interface TemplateSendsDeps {
  db: Db
  clock: Clock
  contacts: Pick<ContactsService, 'get'>
  channels: Pick<ChannelsService, 'requireChatConnected' | 'sendTemplate' | 'claimConversation'>
  templates: Pick<TemplatesService, 'get'>
  serviceName: string
  publicUrl: string
  newLinkId: () => string
}

type Contact = Awaited<ReturnType<ContactsService['get']>>

const unprocessable = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(422, code, message, { details })
const conflict = (code: string, message: string) => new AppError(409, code, message)

/**
 * Why a template cannot be sent, most lasting reason first: another channel, then a kind that is never sendable
 * (opt-in confirmation, system), then the provider status.
 */
export function templateRefusal(template: Pick<TemplateView, 'channel' | 'purpose' | 'system' | 'provider_status'>) {
  if (template.channel !== 'chat') {
    return { code: 'template_not_chat', message: 'Only chat templates can be sent with POST /messages' }
  }
  if (template.purpose === 'optin_confirm' || template.system) {
    return {
      code: 'template_not_sendable',
      message: 'Opt-in confirmation templates and system templates cannot be sent through the API',
    }
  }
  if (template.provider_status !== 'approved') {
    return {
      code: 'template_not_approved',
      message: `The template's provider status is ${template.provider_status ?? 'none (not submitted)'}, not approved`,
    }
  }
  return null
}

/** Why a recipient cannot get a chat message now, in the order of POST /messages; null when it can. */
function recipientRefusal(contact: { phone: string; optin_chat: string }) {
  if (contact.phone === '') return { code: 'contact_no_phone', message: 'The contact has no phone number' }
  if (contact.optin_chat === 'opted_out') return { code: 'contact_opted_out', message: 'The contact opted out of chat' }
  if (contact.optin_chat !== 'confirmed') {
    return { code: 'contact_not_optin', message: "The contact's chat opt-in is not confirmed" }
  }
  return null
}

const nullWhenNotFound = (error: unknown) => {
  if (error instanceof AppError && error.status === 404) return null
  throw error
}

const contactValues = (contact: Contact) => ({ name: contact.name, email: contact.email, phone: contact.phone })

const RANK: Record<SendStatus, number> = {
  queued: 0,
  sending: 0,
  skipped: 0,
  sent: 1,
  delivered: 2,
  read: 3,
  failed: 4,
}

/**
 * A provider status applied to a send record: forward only (sent → delivered → read), in any arrival order. `failed`
 * replaces sent and delivered, never read; nothing leaves read, failed or skipped. A read that arrives before its
 * delivered also fills delivered_at (a read message was delivered). Returns the change, or null.
 */
export function sendStatusChange(
  current: Pick<repo.TemplateSendRow, 'status' | 'deliveredAt' | 'readAt'>,
  update: { status: 'sent' | 'delivered' | 'read' | 'failed'; errorCode: string | null; at: Date },
): repo.TemplateSendPatch | null {
  if (!['sent', 'delivered'].includes(current.status)) return null
  if (update.status === 'failed') {
    return { status: 'failed', reason: 'provider_failed', errorCode: update.errorCode, failedAt: update.at }
  }
  if (RANK[update.status] <= RANK[current.status]) return null
  return {
    status: update.status,
    deliveredAt: current.deliveredAt ?? update.at,
    ...(update.status === 'read' ? { readAt: current.readAt ?? update.at } : {}),
  }
}

/** The send record of GET /sends/{id}; `sending` is shown as `queued` (the spec's statuses). */
export function sendView(row: repo.TemplateSendRow) {
  return {
    id: row.id,
    send_id: row.id,
    status: row.status === 'sending' ? ('queued' as const) : row.status,
    reason: row.reason,
    error_code: row.errorCode,
    contact_id: row.contactId,
    template_id: row.templateId,
    message_id: row.messageId,
    created_at: row.createdAt,
    sent_at: row.sentAt,
    delivered_at: row.deliveredAt,
    read_at: row.readAt,
    failed_at: row.failedAt,
    skipped_at: row.skippedAt,
    updated_at: row.updatedAt,
  }
}

/** The body parameters as the provider wants them: positional in number order, named in order of appearance. */
function bodyParameters(content: string, values: Record<string, string>) {
  const names = templateVariables({ content, buttons: [] })
  const positional = names.length > 0 && names.every((n) => /^[0-9]+$/.test(n))
  if (positional) {
    const ordered = [...names].sort((a, b) => Number(a) - Number(b))
    return { parameters: ordered.map((n) => values[n]) }
  }
  return { parameters: names.map((n) => values[n]), parameterNames: names }
}

export function templateSends(deps: TemplateSendsDeps) {
  const { db, clock } = deps

  const template = (tenant: SendsTenant, id: string) =>
    deps.templates.get({ accountId: tenant.accountId, account: { language: tenant.account.language } }, id)

  /** 422 invalid_variables naming every variable, from the caller's values and then from the contact's data. */
  function checkVariables(view: TemplateView, contact: Contact, supplied: Record<string, string>) {
    const texts = templateTexts(view)
    const invalid = validateVariableValues(texts, supplied)
    if (invalid.length > 0) {
      throw unprocessable('invalid_variables', invalidVariablesMessage(invalid), {
        variables: invalid.map((i) => ({ name: i.variable, problem: i.problem })),
      })
    }
    const rendered = renderTemplate({
      texts,
      language: view.language,
      contact: contactValues(contact),
      values: supplied,
    })
    if (!rendered.ok) {
      const names = [...rendered.missing, ...rendered.remaining]
      throw unprocessable(
        'invalid_variables',
        `Invalid variables: ${names.join(', ')} would stay unfilled (the contact has no value for it); nothing is sent`,
        { variables: names.map((name) => ({ name, problem: 'no_value' })) },
      )
    }
  }

  /**
   * Renders for the provider: link addresses in the caller's values become tracked short links (the approved text
   * itself cannot change at the provider), then every placeholder is filled. Null when any placeholder would remain.
   */
  function renderForSend(view: TemplateView, contact: Contact, supplied: Record<string, string>) {
    const links: Array<{ id: string; url: string }> = []
    const values: Record<string, string> = {}
    for (const [name, value] of Object.entries(supplied)) {
      const tracked = trackLinks(value, {
        serviceName: deps.serviceName,
        medium: 'chat',
        publicUrl: deps.publicUrl,
        maxLength: MAX_VARIABLE_LENGTH,
        newId: deps.newLinkId,
      })
      values[name] = tracked.text
      links.push(...tracked.links)
    }
    const texts = templateTexts(view)
    const rendered = renderTemplate({ texts, language: view.language, contact: contactValues(contact), values })
    if (!rendered.ok) return null
    const urlButtons = view.buttons.flatMap((b, index) => (b.type === 'URL' && b.url ? [{ index, url: b.url }] : []))
    const buttonParameters = urlButtons.flatMap(({ index, url }) => {
      const [variable] = templateVariables({ content: url, buttons: [] })
      return variable ? [{ index, text: rendered.values[variable] }] : []
    })
    return {
      text: rendered.texts[0],
      links,
      ...bodyParameters(view.content, rendered.values),
      buttonParameters,
    }
  }

  /**
   * The checks right before a send (through the services, outside any transaction): the reason to skip, or what to
   * send. The account's lock and pause, the contact (opt-out, opt-in, phone), the template, the number.
   */
  async function recheck(
    send: repo.TemplateSendRow,
    account: Account,
  ): Promise<
    | { skip: string }
    | {
        skip?: undefined
        contact: Contact
        view: TemplateView
        rendered: NonNullable<ReturnType<typeof renderForSend>>
      }
  > {
    if (account.status === 'blocked') return { skip: 'account_blocked' }
    if (account.sendingPaused) return { skip: 'subscription_locked' }
    const tenant = { accountId: account.id, account }
    const contact = await deps.contacts.get(tenant, send.contactId).catch(nullWhenNotFound)
    if (!contact) return { skip: 'contact_deleted' }
    const refusal = recipientRefusal(contact)
    if (refusal) return { skip: refusal.code }
    const view = await template(tenant, send.templateId).catch(nullWhenNotFound)
    if (!view) return { skip: 'template_deleted' }
    const templateIssue = templateRefusal(view)
    if (templateIssue) return { skip: templateIssue.code }
    try {
      await deps.channels.requireChatConnected(account.id)
    } catch (error) {
      if (error instanceof AppError) return { skip: error.code }
      throw error
    }
    const rendered = renderForSend(view, contact, send.variables)
    if (!rendered) return { skip: 'placeholder_remains' }
    return { contact, view, rendered }
  }

  async function finish(tx: Db, send: repo.TemplateSendRow, patch: repo.TemplateSendPatch, token?: string) {
    return repo.updateSend(tx, send.accountId, send.id, { ...patch, updatedAt: clock.now() }, { token })
  }

  const skip = (tx: Db, send: repo.TemplateSendRow, reason: string) =>
    finish(tx, send, { status: 'skipped', reason, skippedAt: clock.now() })

  return {
    /**
     * POST /messages with a template: every check at once, then the send record (queued) and its job in one
     * transaction. Order: the contact (404), the template (404, 422 template_not_chat, template_not_sendable,
     * template_not_approved), the caller's variables (422 invalid_variables), sending paused (403
     * subscription_locked), the monthly quota (403 limit_reached; checked, not reserved), the chat number (409
     * chat_not_connected), the recipient (409 contact_no_phone, contact_opted_out, contact_not_optin), and last the
     * contact's own values for contact variables (422 invalid_variables when one would stay empty).
     */
    async queue(
      tenant: SendsTenant,
      input: { contact_id: string; template: { id: string; variables?: Record<string, string> } },
    ) {
      const contact = await deps.contacts.get(tenant, input.contact_id)
      const view = await template(tenant, input.template.id)
      const refusal = templateRefusal(view)
      if (refusal) throw unprocessable(refusal.code, refusal.message)
      const supplied = input.template.variables ?? {}
      const invalid = validateVariableValues(templateTexts(view), supplied)
      if (invalid.length > 0) {
        throw unprocessable('invalid_variables', invalidVariablesMessage(invalid), {
          variables: invalid.map((i) => ({ name: i.variable, problem: i.problem })),
        })
      }
      if (tenant.account.sendingPaused) {
        throw new AppError(403, 'subscription_locked', 'Sending is paused for this account')
      }
      if (!(await hasUnitLeft(db, tenant.accountId, monthIn(clock.now(), tenant.account.timezone)))) {
        throw new AppError(403, 'limit_reached', 'The monthly message quota is used up', { key: 'message_quota' })
      }
      await deps.channels.requireChatConnected(tenant.accountId)
      const recipient = recipientRefusal(contact)
      if (recipient) throw conflict(recipient.code, recipient.message)
      checkVariables(view, contact, supplied)
      const now = clock.now()
      const id = randomUUID()
      await db.transaction(async (tx) => {
        await repo.insertSends(tx, [
          {
            accountId: tenant.accountId,
            id,
            contactId: contact.id,
            templateId: view.id,
            variables: supplied,
            status: 'queued',
            createdAt: now,
            updatedAt: now,
          },
        ])
        await enqueue(tx, clock, { accountId: tenant.accountId, queue: TEMPLATE_SEND_QUEUE, payload: { send_id: id } })
      })
      return { send_id: id, status: 'queued' as const }
    },

    async get(tenant: Pick<SendsTenant, 'accountId'>, id: string) {
      if (!UUID.test(id)) throw notFound('send')
      const row = await repo.findSend(db, tenant.accountId, id)
      if (!row) throw notFound('send')
      return sendView(row)
    },

    /**
     * The worker's job for one send. Under the send's row lock: a send found `sending` was interrupted during an
     * earlier provider call (its worker died, the lease expired): it ends `failed` with reason `interrupted` and is
     * never sent again, because the provider may already have delivered it and a marketing message must not arrive
     * twice. A queued send is checked again (account, contact opt-out and opt-in, template, number), the quota unit
     * is reserved, and it moves to `sending` with this attempt's token, all in one commit; only then is the provider
     * called. Refusals end `failed` (unit released); throughput refusals go back to `queued` and retry later.
     */
    async deliver(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      const sendId = String(job.payload.send_id)
      const token = job.leaseToken
      const found = await repo.findSend(db, job.accountId, sendId)
      if (!found || (found.status !== 'queued' && found.status !== 'sending')) return
      const account = await getAccount(db, job.accountId)
      const checked = found.status === 'queued' ? await recheck(found, account) : null
      // a final state is written in the same transaction that finishes the job
      const ended = async (tx: Db) => {
        await completeJob(tx, job)
        context.settled()
        return null
      }
      const prepared = await db.transaction(async (tx) => {
        const send = await repo.findSend(tx, job.accountId, sendId, { lock: true })
        if (!send) return null
        if (send.status === 'sending') {
          await finish(tx, send, { status: 'failed', reason: 'interrupted', failedAt: clock.now() })
          return ended(tx)
        }
        if (send.status !== 'queued' || !checked) return null
        // a campaign's send waits while sending is impossible for the moment and goes when it is possible again
        const waitOrSkip = async (reason: string, retryAt: Date) => {
          const waitUntil = waitingAllowedUntil(send, reason)
          if (waitUntil !== null && retryAt.getTime() < waitUntil) {
            await finish(tx, send, { reason })
            await retryJob(tx, clock, job, retryAt, `waiting: ${reason}`)
            context.settled()
            return null
          }
          await skip(tx, send, waitUntil !== null ? 'late' : reason)
          return ended(tx)
        }
        if (checked.skip !== undefined) {
          return waitOrSkip(checked.skip, new Date(clock.now().getTime() + SEND_WAIT_RETRY_MS))
        }
        const claim = await deps.channels.claimConversation(tx, job.accountId, send.contactId)
        if (!claim.ok) return waitOrSkip('daily_limit_reached', claim.resumesAt)
        const month = monthIn(clock.now(), account.timezone)
        if (!(await reserveUnitAndMarkSending(tx, send, { month, token, at: clock.now() }))) {
          await skip(tx, send, 'limit_reached')
          return ended(tx)
        }
        await repo.insertLinks(tx, job.accountId, send.contactId, checked.rendered.links, clock.now())
        return { send, ...checked, month }
      })
      if (!prepared) return
      const { send, contact, view, rendered, month } = prepared
      let outcome: Awaited<ReturnType<ChannelsService['sendTemplate']>>
      try {
        outcome = await deps.channels.sendTemplate(job.accountId, {
          contactId: contact.id,
          to: contact.phone,
          name: view.provider_name,
          language: view.language,
          parameters: rendered.parameters,
          ...(rendered.parameterNames ? { parameterNames: rendered.parameterNames } : {}),
          ...(rendered.buttonParameters.length > 0 ? { buttonParameters: rendered.buttonParameters } : {}),
          headerImageUrl: view.header_media?.url ?? null,
          text: rendered.text,
          sendId: send.id,
          shown: {
            id: view.id,
            name: view.name,
            buttons: view.buttons.map((b) => ({ type: b.type, text: b.text, ...(b.url ? { url: b.url } : {}) })),
          },
        })
      } catch (error) {
        // channels' own checks (paused, no number) fail before the provider is called: certainly not sent
        const notSent = error instanceof AppError || refusedConnection(error)
        await db.transaction(async (tx) => {
          if (notSent) await releaseUnit(tx, job.accountId, month)
          const reason = error instanceof AppError ? error.code : notSent ? 'provider_unreachable' : 'provider_error'
          await finish(
            tx,
            send,
            {
              status: notSent ? 'skipped' : 'failed',
              reason,
              ...(notSent ? { skippedAt: clock.now() } : { failedAt: clock.now() }),
            },
            token,
          )
          await ended(tx)
        })
        return
      }
      if (outcome.ok) {
        await db.transaction(async (tx) => {
          await finish(
            tx,
            send,
            {
              status: 'sent',
              reason: null,
              messageId: outcome.message?.id ?? null,
              providerMessageId: outcome.providerMessageId,
              sentAt: clock.now(),
              quotaMonth: null,
            },
            token,
          )
          await ended(tx)
        })
        return
      }
      const error = outcome.error
      if (error.kind === 'retry_later' && send.attempts + 1 < MAX_RATE_LIMITED_ATTEMPTS) {
        await db.transaction(async (tx) => {
          await releaseUnit(tx, job.accountId, month)
          await finish(
            tx,
            send,
            { status: 'queued', attemptToken: null, quotaMonth: null, errorCode: error.providerCode, reason: null },
            token,
          )
          const backoff = RATE_LIMIT_BACKOFF_MS * 2 ** send.attempts
          await retryJob(
            tx,
            clock,
            job,
            new Date(clock.now().getTime() + backoff),
            `${error.providerCode}: ${error.message}`,
          )
        })
        context.settled()
        return
      }
      await db.transaction(async (tx) => {
        await releaseUnit(tx, job.accountId, month)
        await finish(
          tx,
          send,
          {
            status: 'failed',
            reason:
              error.kind === 'opted_out'
                ? 'contact_opted_out'
                : error.kind === 'retry_later'
                  ? 'rate_limited'
                  : 'provider_refused',
            errorCode: error.providerCode,
            messageId: outcome.message?.id ?? null,
            failedAt: clock.now(),
            quotaMonth: null,
          },
          token,
        )
        await ended(tx)
      })
    },
  }
}

/** How often a waiting campaign send looks again whether sending is possible. */
export const SEND_WAIT_RETRY_MS = 60_000

/** Reasons sending is impossible for the moment (not about the recipient): campaign sends wait them out. */
export const WAIT_REASONS: ReadonlySet<string> = new Set([
  'subscription_locked',
  'account_blocked',
  'chat_not_connected',
  'daily_limit_reached',
])

/** How long a send of each origin waits for sending to be possible again; `api` sends never wait (null). */
const MAX_WAIT_MS: Record<repo.TemplateSendRow['origin'], number | null> = {
  api: null,
  newsletter: Number.POSITIVE_INFINITY,
  automation: Number.POSITIVE_INFINITY,
  // a follow-up step more than a day late is skipped (docs/followups.md)
  followup: 24 * 3600_000,
}

/** Until when (epoch ms) this send may wait for `reason` to pass; null when it does not wait. */
function waitingAllowedUntil(send: repo.TemplateSendRow, reason: string): number | null {
  const max = MAX_WAIT_MS[send.origin]
  if (max === null || !WAIT_REASONS.has(reason)) return null
  return send.createdAt.getTime() + max
}

/** Provider statuses of outbound messages (the inbox's listener): the matching send records move forward only. */
export const applySendStatuses: MessageStatusListener = async (tx, accountId, updates) => {
  const rows = await repo.sendsByMessageIds(
    tx,
    accountId,
    updates.map((u) => u.messageId),
  )
  const byMessage = new Map(rows.map((r) => [r.messageId, r]))
  for (const update of updates) {
    const row = byMessage.get(update.messageId)
    if (!row) continue
    const change = sendStatusChange(row, update)
    if (!change) continue
    const saved = await repo.updateSend(tx, accountId, row.id, { ...change, updatedAt: update.at })
    if (saved) byMessage.set(update.messageId, saved)
  }
}

/** A connection refused or a name not resolved: the request never reached the provider. */
function refusedConnection(error: unknown): boolean {
  const codes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'])
  let current: unknown = error
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && codes.has(code)) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export type TemplateSends = ReturnType<typeof templateSends>
