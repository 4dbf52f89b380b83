import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Account } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Database, Db } from '../../platform/db/client.ts'
import { NotifiedCache } from '../../platform/db/notified-cache.ts'
import { AppError, notFound } from '../../platform/http/errors.ts'
import { groupCommit } from '../../platform/jobs/group-commit.ts'
import {
  type ClaimedJob,
  completeJobs,
  enqueueSql,
  LeaseLostError,
  notifyJobsSql,
  retryJob,
} from '../../platform/jobs/jobs.ts'
import type { BatchContext, JobContext } from '../../platform/jobs/runner.ts'
import type { BatchSendOutcome, ChannelsService } from '../channels/index.ts'
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
import { hasUnitLeft, monthIn, releaseUnits, reserveUnitsAndMarkSending } from './messaging.quota.ts'
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
  /** the embedded database keeps the checks of templates and chat numbers in memory (NotifiedCache) */
  database: Pick<Database, 'kind' | 'listen'>
  clock: Clock
  contacts: Pick<ContactsService, 'get'>
  channels: Pick<ChannelsService, 'requireChatConnected' | 'sendTemplates' | 'claimConversations'>
  templates: Pick<TemplatesService, 'get' | 'view'>
  serviceName: string
  publicUrl: string
  newLinkId: () => string
}

type Contact = Awaited<ReturnType<ContactsService['get']>>
type ContactValues = Pick<Contact, 'name' | 'email' | 'phone'>

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

const contactValues = (contact: ContactValues) => ({ name: contact.name, email: contact.email, phone: contact.phone })

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

  // notified by migration 0056's triggers on templates and channel_connections
  const views = new NotifiedCache<TemplateView>(deps.database, 'herold_send_checks')
  const chatNumbers = new NotifiedCache<true>(deps.database, 'herold_send_checks')
  const template = (tenant: SendsTenant, id: string) =>
    views.get(`${tenant.accountId}/${id}`, () =>
      deps.templates.view({ accountId: tenant.accountId, account: { language: tenant.account.language } }, id),
    )
  // 409 chat_not_connected is thrown, never kept
  const requireChatConnected = (accountId: string) =>
    chatNumbers.get(accountId, async () => {
      await deps.channels.requireChatConnected(accountId)
      return true
    })

  // the accepted sends of requests that arrive together: one transaction, one commit (see commitSends)
  const commit = groupCommit((rows: repo.NewTemplateSendRow[]) => commitSends(db, clock, rows))

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
  function renderForSend(view: TemplateView, contact: ContactValues, supplied: Record<string, string>) {
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
      await requireChatConnected(tenant.accountId)
      const recipient = recipientRefusal(contact)
      if (recipient) throw conflict(recipient.code, recipient.message)
      checkVariables(view, contact, supplied)
      const now = clock.now()
      const id = randomUUID()
      const committed = await commit({
        accountId: tenant.accountId,
        id,
        contactId: contact.id,
        templateId: view.id,
        variables: supplied,
        status: 'queued',
        createdAt: now,
        updatedAt: now,
      })
      // answered 202 only once this send's record and job are committed
      if (!committed.ok) throw committed.error
      return { send_id: id, status: 'queued' as const }
    },

    async get(tenant: Pick<SendsTenant, 'accountId'>, id: string) {
      if (!UUID.test(id)) throw notFound('send')
      const row = await repo.findSend(db, tenant.accountId, id)
      if (!row) throw notFound('send')
      return sendView(row)
    },

    /**
     * The worker's jobs, a batch of sends at once (one claim), per account. The batch is checked again in one query
     * (account blocked or paused, contact deleted, opted out or not opted in, the number), with each template read
     * once. Then, under the sends' row locks and in one commit: a send found `sending` was interrupted during an
     * earlier provider call (its worker died, the lease expired): it ends `failed` with reason `interrupted` and is
     * never sent again, because the provider may already have delivered it and a marketing message must not arrive
     * twice; a refused one is skipped (a campaign's send waits while sending is impossible for the moment); the
     * others claim their place in the number's daily limit, reserve their quota units together (one statement; the
     * ones without a unit are skipped with limit_reached) and move to `sending` with their attempt's token. Only
     * then is the provider called, for all of them at once within the number's pacer, and the results are recorded
     * together. Refusals end `failed` (unit released); throughput refusals go back to `queued` and retry later.
     */
    async deliverBatch(jobs: ClaimedJob[], context: Pick<BatchContext, 'settled'>) {
      const byAccount = new Map<string, ClaimedJob[]>()
      for (const job of jobs) byAccount.set(job.accountId, [...(byAccount.get(job.accountId) ?? []), job])
      const outcomes = await Promise.allSettled(
        [...byAccount].map(([accountId, ofAccount]) => deliverGroup(accountId, ofAccount, context)),
      )
      const failed = outcomes.find((o) => o.status === 'rejected')
      if (failed) throw failed.reason
    },

    /** One send's job (deliverBatch with one job). */
    async deliver(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      await this.deliverBatch([job], { settled: () => context.settled() })
    },
  }

  type Checked =
    | { skip: string }
    | { skip?: undefined; view: TemplateView; rendered: NonNullable<ReturnType<typeof renderForSend>>; phone: string }

  /** The checks right before a send, for a batch of one account: the reason to skip, or what to send, per send. */
  async function recheckBatch(accountId: string, ids: string[]) {
    const rows = await repo.recheckSends(db, accountId, ids)
    const views = new Map<string, TemplateView | null>()
    const checked = new Map<string, { send: repo.TemplateSendRow; timezone: string; checked: Checked | null }>()
    for (const row of rows) {
      const { send, account, contact } = row
      const result = (async (): Promise<Checked | null> => {
        if (send.status !== 'queued') return null
        if (account.status === 'blocked') return { skip: 'account_blocked' }
        if (account.sendingPaused) return { skip: 'subscription_locked' }
        if (!contact) return { skip: 'contact_deleted' }
        const refusal = recipientRefusal(contact)
        if (refusal) return { skip: refusal.code }
        if (!views.has(send.templateId)) {
          const tenant = { accountId, account: { language: account.language } }
          views.set(send.templateId, await deps.templates.get(tenant, send.templateId).catch(nullWhenNotFound))
        }
        const view = views.get(send.templateId)
        if (!view) return { skip: 'template_deleted' }
        const templateIssue = templateRefusal(view)
        if (templateIssue) return { skip: templateIssue.code }
        if (!row.chatConnected) return { skip: 'chat_not_connected' }
        const rendered = renderForSend(view, contact, send.variables)
        if (!rendered) return { skip: 'placeholder_remains' }
        return { view, rendered, phone: contact.phone }
      })()
      checked.set(send.id, { send, timezone: account.timezone, checked: await result })
    }
    return checked
  }

  async function deliverGroup(accountId: string, jobs: ClaimedJob[], context: Pick<BatchContext, 'settled'>) {
    const jobOf = new Map<string, ClaimedJob>()
    for (const job of jobs) {
      const sendId = String(job.payload.send_id)
      // a second job for the same send, or a malformed one, is simply completed
      if (UUID.test(sendId) && !jobOf.has(sendId)) jobOf.set(sendId, job)
    }
    if (jobOf.size === 0) return
    const checked = await recheckBatch(accountId, [...jobOf.keys()])
    const open = [...checked.values()].some((c) => c.send.status === 'queued' || c.send.status === 'sending')
    const going = open ? await prepare(accountId, jobOf, checked, context) : []
    if (going.length === 0) return
    const month = going[0].month
    const results = await deps.channels.sendTemplates(
      accountId,
      going.map(({ send, checked: c }) => ({
        contactId: send.contactId,
        to: c.phone,
        name: c.view.provider_name,
        language: c.view.language,
        parameters: c.rendered.parameters,
        ...(c.rendered.parameterNames ? { parameterNames: c.rendered.parameterNames } : {}),
        ...(c.rendered.buttonParameters.length > 0 ? { buttonParameters: c.rendered.buttonParameters } : {}),
        headerImageUrl: c.view.header_media?.url ?? null,
        text: c.rendered.text,
        sendId: send.id,
        // the spec's automated_only: campaigns' messages are automated, a POST /messages send is not
        automated: send.origin !== 'api',
        shown: {
          id: c.view.id,
          name: c.view.name,
          buttons: c.view.buttons.map((b) => ({ type: b.type, text: b.text, ...(b.url ? { url: b.url } : {}) })),
        },
      })),
    )
    const records = going.map(({ send, job }, at) => resultRecord(send, job, results[at]))
    const write = (list: ResultRecord[]) =>
      db.transaction(async (tx) => {
        await releaseUnits(tx, accountId, month, list.filter((r) => r.release).length)
        await repo.patchSends(
          tx,
          accountId,
          list.map((r) => ({ id: r.send.id, patch: { ...r.patch, updatedAt: clock.now() }, token: r.job.leaseToken })),
        )
        for (const r of list) {
          if (r.retryAt) await retryJob(tx, clock, r.job, r.retryAt, r.retryError)
        }
        await completeJobs(
          tx,
          list.filter((r) => !r.retryAt).map((r) => r.job),
        )
      })
    try {
      await write(records)
      for (const r of records) context.settled(r.job)
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error
      // one lost lease must not undo the others' records: each on its own (a lost one stays for its new holder)
      for (const r of records) {
        await write([r]).then(
          () => context.settled(r.job),
          (e: unknown) => {
            if (!(e instanceof LeaseLostError)) throw e
          },
        )
      }
    }
  }

  type Prepared = {
    send: repo.TemplateSendRow
    job: ClaimedJob
    checked: Exclude<Checked, { skip: string }>
    month: string
  }

  /** Under the sends' row locks, in one commit: interrupted, skipped and waiting ones settled; the rest `sending`. */
  async function prepare(
    accountId: string,
    jobOf: Map<string, ClaimedJob>,
    checked: Awaited<ReturnType<typeof recheckBatch>>,
    context: Pick<BatchContext, 'settled'>,
  ): Promise<Prepared[]> {
    const settled: ClaimedJob[] = []
    const prepared = await db.transaction(async (tx) => {
      const now = clock.now()
      const locked = await repo.lockSends(tx, accountId, [...checked.keys()])
      const patches: Parameters<typeof repo.patchSends>[2] = []
      const ended: ClaimedJob[] = []
      const waiting: Array<{ job: ClaimedJob; retryAt: Date; reason: string }> = []
      const candidates: Array<{ send: repo.TemplateSendRow; job: ClaimedJob; checked: Prepared['checked'] }> = []
      // a campaign's send waits while sending is impossible for the moment and goes when it is possible again
      const waitOrSkip = (send: repo.TemplateSendRow, job: ClaimedJob, reason: string, retryAt: Date) => {
        const waitUntil = waitingAllowedUntil(send, reason)
        if (waitUntil !== null && retryAt.getTime() < waitUntil) {
          patches.push({ id: send.id, patch: { reason, updatedAt: now } })
          waiting.push({ job, retryAt, reason })
          return
        }
        patches.push({
          id: send.id,
          patch: { status: 'skipped', reason: waitUntil !== null ? 'late' : reason, skippedAt: now, updatedAt: now },
        })
        ended.push(job)
      }
      for (const send of locked) {
        const job = jobOf.get(send.id)
        if (!job) continue
        if (send.status === 'sending') {
          patches.push({
            id: send.id,
            patch: { status: 'failed', reason: 'interrupted', failedAt: now, updatedAt: now },
          })
          ended.push(job)
          continue
        }
        const check = checked.get(send.id)?.checked
        if (send.status !== 'queued' || !check) continue
        if (check.skip !== undefined) {
          waitOrSkip(send, job, check.skip, new Date(now.getTime() + SEND_WAIT_RETRY_MS))
          continue
        }
        candidates.push({ send, job, checked: check })
      }
      const claims = await deps.channels.claimConversations(
        tx,
        accountId,
        candidates.map((c) => c.send.contactId),
      )
      const claimed = candidates.filter(({ send, job }, at) => {
        const claim = claims[at]
        if (!claim.ok) waitOrSkip(send, job, 'daily_limit_reached', claim.resumesAt)
        return claim.ok
      })
      const timezone = checked.values().next().value?.timezone ?? 'UTC'
      const month = monthIn(now, timezone)
      const marked = await reserveUnitsAndMarkSending(
        tx,
        accountId,
        claimed.map(({ send, job }) => ({ id: send.id, token: job.leaseToken })),
        { month, at: now },
      )
      for (const { send, job } of claimed) {
        if (marked.has(send.id)) continue
        patches.push({
          id: send.id,
          patch: { status: 'skipped', reason: 'limit_reached', skippedAt: now, updatedAt: now },
        })
        ended.push(job)
      }
      const going = claimed.filter(({ send }) => marked.has(send.id))
      await repo.insertLinksOf(
        tx,
        accountId,
        going.flatMap(({ send, checked: c }) =>
          c.rendered.links.map((link) => ({ ...link, contactId: send.contactId })),
        ),
        now,
      )
      await repo.patchSends(tx, accountId, patches)
      for (const w of waiting) await retryJob(tx, clock, w.job, w.retryAt, `waiting: ${w.reason}`)
      await completeJobs(tx, ended)
      settled.push(...ended, ...waiting.map((w) => w.job))
      return going.map((g) => ({ ...g, month }))
    })
    for (const job of settled) context.settled(job)
    return prepared
  }

  type ResultRecord = {
    send: repo.TemplateSendRow
    job: ClaimedJob
    patch: Omit<repo.TemplateSendPatch, 'updatedAt'>
    /** the quota unit goes back: certainly not sent, or refused */
    release: boolean
    retryAt?: Date
    retryError: string | null
  }

  /** What a send's provider result writes (the same rules as one send at a time). */
  function resultRecord(send: repo.TemplateSendRow, job: ClaimedJob, result: BatchSendOutcome): ResultRecord {
    const now = clock.now()
    if ('thrown' in result) {
      const error = result.thrown
      // channels' own checks (paused, no number) fail before the provider is called: certainly not sent
      const notSent = error instanceof AppError || refusedConnection(error)
      const reason = error instanceof AppError ? error.code : notSent ? 'provider_unreachable' : 'provider_error'
      return {
        send,
        job,
        release: notSent,
        retryError: null,
        patch: notSent ? { status: 'skipped', reason, skippedAt: now } : { status: 'failed', reason, failedAt: now },
      }
    }
    if (result.ok) {
      return {
        send,
        job,
        release: false,
        retryError: null,
        patch: {
          status: 'sent',
          reason: null,
          messageId: result.messageId,
          providerMessageId: result.providerMessageId,
          sentAt: now,
          quotaMonth: null,
        },
      }
    }
    const error = result.error
    if (error.kind === 'retry_later' && send.attempts + 1 < MAX_RATE_LIMITED_ATTEMPTS) {
      return {
        send,
        job,
        release: true,
        retryAt: new Date(now.getTime() + RATE_LIMIT_BACKOFF_MS * 2 ** send.attempts),
        retryError: `${error.providerCode}: ${error.message}`,
        patch: { status: 'queued', attemptToken: null, quotaMonth: null, errorCode: error.providerCode, reason: null },
      }
    }
    return {
      send,
      job,
      release: true,
      retryError: null,
      patch: {
        status: 'failed',
        reason:
          error.kind === 'opted_out'
            ? 'contact_opted_out'
            : error.kind === 'retry_later'
              ? 'rate_limited'
              : 'provider_refused',
        errorCode: error.providerCode,
        messageId: result.messageId,
        failedAt: now,
        quotaMonth: null,
      },
    }
  }
}

/**
 * Writes accepted sends, each with its job, in one statement (group commit: the requests that arrived while the
 * previous group was committing; one statement is one transaction, and the jobs' NOTIFY goes out at its commit).
 * When it fails, each send is tried again in a statement of its own, so one send's failure never fails the others;
 * the answer per send says whether it is committed.
 */
async function commitSends(db: Db, clock: Clock, rows: repo.NewTemplateSendRow[]) {
  const write = async (list: repo.NewTemplateSendRow[]) => {
    const jobs = enqueueSql(
      clock.now(),
      list.map((row) => ({ accountId: row.accountId, queue: TEMPLATE_SEND_QUEUE, payload: { send_id: row.id } })),
    )
    await db.execute(sql`
      WITH sends AS (${repo.insertQueuedSendsSql(list)}), added AS (${jobs.insert})
      SELECT ${notifyJobsSql('added')} AS notified`)
  }
  try {
    await write(rows)
    return rows.map(() => ({ ok: true as const }))
  } catch (error) {
    if (rows.length === 1) return [{ ok: false as const, error }]
    return Promise.all(
      rows.map((row) =>
        write([row]).then(
          () => ({ ok: true as const }),
          (e: unknown) => ({ ok: false as const, error: e }),
        ),
      ),
    )
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
  // the changes of the batch are written together, one statement (a send's later change builds on its earlier one)
  const changed = new Map<string, repo.TemplateSendRow>()
  for (const update of updates) {
    const row = byMessage.get(update.messageId)
    if (!row) continue
    const change = sendStatusChange(row, update)
    if (!change) continue
    const next = { ...row, ...change, updatedAt: update.at }
    byMessage.set(update.messageId, next)
    changed.set(row.id, next)
  }
  await repo.setSendStatuses(tx, accountId, [...changed.values()])
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
