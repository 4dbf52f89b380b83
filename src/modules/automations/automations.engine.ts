import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { type Account, getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { Signal, SignalListener, SignalName } from '../../platform/events/signals.ts'
import { AppError } from '../../platform/http/errors.ts'
import { type ClaimedJob, enqueue, jobPending } from '../../platform/jobs/jobs.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import type { ChannelsService } from '../channels/index.ts'
import {
  changeContactTag,
  contactForAutomation,
  contactMeetsFieldConditions,
  findOrCreateInboundContact,
} from '../contacts/index.ts'
import type { MessagingService } from '../messaging/index.ts'
import { calendarOccurrences } from './automations.calendar.ts'
import * as repo from './automations.repository.ts'
import {
  branchTarget,
  conditionHolds,
  durationMs,
  fieldConditionOf,
  keywordMatches,
  nextTimeOfDay,
  type RunLogEntry,
  type Step,
  type Trigger,
} from './automations.rules.ts'
import type { RunState } from './automations.tables.ts'

export const RUN_QUEUE = 'automations.run'
export const CALENDAR_POLL_QUEUE = 'automations.calendar_poll'
export const CALENDAR_START_QUEUE = 'automations.calendar_start'

/** A run that waits because sending is not possible now (account blocked or paused) tries again this much later. */
const SENDING_BLOCKED_RETRY_MS = 5 * 60_000
/** Outbound webhook steps are tried this many times (with the runner's backoff) before the run fails. */
const WEBHOOK_ATTEMPTS = 5
/** Calendar events further ahead than this are not scheduled yet (a later poll will). */
const CALENDAR_HORIZON_MS = 60 * 24 * 3600_000

/** What running the steps needs: the calls out (messages, e-mail, webhooks) and the other modules' writes. */
export interface AutomationsEngineDeps {
  db: Db
  clock: Clock
  secrets: SecretBox
  http: OutboundHttp
  messaging: Pick<MessagingService, 'send'>
  channels: Pick<ChannelsService, 'sendEmail'>
  sign: (secret: string, timestamp: number, body: string) => string
  startOptin: (
    tx: Db,
    clock: Clock,
    input: { accountId: string; contactId: string; channel: 'chat' | 'email' },
  ) => Promise<boolean>
  queueTemplateSend: (
    tx: Db,
    clock: Clock,
    input: {
      accountId: string
      contactId: string
      templateId: string
      variables: Record<string, string>
      runId: string
    },
  ) => Promise<string>
  userAgent: string
  /** the follow-ups module: enrolling a contact in the run's transaction */
  followups: {
    enroll(
      tx: Db,
      clock: Clock,
      input: { accountId: string; sequenceId: string; contactId: string },
    ): Promise<{ enrolled: boolean; enrollment_id: string | null; reason: string | null }>
  }
}

export const FINAL: RunState[] = ['completed', 'failed', 'cancelled']
const SIGNAL_TRIGGERS: Partial<Record<SignalName, Trigger['type']>> = {
  'contact.created': 'contact_created',
  'optin.confirmed': 'optin_confirmed',
  'tag.added': 'tag_added',
  'message.received': 'keyword',
}

/** New runs in the caller's transaction, each with its first job (one statement for a batch). */
export async function startRuns(
  tx: Db,
  clock: Clock,
  automation: repo.AutomationRow,
  runs: Array<{ contactId: string | null; data: Record<string, unknown>; source: string }>,
): Promise<string[]> {
  const now = clock.now()
  const rows = runs.map((run) => ({
    accountId: automation.accountId,
    id: randomUUID(),
    automationId: automation.id,
    contactId: run.contactId,
    state: 'running' as const,
    source: run.source,
    steps: automation.steps,
    data: run.data,
    createdAt: now,
    updatedAt: now,
  }))
  await repo.insertRuns(tx, rows)
  await enqueue(
    tx,
    clock,
    rows.map((row) => ({
      accountId: row.accountId,
      queue: RUN_QUEUE,
      payload: { run_id: row.id },
      concurrencyKey: row.id,
    })),
  )
  return rows.map((row) => row.id)
}

function signalStarts(automation: repo.AutomationRow, signal: Signal): boolean {
  const trigger = automation.trigger
  if (trigger.type === 'contact_created') return signal.name === 'contact.created'
  if (trigger.type === 'optin_confirmed')
    return signal.name === 'optin.confirmed' && signal.data.channel === trigger.channel
  if (trigger.type === 'tag_added') return signal.name === 'tag.added' && signal.data.tag === trigger.tag
  if (trigger.type === 'keyword') {
    return (
      signal.name === 'message.received' &&
      signal.data.direction === 'inbound' &&
      signal.data.channel === 'chat' &&
      typeof signal.data.text === 'string' &&
      keywordMatches(signal.data.text, trigger.keywords)
    )
  }
  return false
}

export const automationSignals: SignalListener = {
  async accepts(tx, accountId, name) {
    const kind = SIGNAL_TRIGGERS[name]
    return kind ? repo.anyActiveByTrigger(tx, accountId, kind) : false
  },
  acceptsSql(accountId, name) {
    const kind = SIGNAL_TRIGGERS[name]
    return kind ? repo.anyActiveByTriggerSql(accountId, kind) : sql`false`
  },
  async handle(tx, clock, list) {
    const byGroup = new Map<string, Signal[]>()
    for (const signal of list) {
      const kind = SIGNAL_TRIGGERS[signal.name]
      if (!kind || !signal.contactId) continue
      const group = `${signal.accountId}/${kind}`
      byGroup.set(group, [...(byGroup.get(group) ?? []), signal])
    }
    for (const [group, grouped] of byGroup) {
      const [accountId, kind] = group.split('/')
      for (const automation of await repo.activeByTrigger(tx, accountId, kind)) {
        const starting = grouped.filter((signal) => signalStarts(automation, signal))
        if (starting.length === 0) continue
        await startRuns(
          tx,
          clock,
          automation,
          starting.map((signal) => ({
            contactId: signal.contactId,
            data: { event: signal.name, ...signal.data },
            source: 'event',
          })),
        )
        const source = await repo.sourceOf(tx, accountId, automation.id)
        if (source) await repo.countSourceEvent(tx, accountId, source.id, clock.now())
      }
    }
  },
}

/** The run ends as failed or cancelled, for `reason`. */
export async function finishRun(
  tx: Db,
  clock: Clock,
  run: repo.RunRow,
  log: RunLogEntry[],
  state: 'failed' | 'cancelled',
  reason: string,
) {
  const now = clock.now()
  await repo.updateRun(tx, run.accountId, run.id, {
    log,
    state,
    reason,
    waitUntil: null,
    waitReason: null,
    updatedAt: now,
    finishedAt: now,
  })
}

/** The automations' jobs: a run's steps one after another, and the calendar feeds' polls and starts. */
export function automationsEngine(deps: AutomationsEngineDeps) {
  const { db, clock } = deps

  async function ensurePolling(tx: Db, accountId: string, source: repo.SourceRow | null) {
    if (source?.kind !== 'calendar') return
    // activation must not start a second polling chain
    if (await jobPending(tx, { accountId, queue: CALENDAR_POLL_QUEUE, key: 'source_id', value: source.id })) return
    await enqueue(tx, clock, { accountId, queue: CALENDAR_POLL_QUEUE, payload: { source_id: source.id } })
  }

  // ---- running a step -------------------------------------------------------------------------------------------

  type External = Extract<Step, { type: 'send_text' | 'webhook' | 'notify_team' }>
  /** what one transaction has read once (a run's steps in a row share it) */
  type Loaded = { automation?: repo.AutomationRow | null; account?: Account }
  type Outcome = { stop: true } | { stop: false; external?: { step: External; index: number } }

  const entry = (
    index: number,
    step: Step,
    result: RunLogEntry['result'],
    reason: string | null = null,
    detail?: Record<string, unknown>,
  ): RunLogEntry => ({
    step: index,
    type: step.type,
    at: clock.now().toISOString(),
    result,
    reason,
    ...(detail ? { detail } : {}),
  })

  /** The run moves on from `index` (to `next`, or finishes when there is none). */
  async function advance(tx: Db, run: repo.RunRow, log: RunLogEntry[], next: number | null) {
    const now = clock.now()
    const done = next === null || next >= run.steps.length
    await repo.updateRun(tx, run.accountId, run.id, {
      log,
      stepIndex: done ? run.steps.length : next,
      state: done ? 'completed' : 'running',
      waitUntil: null,
      waitReason: null,
      updatedAt: now,
      ...(done ? { finishedAt: now } : {}),
    })
  }

  const finish = (tx: Db, run: repo.RunRow, log: RunLogEntry[], state: 'failed' | 'cancelled', reason: string) =>
    finishRun(tx, clock, run, log, state, reason)

  const sendingBlocked = (account: Account) => account.status === 'blocked' || account.sendingPaused
  const sends = (step: Step) =>
    step.type === 'send_template' || step.type === 'send_text' || step.type === 'double_optin'

  /** One step inside the run's transaction; external calls are marked `sending` here and made after the commit. */
  async function stepOnce(tx: Db, accountId: string, runId: string, loaded: Loaded): Promise<Outcome> {
    const run = await repo.findRun(tx, accountId, runId, { lock: true })
    if (!run || FINAL.includes(run.state)) return { stop: true }
    loaded.automation ??= await repo.findAutomation(tx, accountId, run.automationId)
    const automation = loaded.automation
    if (!automation) return { stop: true }
    const now = clock.now()
    if (run.state === 'waiting' && run.waitReason === 'until' && run.waitUntil && run.waitUntil > now)
      return { stop: true }
    if (automation.status !== 'active') {
      await repo.updateRun(tx, accountId, run.id, {
        state: 'waiting',
        waitReason: 'automation_paused',
        waitUntil: null,
        updatedAt: now,
      })
      return { stop: true }
    }
    const index = run.stepIndex
    const step = run.steps[index]
    if (!step) {
      await advance(tx, run, run.log, null)
      return { stop: true }
    }
    const log = [...run.log]
    loaded.account ??= await getAccount(tx, accountId)
    const account = loaded.account
    if (sends(step) && sendingBlocked(account)) {
      const until = new Date(now.getTime() + SENDING_BLOCKED_RETRY_MS)
      await repo.updateRun(tx, accountId, run.id, {
        state: 'waiting',
        waitReason: 'sending_paused',
        waitUntil: until,
        updatedAt: now,
      })
      await enqueue(tx, clock, {
        accountId,
        queue: RUN_QUEUE,
        payload: { run_id: run.id },
        runAt: until,
        concurrencyKey: run.id,
      })
      return { stop: true }
    }
    const contact = run.contactId ? await contactForAutomation(tx, accountId, run.contactId, { lock: true }) : null
    if (step.type !== 'wait' && step.type !== 'webhook' && step.type !== 'notify_team' && !contact) {
      await finish(
        tx,
        run,
        [...log, entry(index, step, 'failed', run.contactId ? 'contact_deleted' : 'no_contact')],
        'cancelled',
        run.contactId ? 'contact_deleted' : 'no_contact',
      )
      return { stop: true }
    }
    switch (step.type) {
      case 'wait': {
        if (run.waitReason === 'until' && run.waitUntil && run.waitUntil <= now) {
          await advance(tx, run, [...log, entry(index, step, 'done')], index + 1)
          return { stop: false }
        }
        const until = step.duration
          ? new Date(now.getTime() + durationMs(step.duration))
          : nextTimeOfDay(now, step.until_time ?? '00:00', account.timezone)
        await repo.updateRun(tx, accountId, run.id, {
          state: 'waiting',
          waitReason: 'until',
          waitUntil: until,
          log: [...log, entry(index, step, 'waiting', null, { until: until.toISOString() })],
          updatedAt: now,
        })
        await enqueue(tx, clock, {
          accountId,
          queue: RUN_QUEUE,
          payload: { run_id: run.id },
          runAt: until,
          concurrencyKey: run.id,
        })
        return { stop: true }
      }
      case 'add_tag':
      case 'remove_tag': {
        const result = await changeContactTag(tx, clock, {
          accountId,
          contactId: contact!.id,
          tag: step.tag,
          change: step.type === 'add_tag' ? 'add' : 'remove',
        })
        const line = result.refused
          ? entry(index, step, 'skipped', result.refused)
          : entry(index, step, 'done', null, { changed: result.changed })
        await advance(tx, run, [...log, line], index + 1)
        return { stop: false }
      }
      case 'branch': {
        const { condition } = step
        const holds =
          condition.type === 'contact_field'
            ? await contactMeetsFieldConditions(tx, {
                accountId,
                contactId: contact!.id,
                conditions: [fieldConditionOf(condition)],
                now,
                timezone: account.timezone,
              })
            : conditionHolds(condition, {
                tags: contact!.tags,
                optinChat: contact!.optinChat,
                optinEmail: contact!.optinEmail,
                data: run.data,
              })
        const next = branchTarget(step, index, holds)
        await advance(
          tx,
          run,
          [...log, entry(index, step, 'done', null, { condition: holds, next: next ?? 'end' })],
          next,
        )
        return { stop: false }
      }
      case 'double_optin': {
        const started = await deps.startOptin(tx, clock, { accountId, contactId: contact!.id, channel: step.channel })
        const line = started
          ? entry(index, step, 'done', null, { channel: step.channel })
          : entry(index, step, 'skipped', 'already_confirmed_or_no_address')
        await advance(tx, run, [...log, line], index + 1)
        return { stop: false }
      }
      case 'enroll_followup': {
        const result = await deps.followups.enroll(tx, clock, {
          accountId,
          sequenceId: step.followup_id,
          contactId: contact!.id,
        })
        const line = result.enrolled
          ? entry(index, step, 'done', null, { enrollment_id: result.enrollment_id })
          : entry(index, step, 'skipped', result.reason)
        await advance(tx, run, [...log, line], index + 1)
        return { stop: false }
      }
      case 'send_template': {
        if (contact!.optinChat !== 'confirmed') {
          const reason = contact!.optinChat === 'opted_out' ? 'contact_opted_out' : 'contact_not_optin'
          await advance(tx, run, [...log, entry(index, step, 'skipped', reason)], index + 1)
          return { stop: false }
        }
        const sendId = await deps.queueTemplateSend(tx, clock, {
          accountId,
          contactId: contact!.id,
          templateId: step.template_id,
          variables: step.variables ?? {},
          runId: run.id,
        })
        await advance(tx, run, [...log, entry(index, step, 'queued', null, { send_id: sendId })], index + 1)
        return { stop: false }
      }
      default: {
        const last = log.at(-1)
        const inFlight = last?.step === index && last.result === 'sending'
        if (inFlight && step.type === 'send_text') {
          // the worker died during the provider call: the text may have gone out, so it is never sent again
          log[log.length - 1] = entry(index, step, 'failed', 'interrupted')
          await finish(tx, run, log, 'failed', 'interrupted')
          return { stop: true }
        }
        if (!inFlight) {
          await repo.updateRun(tx, accountId, run.id, { log: [...log, entry(index, step, 'sending')], updatedAt: now })
        }
        return { stop: false, external: { step, index } }
      }
    }
  }

  /** The external call of a step marked `sending`: its result, or an error worth retrying (webhooks). */
  async function callOut(
    run: {
      accountId: string
      id: string
      contactId: string | null
      data: Record<string, unknown>
      automationId: string
    },
    step: External,
    index: number,
    job: ClaimedJob,
  ): Promise<{ ok: true; detail?: Record<string, unknown> } | { ok: false; reason: string; retry?: boolean }> {
    if (step.type === 'send_text') {
      const account = await getAccount(db, run.accountId)
      try {
        const result = await deps.messaging.send(
          { accountId: run.accountId, account },
          { contact_id: run.contactId ?? '', text: step.text },
        )
        return { ok: true, detail: { message_id: result.sent?.id ?? null } }
      } catch (error) {
        if (error instanceof AppError) {
          const key = typeof error.key === 'string' && error.key !== error.code ? `: ${error.key}` : ''
          return { ok: false, reason: `${error.code}${key}` }
        }
        throw error
      }
    }
    if (step.type === 'notify_team') {
      try {
        await deps.channels.sendEmail(run.accountId, { to: step.to.join(', '), subject: step.subject, text: step.text })
        return { ok: true }
      } catch (error) {
        if (error instanceof AppError) return { ok: false, reason: error.code }
        throw error
      }
    }
    const automation = await repo.findAutomation(db, run.accountId, run.automationId)
    if (!automation) return { ok: false, reason: 'automation_deleted' }
    const body = JSON.stringify({
      id: `automation.step:${run.id}:${index}`,
      event: 'automation.step',
      created_at: clock.now().toISOString(),
      data: {
        automation_id: run.automationId,
        run_id: run.id,
        contact_id: run.contactId,
        step: index,
        trigger: run.data,
      },
    })
    const timestamp = Math.floor(clock.now().getTime() / 1000)
    const secret = deps.secrets.open(automation.signingSecretSealed)
    try {
      const response = await deps.http.send(step.url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': deps.userAgent,
          'x-service-event': 'automation.step',
          'x-service-delivery': `automation.step:${run.id}:${index}`,
          'x-service-timestamp': String(timestamp),
          'x-service-signature': deps.sign(secret, timestamp, body),
        },
      })
      if (response.status >= 200 && response.status < 300) return { ok: true, detail: { status: response.status } }
      return { ok: false, reason: `http_${response.status}`, retry: job.attempts < WEBHOOK_ATTEMPTS }
    } catch (error) {
      if (error instanceof OutboundError) {
        return {
          ok: false,
          reason: error.code,
          retry: error.code !== 'blocked_target' && job.attempts < WEBHOOK_ATTEMPTS,
        }
      }
      throw error
    }
  }

  async function runJob(job: ClaimedJob) {
    const runId = String(job.payload.run_id)
    for (let guard = 0; guard < 60; guard++) {
      // the steps that only write (tags, branches, queued sends) run in one transaction, up to a call or a wait
      const outcome = await db.transaction(async (tx) => {
        const loaded: Loaded = {}
        for (;;) {
          const next = await stepOnce(tx, job.accountId, runId, loaded)
          if (next.stop || next.external) return next
        }
      })
      if (outcome.stop || !outcome.external) return
      const { step, index } = outcome.external
      const run = await repo.findRun(db, job.accountId, runId)
      if (!run) return
      const result = await callOut(run, step, index, job)
      if (!result.ok && result.retry) throw new Error(`webhook step ${index} failed: ${result.reason}`)
      const settled = await db.transaction(async (tx) => {
        const current = await repo.findRun(tx, job.accountId, runId, { lock: true })
        if (!current || current.stepIndex !== index || FINAL.includes(current.state)) return false
        const log = [...current.log]
        const line = result.ok
          ? entry(index, step, 'done', null, result.detail)
          : entry(index, step, 'failed', result.reason)
        if (log.at(-1)?.step === index && log.at(-1)?.result === 'sending') log[log.length - 1] = line
        else log.push(line)
        if (result.ok) await advance(tx, current, log, index + 1)
        else await finish(tx, current, log, 'failed', result.reason)
        return result.ok
      })
      if (!settled) return
    }
    // a run of many steps goes on in a new job rather than holding this one
    await db.transaction((tx) =>
      enqueue(tx, clock, {
        accountId: job.accountId,
        queue: RUN_QUEUE,
        payload: { run_id: runId },
        concurrencyKey: runId,
      }),
    )
  }

  // ---- calendar feeds -------------------------------------------------------------------------------------------

  async function pollCalendar(job: ClaimedJob) {
    const source = await repo.sourceById(db, String(job.payload.source_id))
    if (!source || source.accountId !== job.accountId || source.kind !== 'calendar' || !source.feedUrl) return
    const automation = await repo.findAutomation(db, source.accountId, source.automationId)
    if (automation?.status !== 'active' || automation.trigger.type !== 'calendar') return
    const trigger = automation.trigger
    const now = clock.now()
    let error: string | null = null
    let occurrences: ReturnType<typeof calendarOccurrences> = []
    try {
      const response = await deps.http.send(source.feedUrl, { method: 'GET', headers: { accept: 'text/calendar' } })
      if (response.status !== 200) error = `the feed answered HTTP ${response.status}`
      else
        occurrences = calendarOccurrences(
          response.body.toString('utf8'),
          now,
          new Date(now.getTime() + CALENDAR_HORIZON_MS),
        )
    } catch (failure) {
      error =
        failure instanceof OutboundError
          ? `the feed could not be read: ${failure.message}`
          : `the feed is not valid iCalendar: ${(failure as Error).message}`
    }
    const account = await getAccount(db, source.accountId)
    await db.transaction(async (tx) => {
      let seen = 0
      for (const occurrence of occurrences) {
        if (!occurrence.email && !occurrence.phone) continue
        const known = await repo.calendarEvent(tx, source.accountId, source.id, occurrence.uid)
        if (known && known.startsAt.getTime() === occurrence.startsAt.getTime()) continue
        const { contactId } = await findOrCreateInboundContact(tx, clock, {
          accountId: source.accountId,
          language: account.language,
          name: occurrence.name ?? '',
          ...(occurrence.phone ? { phone: occurrence.phone } : { email: occurrence.email ?? '' }),
        }).catch(() => ({ contactId: null }))
        if (!contactId) continue
        await repo.upsertCalendarEvent(tx, {
          accountId: source.accountId,
          sourceId: source.id,
          uid: occurrence.uid,
          startsAt: occurrence.startsAt,
          contactId,
        })
        const startAt = new Date(
          Math.max(now.getTime(), occurrence.startsAt.getTime() - (trigger.offset_minutes ?? 1440) * 60_000),
        )
        await enqueue(tx, clock, {
          accountId: source.accountId,
          queue: CALENDAR_START_QUEUE,
          payload: { source_id: source.id, uid: occurrence.uid, starts_at: occurrence.startsAt.toISOString() },
          runAt: startAt,
        })
        if (!known) seen++
      }
      await repo.updateSource(tx, source.accountId, source.id, {
        lastPolledAt: now,
        ...(error ? { lastError: error, lastErrorAt: now } : {}),
      })
      if (seen > 0) {
        for (let i = 0; i < seen; i++) await repo.countSourceEvent(tx, source.accountId, source.id, now)
      }
      await enqueue(tx, clock, {
        accountId: source.accountId,
        queue: CALENDAR_POLL_QUEUE,
        payload: { source_id: source.id },
        runAt: new Date(now.getTime() + (trigger.poll_minutes ?? 15) * 60_000),
      })
    })
  }

  async function startCalendarRun(job: ClaimedJob) {
    const { source_id, uid, starts_at } = job.payload as { source_id: string; uid: string; starts_at: string }
    await db.transaction(async (tx) => {
      const source = await repo.sourceById(tx, source_id)
      if (!source || source.accountId !== job.accountId) return
      const event = await repo.calendarEvent(tx, source.accountId, source.id, uid)
      // a rescheduled event has a newer job of its own; a started one is not started twice
      if (!event || event.runId || event.startsAt.toISOString() !== starts_at || !event.contactId) return
      const automation = await repo.findAutomation(tx, source.accountId, source.automationId)
      if (automation?.status !== 'active') return
      const [runId] = await startRuns(tx, clock, automation, [
        { contactId: event.contactId, data: { event: { uid, starts_at } }, source: 'calendar' },
      ])
      await repo.setCalendarRun(tx, source.accountId, source.id, uid, runId)
    })
  }

  return { runJob, pollCalendar, startCalendarRun, ensurePolling }
}
