import { sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { lowerPace, RECOVERY_STEP_MS, recoverPace } from '../../platform/jobs/adaptive-pace.ts'
import { type ClaimedJob, completeJobs, LeaseLostError, retryJob } from '../../platform/jobs/jobs.ts'
import type { BatchContext, JobContext } from '../../platform/jobs/runner.ts'
import { countSends } from '../../platform/metrics/metrics.ts'
import { type BatchSendOutcome, CHAT_LANE, THROUGHPUT_REFUSED } from '../channels/index.ts'
import { fieldDefinitionsFromJson } from '../contacts/index.ts'
import {
  customFieldTexts,
  mayUseCustomFields,
  renderTemplate,
  type TemplateView,
  templateFromJson,
  templateTexts,
  templateVariables,
  templateView,
  valueLanguage,
} from '../templates/index.ts'
import { trackLinks } from './messaging.links.ts'
import { type ContactValues, MAX_RATE_LIMITED_ATTEMPTS, type TemplateSendsDeps } from './messaging.ports.ts'
import {
  cappedIndexes,
  contactZone,
  DEFAULT_PROTECTION,
  isProtected,
  type Protection,
  quietUntil,
} from './messaging.protection.ts'
import { monthIn, releaseUnits, reserveUnitsAndMarkSending } from './messaging.quota.ts'
import * as repo from './messaging.repository.ts'
import {
  bodyParameters,
  contactValues,
  recipientRefusal,
  SEND_WAIT_RETRY_MS,
  templateRefusal,
  UUID,
  waitingAllowedUntil,
} from './messaging.rules.ts'

const RATE_LIMIT_BACKOFF_MS = 30_000
/** a send refused for the number's throughput comes back soon: the lowered pace of the claim spaces it */
const THROUGHPUT_BACKOFF_MS = 1_000
const MAX_VARIABLE_LENGTH = 1024

/** Delivering queued template sends: the worker's jobs, checked again, sent at the number's pace and recorded. */
export function sendDelivery(deps: TemplateSendsDeps) {
  const { db, clock } = deps
  /**
   * When this process next looks whether an account's lowered pace recovers (adaptive-pace.ts): at most once per half
   * recovery step per account, so sends at full pace cost no statement of their own.
   */
  const nextRecoveryLook = new Map<string, number>()

  /** The number's pace after a batch's results, in the transaction that records them. */
  async function adaptPace(tx: Db, accountId: string, list: ResultRecord[]) {
    const now = clock.now()
    if (list.some((r) => r.throughputRefused)) {
      await lowerPace(tx, { accountId, lane: CHAT_LANE, reason: 'throughput_refused', now })
      nextRecoveryLook.set(accountId, 0)
      return
    }
    if (!list.some((r) => r.patch.status === 'sent') || (nextRecoveryLook.get(accountId) ?? 0) > now.getTime()) return
    if (nextRecoveryLook.size >= 10_000) nextRecoveryLook.clear()
    nextRecoveryLook.set(accountId, now.getTime() + RECOVERY_STEP_MS / 2)
    await recoverPace(tx, { accountId, lane: CHAT_LANE, now })
  }

  /**
   * Renders for the provider: link addresses in the caller's values become tracked short links (the approved text
   * itself cannot change at the provider), then every placeholder is filled, custom fields from the contact's
   * values (`fields`). When a placeholder would remain: the reason to skip and what it lacked.
   */
  function renderForSend(
    view: TemplateView,
    contact: ContactValues,
    supplied: Record<string, string>,
    fields: { texts: Record<string, string>; keys: readonly string[] },
  ) {
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
    const rendered = renderTemplate({
      texts,
      language: view.language,
      contact: { ...contactValues(contact), customFields: fields.texts },
      values,
      customFields: fields.keys,
    })
    if (!rendered.ok) return { ok: false as const, ...unfilled(rendered, fields.keys) }
    const urlButtons = view.buttons.flatMap((b, index) => (b.type === 'URL' && b.url ? [{ index, url: b.url }] : []))
    const buttonParameters = urlButtons.flatMap(({ index, url }) => {
      const [variable] = templateVariables({ content: url, buttons: [] })
      return variable ? [{ index, text: rendered.values[variable] }] : []
    })
    return {
      ok: true as const,
      text: rendered.texts[0],
      links,
      ...bodyParameters(view.content, rendered.values),
      buttonParameters,
    }
  }

  /**
   * The worker's jobs, a batch of sends at once (one claim), per account. The batch is checked again in one query
   * (account blocked or paused, contact deleted, opted out or not opted in, the number), with each template read
   * once. Then, under the sends' row locks and in one commit: a send found `sending` was interrupted during an
   * earlier provider call (its worker died, the lease expired): it ends `failed` with reason `interrupted` and is
   * never sent again, because the provider may already have delivered it and a marketing message must not arrive
   * twice; a refused one is skipped (a campaign's send waits while sending is impossible for the moment); the
   * others claim their place in the number's daily limit, reserve their quota units together (one statement; the
   * ones without a unit are skipped with limit_reached) and move to `sending` with their attempt's token. Only
   * then is the provider called, each message at its slot (the one its claim booked on the number's lane), and the results are recorded
   * together. Refusals end `failed` (unit released); throughput refusals go back to `queued` and retry later.
   */
  async function deliverBatch(jobs: ClaimedJob[], context: Pick<BatchContext, 'settled'>) {
    const byAccount = new Map<string, ClaimedJob[]>()
    for (const job of jobs) byAccount.set(job.accountId, [...(byAccount.get(job.accountId) ?? []), job])
    const outcomes = await Promise.allSettled(
      [...byAccount].map(([accountId, ofAccount]) => deliverGroup(accountId, ofAccount, context)),
    )
    const failed = outcomes.find((o) => o.status === 'rejected')
    if (failed) throw failed.reason
  }

  return {
    deliverBatch,

    /** One send's job (deliverBatch with one job). */
    async deliver(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      await deliverBatch([job], { settled: () => context.settled() })
    },
  }

  type Rendered = Extract<ReturnType<typeof renderForSend>, { ok: true }>
  type Checked =
    | { skip: string; detail?: string; until?: Date }
    | { skip?: undefined; view: TemplateView; rendered: Rendered; phone: string; protect: boolean }

  /** The checks right before a send, for a batch of one account: the reason to skip, or what to send, per send. */
  async function recheckBatch(accountId: string, ids: string[]) {
    const rows = await repo.recheckSends(db, accountId, ids)
    // the account's custom field definitions and each template of the batch, read with the sends (recheckSends)
    const definitions = fieldDefinitionsFromJson(rows.find((row) => row.definitions != null)?.definitions ?? [])
    const keys = definitions.map((d) => d.key)
    const views = new Map<string, TemplateView>()
    for (const row of rows) {
      const template = templateFromJson(row.template)
      if (!template) continue
      views.set(template.id, templateView(template, mayUseCustomFields(templateTexts(template)) ? keys : []))
    }
    const fieldsOf = (view: TemplateView, contact: NonNullable<(typeof rows)[number]['contact']>) => {
      if (!mayUseCustomFields(templateTexts(view))) return { texts: {}, keys: [] }
      const language = valueLanguage(contact.language, view.language)
      return { texts: customFieldTexts(definitions, contact.fields, language), keys }
    }
    const checked = new Map<
      string,
      { send: repo.TemplateSendRow; timezone: string; protection: Protection; checked: Checked | null }
    >()
    const now = clock.now()
    for (const row of rows) {
      const { send, account, contact } = row
      const protection = row.protection ?? DEFAULT_PROTECTION
      const result = ((): Checked | null => {
        if (send.status !== 'queued') return null
        if (account.status === 'blocked') return { skip: 'account_blocked' }
        if (account.sendingPaused) return { skip: 'subscription_locked' }
        if (!contact) return { skip: 'contact_deleted' }
        const refusal = recipientRefusal(contact)
        if (refusal) return { skip: refusal.code }
        const view = views.get(send.templateId)
        if (!view) return { skip: 'template_deleted' }
        const templateIssue = templateRefusal(view)
        if (templateIssue) return { skip: templateIssue.code }
        if (!row.chatConnected) return { skip: 'chat_not_connected' }
        const rendered = renderForSend(view, contact, send.variables, fieldsOf(view, contact))
        if (!rendered.ok) return { skip: rendered.reason, detail: rendered.detail }
        const protect = isProtected(send.origin, view)
        if (protect && protection.quietEnabled) {
          const window = { from: protection.quietFrom, to: protection.quietTo }
          const until = quietUntil(now, window, contactZone(contact, account.timezone))
          // the wait's end is the detail, so a newsletter can say when it resumes
          if (until) return { skip: 'quiet_hours', until, detail: until.toISOString() }
        }
        return { view, rendered, phone: contact.phone, protect }
      })()
      checked.set(send.id, { send, timezone: account.timezone, protection, checked: result })
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
      going.map(({ send, job, checked: c }) => ({
        contactId: send.contactId,
        // the slot its claim booked on the number's lane: it leaves no earlier (no second over the pace)
        ...(job.slotAt ? { slotAt: job.slotAt } : {}),
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
        await adaptPace(tx, accountId, list)
      })
    const outcomeOf = (r: ResultRecord) => ({
      origin: r.send.origin,
      outcome: r.retryAt ? 'retried' : String(r.patch.status),
    })
    try {
      await write(records)
      for (const r of records) context.settled(r.job)
      countOutcomes(accountId, records.map(outcomeOf))
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error
      // one lost lease must not undo the others' records: each on its own (a lost one stays for its new holder)
      for (const r of records) {
        await write([r]).then(
          () => {
            context.settled(r.job)
            countOutcomes(accountId, [outcomeOf(r)])
          },
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
    checked: Extract<Checked, { skip?: undefined }>
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
    const decided: Array<{ origin: string; outcome: string }> = []
    const prepared = await db.transaction(async (tx) => {
      decided.length = 0
      const now = clock.now()
      const locked = await repo.lockSends(tx, accountId, [...checked.keys()])
      const patches: Parameters<typeof repo.patchSends>[2] = []
      const ended: ClaimedJob[] = []
      const waiting: Array<{ job: ClaimedJob; retryAt: Date; reason: string }> = []
      const candidates: Array<{ send: repo.TemplateSendRow; job: ClaimedJob; checked: Prepared['checked'] }> = []
      // a campaign's send waits while sending is impossible for the moment and goes when it is possible again
      const waitOrSkip = (
        send: repo.TemplateSendRow,
        job: ClaimedJob,
        reason: string,
        retryAt: Date,
        detail: string | null = null,
      ) => {
        const waitUntil = waitingAllowedUntil(send, reason)
        if (waitUntil !== null && retryAt.getTime() < waitUntil) {
          patches.push({
            id: send.id,
            patch: { reason, ...(detail !== null ? { reasonDetail: detail } : {}), updatedAt: now },
          })
          waiting.push({ job, retryAt, reason })
          return
        }
        patches.push({
          id: send.id,
          patch: {
            status: 'skipped',
            reason: waitUntil !== null ? 'late' : reason,
            reasonDetail: waitUntil === null ? detail : null,
            skippedAt: now,
            updatedAt: now,
          },
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
          const retryAt = check.until ?? new Date(now.getTime() + SEND_WAIT_RETRY_MS)
          waitOrSkip(send, job, check.skip, retryAt, check.detail ?? null)
          continue
        }
        candidates.push({ send, job, checked: check })
      }
      const protection = checked.values().next().value?.protection ?? DEFAULT_PROTECTION
      const capped = await frequencyCapped(tx, accountId, candidates, protection, now)
      const admitted = candidates.filter(({ send, job }, at) => {
        if (!capped.has(at)) return true
        patches.push({
          id: send.id,
          patch: { status: 'skipped', reason: 'frequency_capped', skippedAt: now, updatedAt: now },
        })
        ended.push(job)
        return false
      })
      const claims = await deps.channels.claimConversations(
        tx,
        accountId,
        admitted.map((c) => c.send.contactId),
      )
      const claimed = admitted.filter(({ send, job }, at) => {
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
      const counted = going.filter((g) => g.checked.protect).map((g) => g.send.id)
      await repo.markCapped(tx, accountId, counted, now)
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
      const origins = new Map(locked.map((send) => [send.id, send.origin]))
      decided.push(
        ...patches.flatMap(({ id, patch }) =>
          patch.status ? [{ origin: origins.get(id) ?? 'api', outcome: patch.status }] : [],
        ),
      )
      return going.map((g) => ({ ...g, month }))
    })
    for (const job of settled) context.settled(job)
    countOutcomes(accountId, decided)
    return prepared
  }

  /**
   * The indexes of the candidates the frequency cap refuses. Under a transaction-scoped lock per account, taken
   * before the daily limit's, so two batches for the same contact in different processes never both pass: the
   * second counts the first's sends once it commits (their capped_at is written in the same transaction).
   */
  async function frequencyCapped(
    tx: Parameters<Parameters<typeof db.transaction>[0]>[0],
    accountId: string,
    candidates: Array<{ send: repo.TemplateSendRow; checked: Prepared['checked'] }>,
    protection: Protection,
    now: Date,
  ): Promise<Set<number>> {
    const protectedAt = candidates.flatMap((c, at) => (c.checked.protect ? [at] : []))
    if (!protection.capEnabled || protectedAt.length === 0) return new Set()
    await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`herold_cap:${accountId}`}, 0))`)
    const contactIds = protectedAt.map((at) => candidates[at].send.contactId)
    const since = new Date(now.getTime() - protection.capWindowHours * 3600_000)
    const sent = await repo.cappedSince(tx, accountId, contactIds, since)
    const refused = cappedIndexes(contactIds, sent, protection.capMessages)
    return new Set([...refused].map((i) => protectedAt[i]))
  }

  type ResultRecord = {
    send: repo.TemplateSendRow
    job: ClaimedJob
    patch: Omit<repo.TemplateSendPatch, 'updatedAt'>
    /** the quota unit goes back: certainly not sent, or refused */
    release: boolean
    retryAt?: Date
    retryError: string | null
    /** the provider refused for the number's throughput (130429): its pace goes down */
    throughputRefused?: boolean
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
          // when its provider call began, at its slot (the batch's results are written together, later)
          sentAt: result.sentAt ?? now,
          quotaMonth: null,
        },
      }
    }
    const error = result.error
    const throughputRefused = error.providerCode === THROUGHPUT_REFUSED
    if (error.kind === 'retry_later' && send.attempts + 1 < MAX_RATE_LIMITED_ATTEMPTS) {
      // a pair-rate refusal (131056) and the others wait long: only this send, other recipients go on
      const backoff = throughputRefused ? THROUGHPUT_BACKOFF_MS : RATE_LIMIT_BACKOFF_MS
      return {
        send,
        job,
        release: true,
        throughputRefused,
        retryAt: new Date(now.getTime() + backoff * 2 ** send.attempts),
        retryError: `${error.providerCode}: ${error.message}`,
        patch: { status: 'queued', attemptToken: null, quotaMonth: null, errorCode: error.providerCode, reason: null },
      }
    }
    return {
      send,
      job,
      release: true,
      retryError: null,
      throughputRefused,
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
 * Why a send cannot be rendered: `field_missing` when a custom field the template uses has no value for the contact
 * (and no default), naming those fields; else `placeholder_remains`, naming what stayed unfilled (a contact without
 * e-mail for {{email}}).
 */
function unfilled(rendered: { missing: string[]; remaining: string[] }, fieldKeys: readonly string[]) {
  const fields = rendered.missing.filter((name) => fieldKeys.includes(name))
  if (fields.length > 0) return { reason: 'field_missing', detail: fields.join(', ') }
  const names = rendered.missing.length > 0 ? rendered.missing : rendered.remaining
  return { reason: 'placeholder_remains', detail: names.join(', ') }
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

/** The sends' outcomes as metrics, once committed (a template send goes out on the chat channel). */
function countOutcomes(accountId: string, outcomes: Array<{ origin: string; outcome: string }>): void {
  const tally = new Map<string, number>()
  for (const { origin, outcome } of outcomes) {
    const key = `${origin === 'api' ? 'transactional' : origin}|${outcome}`
    tally.set(key, (tally.get(key) ?? 0) + 1)
  }
  for (const [key, n] of tally) {
    const [origin, outcome] = key.split('|') as [Parameters<typeof countSends>[0]['origin'], string]
    countSends({ channel: 'chat', origin, outcome, accountId }, n)
  }
}
