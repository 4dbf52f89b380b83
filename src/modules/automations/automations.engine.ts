import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { type Account, getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { Signal, SignalListener, SignalName } from '../../platform/events/signals.ts'
import { AppError } from '../../platform/http/errors.ts'
import {
  type ClaimedJob,
  completeJobs,
  enqueue,
  jobPending,
  killJob,
  LeaseLostError,
  retryJob,
} from '../../platform/jobs/jobs.ts'
import { type BatchContext, backoffAfter, type JobContext } from '../../platform/jobs/runner.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import type { ChannelsService } from '../channels/index.ts'
import {
  type AutomationContact,
  changeContactTags,
  contactMeetsFieldConditions,
  contactsForAutomation,
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
/** A batch records the calls out of its runs and walks them on this many times, then their runs go on in new jobs. */
const MAX_CALL_ROUNDS = 60
/** the run queue's attempts for a thrown error (its handler's maxAttempts in index.ts) */
export const RUN_MAX_ATTEMPTS = 10
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
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
  /** queues the template sends of a batch of runs' steps in the batch's transaction (send ids in order) */
  queueTemplateSends: (
    tx: Db,
    clock: Clock,
    list: Array<{
      accountId: string
      contactId: string
      templateId: string
      variables: Record<string, string>
      runId: string
    }>,
  ) => Promise<string[]>
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

  // ---- running steps, a batch of runs at a time --------------------------------------------------------------------

  type External = Extract<Step, { type: 'send_text' | 'webhook' | 'notify_team' }>
  type CallResult = { ok: true; detail?: Record<string, unknown> } | { ok: false; reason: string; retry?: boolean }
  /** a job of the batch: its run, and the result of the run's call out when it made one since its last commit */
  type Pending = {
    job: ClaimedJob
    runId: string
    result?: { index: number; step: External; outcome: CallResult }
    /** the call out threw (not an answer): the job is tried again with the runner's backoff, the run stays `sending` */
    thrown?: string
  }
  /** a run whose step calls out after the commit (its job stays held until the result is recorded) */
  type Calling = {
    job: ClaimedJob
    run: repo.RunRow
    automation: repo.AutomationRow
    step: External
    index: number
  }
  /** one run in a round: its state as it will be written, and what the round does with its job */
  type Walk = {
    job: ClaimedJob
    run: repo.RunRow
    automation: repo.AutomationRow | null
    changed: boolean
    /** done stepping in this transaction: the job completes (or was requeued) unless `calling` */
    stopped: boolean
    calling?: { step: External; index: number }
    /** the run's next job, when it waits for a time */
    nextJobAt?: Date
    retryAt?: Date
    retryError?: string
    /** given up after the queue's attempts (the runner's maxAttempts for a thrown error) */
    dead?: boolean
  }

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

  /** The run moves on from its step (to `next`, or finishes when there is none), with `log` as its history. */
  function advance(walk: Walk, log: RunLogEntry[], next: number | null) {
    const now = clock.now()
    const done = next === null || next >= walk.run.steps.length
    Object.assign(walk.run, {
      log,
      stepIndex: done ? walk.run.steps.length : next,
      state: done ? 'completed' : 'running',
      waitUntil: null,
      waitReason: null,
      updatedAt: now,
      ...(done ? { finishedAt: now } : {}),
    })
    walk.changed = true
    if (done) walk.stopped = true
  }

  function finishWalk(walk: Walk, log: RunLogEntry[], state: 'failed' | 'cancelled', reason: string) {
    const now = clock.now()
    Object.assign(walk.run, { log, state, reason, waitUntil: null, waitReason: null, updatedAt: now, finishedAt: now })
    walk.changed = true
    walk.stopped = true
  }

  function waitWalk(walk: Walk, change: Partial<repo.RunRow>, jobAt: Date | null) {
    Object.assign(walk.run, { state: 'waiting', ...change, updatedAt: clock.now() })
    walk.changed = true
    walk.stopped = true
    if (jobAt) walk.nextJobAt = jobAt
  }

  const sendingBlocked = (account: Account) => account.status === 'blocked' || account.sendingPaused
  const sends = (step: Step) =>
    step.type === 'send_template' || step.type === 'send_text' || step.type === 'double_optin'
  const needsContact = (step: Step) => step.type !== 'wait' && step.type !== 'webhook' && step.type !== 'notify_team'

  /** A branch's condition for a run and its contact (kept apart: condition kinds grow on their own). */
  const branchHolds = async (
    tx: Db,
    step: Extract<Step, { type: 'branch' }>,
    run: repo.RunRow,
    contact: AutomationContact,
    timezone: () => Promise<string>,
  ): Promise<boolean> => {
    const { condition } = step
    if (condition.type === 'contact_field') {
      // a custom field is read when the step runs (one probe of the contact's row, only for this kind)
      return contactMeetsFieldConditions(tx, {
        accountId: run.accountId,
        contactId: contact.id,
        conditions: [fieldConditionOf(condition)],
        now: clock.now(),
        timezone: await timezone(),
      })
    }
    return conditionHolds(condition, {
      tags: contact.tags,
      optinChat: contact.optinChat,
      optinEmail: contact.optinEmail,
      data: run.data,
    })
  }

  /** The result of a call out, recorded on its run (which must still be at that step). */
  function applyResult(walk: Walk, result: NonNullable<Pending['result']>) {
    const { run } = walk
    const { index, step, outcome } = result
    if (run.stepIndex !== index || FINAL.includes(run.state)) {
      walk.stopped = true
      return
    }
    if (!outcome.ok && outcome.retry) {
      // a webhook step tried again later (at least once): the run stays `sending` at this step
      walk.stopped = true
      walk.retryAt = new Date(clock.now().getTime() + backoffAfter(walk.job.attempts))
      walk.retryError = `webhook step ${index} failed: ${outcome.reason}`
      return
    }
    const log = [...run.log]
    const line = outcome.ok
      ? entry(index, step, 'done', null, outcome.detail)
      : entry(index, step, 'failed', outcome.reason)
    if (log.at(-1)?.step === index && log.at(-1)?.result === 'sending') log[log.length - 1] = line
    else log.push(line)
    if (outcome.ok) advance(walk, log, index + 1)
    else finishWalk(walk, log, 'failed', outcome.reason)
  }

  /**
   * One transaction over a batch of an account's runs: the runs locked and read with their automations, their
   * contacts with their tags, then every run walked step by step in rounds; each round does the steps of one kind for
   * all runs together (the tag changes of a round in one read and one write, the template sends in two statements),
   * until each run reaches a wait, a call out or its end. Then the runs' new states in one statement, their next jobs
   * in one, and the finished jobs completed in one. Steps that call out are marked `sending` here and made after the
   * commit. Returns those calls.
   */
  async function walkRuns(
    accountId: string,
    pending: Pending[],
    continueSteps: boolean,
  ): Promise<{ calls: Calling[]; settled: ClaimedJob[] }> {
    return db.transaction(async (tx) => {
      const found = await repo.lockRuns(
        tx,
        accountId,
        pending.map((p) => p.runId),
      )
      const byId = new Map(found.map((row) => [row.run.id, row]))
      const walks: Walk[] = []
      const settledOnly: ClaimedJob[] = []
      for (const p of pending) {
        const row = byId.get(p.runId)
        if (!row) {
          settledOnly.push(p.job)
          continue
        }
        const walk: Walk = {
          job: p.job,
          run: { ...row.run, log: [...row.run.log] },
          automation: row.automation,
          changed: false,
          stopped: false,
        }
        if (p.thrown !== undefined) {
          walk.stopped = true
          walk.retryError = p.thrown
          if (p.job.attempts >= RUN_MAX_ATTEMPTS) walk.dead = true
          else walk.retryAt = new Date(clock.now().getTime() + backoffAfter(p.job.attempts))
        } else if (p.result) {
          applyResult(walk, p.result)
          if (!continueSteps && !walk.stopped) {
            // a run of many calls out goes on in a new job rather than holding this one
            walk.stopped = true
            walk.nextJobAt = clock.now()
          }
        }
        walks.push(walk)
      }
      const contactIds = walks.flatMap((w) => (w.run.contactId && !w.stopped ? [w.run.contactId] : []))
      const contacts = await contactsForAutomation(tx, accountId, contactIds, { lock: true })
      let account: Account | null = null
      const accountOf = async () => {
        account ??= await getAccount(tx, accountId)
        return account
      }
      for (let active = walks.filter((w) => !w.stopped); active.length > 0; active = active.filter((w) => !w.stopped)) {
        const tagChanges: Array<{ walk: Walk; step: Extract<Step, { type: 'add_tag' | 'remove_tag' }> }> = []
        const templateSends: Array<{ walk: Walk; step: Extract<Step, { type: 'send_template' }> }> = []
        for (const walk of active) {
          const { run, automation } = walk
          const now = clock.now()
          if (FINAL.includes(run.state) || !automation) {
            walk.stopped = true
            continue
          }
          if (run.state === 'waiting' && run.waitReason === 'until' && run.waitUntil && run.waitUntil > now) {
            walk.stopped = true
            continue
          }
          if (automation.status !== 'active') {
            waitWalk(walk, { waitReason: 'automation_paused', waitUntil: null }, null)
            continue
          }
          const index = run.stepIndex
          const step = run.steps[index]
          if (!step) {
            advance(walk, run.log, null)
            continue
          }
          if (sends(step) && sendingBlocked(await accountOf())) {
            const until = new Date(now.getTime() + SENDING_BLOCKED_RETRY_MS)
            waitWalk(walk, { waitReason: 'sending_paused', waitUntil: until }, until)
            continue
          }
          const contact = run.contactId ? (contacts.get(run.contactId) ?? null) : null
          if (needsContact(step) && !contact) {
            const reason = run.contactId ? 'contact_deleted' : 'no_contact'
            finishWalk(walk, [...run.log, entry(index, step, 'failed', reason)], 'cancelled', reason)
            continue
          }
          switch (step.type) {
            case 'wait': {
              if (run.waitReason === 'until' && run.waitUntil && run.waitUntil <= now) {
                advance(walk, [...run.log, entry(index, step, 'done')], index + 1)
                break
              }
              const until = step.duration
                ? new Date(now.getTime() + durationMs(step.duration))
                : nextTimeOfDay(now, step.until_time ?? '00:00', (await accountOf()).timezone)
              waitWalk(
                walk,
                {
                  waitReason: 'until',
                  waitUntil: until,
                  log: [...run.log, entry(index, step, 'waiting', null, { until: until.toISOString() })],
                },
                until,
              )
              break
            }
            case 'add_tag':
            case 'remove_tag':
              tagChanges.push({ walk, step })
              break
            case 'branch': {
              const holds = await branchHolds(tx, step, run, contact!, async () => (await accountOf()).timezone)
              const next = branchTarget(step, index, holds)
              advance(
                walk,
                [...run.log, entry(index, step, 'done', null, { condition: holds, next: next ?? 'end' })],
                next,
              )
              break
            }
            case 'double_optin': {
              const started = await deps.startOptin(tx, clock, {
                accountId,
                contactId: contact!.id,
                channel: step.channel,
              })
              const line = started
                ? entry(index, step, 'done', null, { channel: step.channel })
                : entry(index, step, 'skipped', 'already_confirmed_or_no_address')
              advance(walk, [...run.log, line], index + 1)
              break
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
              advance(walk, [...run.log, line], index + 1)
              break
            }
            case 'send_template': {
              if (contact!.optinChat !== 'confirmed') {
                const reason = contact!.optinChat === 'opted_out' ? 'contact_opted_out' : 'contact_not_optin'
                advance(walk, [...run.log, entry(index, step, 'skipped', reason)], index + 1)
                break
              }
              templateSends.push({ walk, step })
              break
            }
            default: {
              const log = [...run.log]
              const last = log.at(-1)
              const inFlight = last?.step === index && last.result === 'sending'
              if (inFlight && step.type === 'send_text') {
                // the worker died during the provider call: the text may have gone out, so it is never sent again
                log[log.length - 1] = entry(index, step, 'failed', 'interrupted')
                finishWalk(walk, log, 'failed', 'interrupted')
                break
              }
              if (!inFlight) {
                Object.assign(run, { log: [...log, entry(index, step, 'sending')], updatedAt: now })
                walk.changed = true
              }
              walk.stopped = true
              walk.calling = { step, index }
            }
          }
        }
        if (tagChanges.length > 0) {
          const results = await changeContactTags(
            tx,
            clock,
            accountId,
            tagChanges.map(({ walk, step }) => ({
              contactId: walk.run.contactId!,
              tag: step.tag,
              change: step.type === 'add_tag' ? ('add' as const) : ('remove' as const),
            })),
          )
          tagChanges.forEach(({ walk, step }, i) => {
            const result = results[i]
            const index = walk.run.stepIndex
            const contact = contacts.get(walk.run.contactId!)!
            if (result.changed) {
              contact.tags =
                step.type === 'add_tag' ? [...contact.tags, step.tag] : contact.tags.filter((t) => t !== step.tag)
            }
            const line = result.refused
              ? entry(index, step, 'skipped', result.refused)
              : entry(index, step, 'done', null, { changed: result.changed })
            advance(walk, [...walk.run.log, line], index + 1)
          })
        }
        if (templateSends.length > 0) {
          const ids = await deps.queueTemplateSends(
            tx,
            clock,
            templateSends.map(({ walk, step }) => ({
              accountId,
              contactId: walk.run.contactId!,
              templateId: step.template_id,
              variables: step.variables ?? {},
              runId: walk.run.id,
            })),
          )
          templateSends.forEach(({ walk, step }, i) => {
            const index = walk.run.stepIndex
            advance(walk, [...walk.run.log, entry(index, step, 'queued', null, { send_id: ids[i] })], index + 1)
          })
        }
      }
      await repo.writeRuns(
        tx,
        accountId,
        walks.filter((w) => w.changed).map((w) => w.run),
      )
      const next = walks.filter((w) => w.nextJobAt)
      await enqueue(
        tx,
        clock,
        next.map((w) => ({
          accountId,
          queue: RUN_QUEUE,
          payload: { run_id: w.run.id },
          runAt: w.nextJobAt,
          concurrencyKey: w.run.id,
        })),
      )
      for (const walk of walks.filter((w) => w.retryAt)) {
        await retryJob(tx, clock, walk.job, walk.retryAt!, walk.retryError ?? null)
      }
      for (const walk of walks.filter((w) => w.dead)) await killJob(tx, clock, walk.job, walk.retryError ?? 'failed')
      const done = [...settledOnly, ...walks.filter((w) => !w.calling && !w.retryAt && !w.dead).map((w) => w.job)]
      await completeJobs(tx, done)
      return {
        settled: [...done, ...walks.filter((w) => w.retryAt || w.dead).map((w) => w.job)],
        calls: walks.flatMap((w) =>
          w.calling && w.automation
            ? [{ job: w.job, run: w.run, automation: w.automation, step: w.calling.step, index: w.calling.index }]
            : [],
        ),
      }
    })
  }

  /** The external call of a step marked `sending`: its result, or an error worth retrying (webhooks). */
  async function callOut(call: Calling): Promise<CallResult> {
    const { run, step, index, job } = call
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
    const secret = deps.secrets.open(call.automation.signingSecretSealed)
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

  /**
   * The jobs of one account: walked together (walkRuns); the calls out of the walk are made at once after its
   * commit, and their results recorded (and their runs walked on) in the next walk, up to MAX_CALL_ROUNDS.
   */
  async function runAccountJobs(accountId: string, jobs: ClaimedJob[], settled: (job: ClaimedJob) => void) {
    let pending: Pending[] = jobs.map((job) => ({ job, runId: String(job.payload.run_id) }))
    for (let round = 0; pending.length > 0; round++) {
      const walked = await walkRuns(accountId, pending, round < MAX_CALL_ROUNDS)
      for (const job of walked.settled) settled(job)
      // a call that throws (not an answer) concerns its own run only: the others' results are recorded all the same
      pending = await Promise.all(
        walked.calls.map(async (call): Promise<Pending> => {
          try {
            return {
              job: call.job,
              runId: call.run.id,
              result: { index: call.index, step: call.step, outcome: await callOut(call) },
            }
          } catch (error) {
            return { job: call.job, runId: call.run.id, thrown: error instanceof Error ? error.message : String(error) }
          }
        }),
      )
    }
  }

  /**
   * Due run jobs, a claim at once (the batch handler of RUN_QUEUE), per account. A job whose run is missing, finished
   * or not yet due simply completes. When a batch fails as a whole (a lease lost, an error in one run's step), each
   * job goes on its own, so one run never holds back the others; the errors of those alone are retried by the runner.
   */
  async function runBatch(jobs: ClaimedJob[], context: Pick<BatchContext, 'settled'>) {
    const byAccount = new Map<string, ClaimedJob[]>()
    const seen = new Set<string>()
    for (const job of jobs) {
      const runId = String(job.payload.run_id)
      // a malformed job, or a second one of the same run (a run's jobs run one at a time), is simply completed (by
      // the runner, as the batch's unsettled jobs)
      if (!UUID.test(runId) || seen.has(`${job.accountId}/${runId}`)) continue
      seen.add(`${job.accountId}/${runId}`)
      byAccount.set(job.accountId, [...(byAccount.get(job.accountId) ?? []), job])
    }
    let failure: unknown = null
    for (const [accountId, ofAccount] of byAccount) {
      const done = new Set<ClaimedJob>()
      const settled = (job: ClaimedJob) => {
        done.add(job)
        context.settled(job)
      }
      try {
        await runAccountJobs(accountId, ofAccount, settled)
      } catch (error) {
        if (ofAccount.length === 1) {
          if (!(error instanceof LeaseLostError)) failure ??= error
          continue
        }
        for (const job of ofAccount.filter((j) => !done.has(j))) {
          try {
            await runAccountJobs(accountId, [job], settled)
          } catch (e) {
            if (!(e instanceof LeaseLostError)) failure ??= e
          }
        }
      }
    }
    if (failure) throw failure
  }

  /** One run's job (runBatch with one job). */
  async function runJob(job: ClaimedJob, context?: Pick<JobContext, 'settled'>) {
    await runBatch([job], { settled: () => context?.settled() })
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

  return { runJob, runBatch, pollCalendar, startCalendarRun, ensurePolling }
}
