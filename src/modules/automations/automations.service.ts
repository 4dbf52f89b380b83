import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { type Account, getAccount } from '../../platform/auth/accounts.service.ts'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { Signal, SignalListener, SignalName } from '../../platform/events/signals.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import { rangeStart, type StatisticsRange, sendFunnel } from '../../platform/http/statistics.ts'
import { type ClaimedJob, enqueue } from '../../platform/jobs/jobs.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import type { ChannelsService } from '../channels/index.ts'
import { changeContactTag, contactForAutomation, findOrCreateInboundContact } from '../contacts/index.ts'
import type { MessagingService } from '../messaging/index.ts'
import type { TemplatesService } from '../templates/index.ts'
import { calendarOccurrences } from './automations.calendar.ts'
import * as repo from './automations.repository.ts'
import {
  applySafetyRules,
  branchTarget,
  conditionHolds,
  durationMs,
  keywordMatches,
  nextTimeOfDay,
  type RunLogEntry,
  type Step,
  stepProblems,
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

export type AutomationsTenant = Pick<TenantContext, 'accountId' | 'account'>

export interface AutomationsDeps {
  db: Db
  clock: Clock
  secrets: SecretBox
  publicUrl: string
  allowPrivateTargets: boolean
  http: OutboundHttp
  templates: Pick<TemplatesService, 'get'>
  messaging: Pick<MessagingService, 'send'>
  channels: Pick<ChannelsService, 'sendEmail'>
  checkUrl: (url: string, allowPrivateTargets: boolean) => { key: string; message: string } | null
  sign: (secret: string, timestamp: number, body: string) => string
  newSecret: () => string
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
  /** the follow-ups module: whether a sequence exists in the account, and enrolling a contact in the run's transaction */
  followups: {
    exists(tx: Db, accountId: string, sequenceId: string): Promise<boolean>
    enroll(
      tx: Db,
      clock: Clock,
      input: { accountId: string; sequenceId: string; contactId: string },
    ): Promise<{ enrolled: boolean; enrollment_id: string | null; reason: string | null }>
  }
}

interface CreateInput {
  name: string
  intent: string
  trigger: Trigger
  steps: Step[]
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const FINAL: RunState[] = ['completed', 'failed', 'cancelled']
const SIGNAL_TRIGGERS: Partial<Record<SignalName, Trigger['type']>> = {
  'contact.created': 'contact_created',
  'optin.confirmed': 'optin_confirmed',
  'tag.added': 'tag_added',
  'message.received': 'keyword',
}

const sourceKindOf = (trigger: Trigger) =>
  trigger.type === 'webhook' ? 'webhook' : trigger.type === 'calendar' ? 'calendar' : 'internal'

const digest = (value: string) => createHash('sha256').update(value).digest()

export function runView(row: repo.RunRow) {
  const finished = FINAL.includes(row.state)
  return {
    id: row.id,
    automation_id: row.automationId,
    contact_id: row.contactId,
    state: row.state,
    source: row.source,
    current_step: finished ? null : row.stepIndex,
    wait_until: row.waitUntil?.toISOString() ?? null,
    reason: row.reason,
    steps: row.log,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
  }
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

export function automationsService(deps: AutomationsDeps) {
  const { db, clock } = deps

  const webhookUrl = (source: repo.SourceRow) =>
    `${deps.publicUrl}/public/automation-hooks/${source.id}/${deps.secrets.open(source.secretSealed ?? '')}`

  function view(row: repo.AutomationRow, source: repo.SourceRow | null) {
    return {
      id: row.id,
      name: row.name,
      status: row.status,
      intent: row.intent,
      trigger: row.trigger,
      steps: row.steps,
      webhook_url: source?.kind === 'webhook' ? webhookUrl(source) : null,
      notice: row.notice,
      hinweis: row.notice,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    }
  }

  async function load(tenant: AutomationsTenant, id: string, options: { lock?: boolean; tx?: Db } = {}) {
    if (!UUID.test(id)) throw notFound('automation')
    const row = await repo.findAutomation(options.tx ?? db, tenant.accountId, id, options)
    if (!row) throw notFound('automation')
    return row
  }

  /** What the schema cannot check: step rules, the templates and tags they name, the addresses they call. */
  async function validate(tenant: AutomationsTenant, input: { trigger?: Trigger; steps?: Step[] }) {
    const problems = input.steps ? stepProblems(input.steps) : []
    for (const [index, step] of (input.steps ?? []).entries()) {
      if (step.type === 'send_template') {
        const found = await deps.templates
          .get({ accountId: tenant.accountId, account: tenant.account }, step.template_id)
          .catch((error: unknown) => (error instanceof AppError && error.status === 404 ? null : Promise.reject(error)))
        if (!found) problems.push(`steps[${index}]: template ${step.template_id} does not exist`)
        else if (found.channel !== 'chat')
          problems.push(`steps[${index}]: template ${step.template_id} is not a chat template`)
      }
      if (step.type === 'enroll_followup' && !(await deps.followups.exists(db, tenant.accountId, step.followup_id))) {
        problems.push(`steps[${index}]: follow-up sequence ${step.followup_id} does not exist`)
      }
      if (step.type === 'webhook') {
        const problem = deps.checkUrl(step.url, deps.allowPrivateTargets)
        if (problem) problems.push(`steps[${index}]: ${problem.message}`)
      }
    }
    if (input.trigger?.type === 'calendar') {
      const problem = deps.checkUrl(input.trigger.feed_url, deps.allowPrivateTargets)
      if (problem) problems.push(`trigger.feed_url: ${problem.message.replace(/^url/, 'the feed address')}`)
    }
    if (problems.length > 0) throw badRequest(problems.join('; '), 'automation_invalid', { problems })
  }

  async function insertSourceFor(tx: Db, accountId: string, automationId: string, trigger: Trigger) {
    const kind = sourceKindOf(trigger)
    await repo.insertSource(tx, {
      accountId,
      id: randomUUID(),
      automationId,
      kind,
      secretSealed: kind === 'webhook' ? deps.secrets.seal(randomBytes(24).toString('base64url')) : null,
      feedUrl: trigger.type === 'calendar' ? trigger.feed_url : null,
      createdAt: clock.now(),
    })
  }

  async function ensurePolling(tx: Db, accountId: string, source: repo.SourceRow | null) {
    if (source?.kind !== 'calendar') return
    if (await repo.pollQueued(tx, accountId, CALENDAR_POLL_QUEUE, source.id)) return
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

  async function finish(tx: Db, run: repo.RunRow, log: RunLogEntry[], state: 'failed' | 'cancelled', reason: string) {
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
        const holds = conditionHolds(step.condition, {
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

  return {
    async list(tenant: AutomationsTenant, page: { limit: number; offset: number }) {
      const rows = await repo.listAutomations(db, tenant.accountId, page.limit, page.offset)
      const result = toPage(rows, page.limit, page.offset)
      const items = []
      for (const row of result.items) items.push(view(row, await repo.sourceOf(db, tenant.accountId, row.id)))
      return { ...result, items }
    },

    async get(tenant: AutomationsTenant, id: string) {
      const row = await load(tenant, id)
      return view(row, await repo.sourceOf(db, tenant.accountId, row.id))
    },

    /**
     * POST /app/automations/check: what saving this definition would do, with nothing saved. `problems` are the
     * reasons a save is refused (400 automation_invalid, the same validation); `changes` and `notice` what the
     * safety rules change, and `steps` the steps as they would be stored.
     */
    async check(tenant: AutomationsTenant, input: Omit<CreateInput, 'name'>) {
      let problems: string[] = []
      try {
        await validate(tenant, input)
      } catch (error) {
        if (!(error instanceof AppError) || error.key !== 'automation_invalid') throw error
        problems = error.details.problems as string[]
      }
      const { steps, notices, changes } = applySafetyRules(input.intent, input.steps)
      return { problems, changes, notice: notices.length > 0 ? notices.join(' ') : null, steps }
    },

    /** POST /automations: a draft, with the safety rules applied and what they changed in `notice`. */
    async create(tenant: AutomationsTenant, input: CreateInput) {
      await validate(tenant, input)
      const { steps, notices } = applySafetyRules(input.intent, input.steps)
      const now = clock.now()
      const id = randomUUID()
      const signingSecret = deps.newSecret()
      const row = {
        accountId: tenant.accountId,
        id,
        name: input.name,
        status: 'draft' as const,
        intent: input.intent,
        trigger: input.trigger,
        triggerKind: input.trigger.type,
        steps,
        notice: notices.length > 0 ? notices.join(' ') : null,
        signingSecretSealed: deps.secrets.seal(signingSecret),
        createdAt: now,
        updatedAt: now,
      }
      await db.transaction(async (tx) => {
        await repo.insertAutomation(tx, row)
        await insertSourceFor(tx, tenant.accountId, id, input.trigger)
      })
      return { ...view(row, await repo.sourceOf(db, tenant.accountId, id)), signing_secret: signingSecret }
    },

    async update(tenant: AutomationsTenant, id: string, change: Partial<CreateInput>) {
      await validate(tenant, change)
      return db.transaction(async (tx) => {
        const current = await load(tenant, id, { lock: true, tx })
        const intent = change.intent ?? current.intent
        const rules = change.steps || change.intent ? applySafetyRules(intent, change.steps ?? current.steps) : null
        const trigger = change.trigger ?? current.trigger
        const row = await repo.updateAutomation(tx, tenant.accountId, id, {
          ...(change.name ? { name: change.name } : {}),
          intent,
          trigger,
          triggerKind: trigger.type,
          ...(rules ? { steps: rules.steps, notice: rules.notices.length > 0 ? rules.notices.join(' ') : null } : {}),
          updatedAt: clock.now(),
        })
        if (!row) throw notFound('automation')
        let source = await repo.sourceOf(tx, tenant.accountId, id)
        const sameSource =
          source?.kind === sourceKindOf(trigger) && (trigger.type !== 'calendar' || source.feedUrl === trigger.feed_url)
        if (!sameSource) {
          await repo.deleteSource(tx, tenant.accountId, id)
          await insertSourceFor(tx, tenant.accountId, id, trigger)
          source = await repo.sourceOf(tx, tenant.accountId, id)
        }
        if (row.status === 'active') await ensurePolling(tx, tenant.accountId, source)
        return view(row, source)
      })
    },

    async remove(tenant: AutomationsTenant, id: string) {
      await load(tenant, id)
      const deleted = await db.transaction((tx) => repo.deleteAutomation(tx, tenant.accountId, id))
      if (!deleted) throw notFound('automation')
      return { id, deleted: true as const }
    },

    /** Active: signals start runs; runs that waited while it was paused go on. */
    async activate(tenant: AutomationsTenant, id: string) {
      return db.transaction(async (tx) => {
        await load(tenant, id, { lock: true, tx })
        const now = clock.now()
        const row = await repo.updateAutomation(tx, tenant.accountId, id, { status: 'active', updatedAt: now })
        if (!row) throw notFound('automation')
        const released = await repo.releasePausedRuns(tx, tenant.accountId, id, now)
        await enqueue(
          tx,
          clock,
          released.map((runId) => ({
            accountId: tenant.accountId,
            queue: RUN_QUEUE,
            payload: { run_id: runId },
            concurrencyKey: runId,
          })),
        )
        const source = await repo.sourceOf(tx, tenant.accountId, id)
        await ensurePolling(tx, tenant.accountId, source)
        return view(row, source)
      })
    },

    /** Paused: no new runs; running ones wait at their next step until it is active again. */
    async pause(tenant: AutomationsTenant, id: string) {
      await load(tenant, id)
      const row = await repo.updateAutomation(db, tenant.accountId, id, { status: 'paused', updatedAt: clock.now() })
      if (!row) throw notFound('automation')
      return view(row, await repo.sourceOf(db, tenant.accountId, id))
    },

    /** POST /automations/{id}/trigger: a run for a contact of this account; 409 unless the automation is active. */
    async trigger(
      tenant: AutomationsTenant,
      id: string,
      input: { contact_id: string; data?: Record<string, unknown> },
    ) {
      const automation = await load(tenant, id)
      if (!UUID.test(input.contact_id)) throw notFound('contact')
      return db.transaction(async (tx) => {
        const contact = await contactForAutomation(tx, tenant.accountId, input.contact_id, { lock: false })
        if (!contact) throw notFound('contact')
        if (automation.status !== 'active') {
          throw new AppError(409, 'automation_not_active', `The automation is ${automation.status}; activate it first`)
        }
        const [runId] = await startRuns(tx, clock, automation, [
          { contactId: contact.id, data: input.data ?? {}, source: 'manual' },
        ])
        return { run_id: runId, state: 'running' }
      })
    },

    async runs(tenant: AutomationsTenant, id: string, page: { limit: number; offset: number }) {
      await load(tenant, id)
      const rows = await repo.listRuns(db, tenant.accountId, id, page.limit, page.offset)
      const result = toPage(rows, page.limit, page.offset)
      return { ...result, items: result.items.map(runView) }
    },

    async run(tenant: AutomationsTenant, id: string, runId: string) {
      await load(tenant, id)
      if (!UUID.test(runId)) throw notFound('run')
      const row = await repo.findRun(db, tenant.accountId, runId)
      if (!row || row.automationId !== id) throw notFound('run')
      return runView(row)
    },

    /** POST /automations/{id}/duplicate: a draft copy (same intent, trigger and steps) with its own signing secret. */
    async duplicate(tenant: AutomationsTenant, id: string) {
      const source = await load(tenant, id)
      return this.create(tenant, {
        name: `${source.name.slice(0, 193)} (copy)`,
        intent: source.intent,
        trigger: source.trigger,
        steps: source.steps,
      } as CreateInput)
    },

    /**
     * POST /automations/{id}/runs/{run_id}/cancel: a running or waiting run ends as cancelled (reason
     * cancelled_by_user); its queued step job is removed, so nothing further of it happens. A finished run is a 409.
     */
    async cancelRun(tenant: AutomationsTenant, id: string, runId: string) {
      await load(tenant, id)
      if (!UUID.test(runId)) throw notFound('run')
      return db.transaction(async (tx) => {
        const run = await repo.findRun(tx, tenant.accountId, runId, { lock: true })
        if (!run || run.automationId !== id) throw notFound('run')
        if (FINAL.includes(run.state)) {
          throw new AppError(409, 'run_finished', `The run is ${run.state} already`, { key: 'run_finished' })
        }
        await tx.execute(sql`DELETE FROM jobs WHERE account_id = ${tenant.accountId} AND queue = ${RUN_QUEUE}
          AND concurrency_key = ${run.id} AND state = 'queued'`)
        await finish(tx, run, run.log, 'cancelled', 'cancelled_by_user')
        const saved = await repo.findRun(tx, tenant.accountId, runId)
        return runView(saved as repo.RunRow)
      })
    },

    /**
     * GET /automations/{id}/statistics: the runs begun in the range by their state now and by what started them,
     * why runs failed or were cancelled, and the template sends of those runs by the furthest status reached.
     */
    async statistics(tenant: AutomationsTenant, id: string, range: StatisticsRange) {
      const automation = await load(tenant, id)
      const since = rangeStart(clock.now(), range)
      const after = since ? sql`AND r.created_at >= ${since.toISOString()}::timestamptz` : sql``
      const result = await db.execute(sql`SELECT r.state, r.source, r.reason, count(*)::int AS n FROM automation_runs r
        WHERE r.account_id = ${tenant.accountId} AND r.automation_id = ${automation.id} ${after}
        GROUP BY r.state, r.source, r.reason`)
      const runs = { total: 0, running: 0, waiting: 0, completed: 0, failed: 0, cancelled: 0 }
      const bySource: Record<string, number> = {}
      const reasons: Record<string, number> = {}
      for (const r of (
        result as unknown as { rows: Array<{ state: RunState; source: string; reason: string | null; n: number }> }
      ).rows) {
        const n = Number(r.n)
        runs.total += n
        runs[r.state] += n
        bySource[r.source] = (bySource[r.source] ?? 0) + n
        if ((r.state === 'failed' || r.state === 'cancelled') && r.reason)
          reasons[r.reason] = (reasons[r.reason] ?? 0) + n
      }
      const sent = await db.execute(sql`SELECT s.status, count(*)::int AS n FROM template_sends s
        JOIN automation_runs r ON r.account_id = s.account_id AND r.id = s.origin_id
        WHERE s.account_id = ${tenant.accountId} AND s.origin = 'automation' AND r.automation_id = ${automation.id}
          ${after}
        GROUP BY s.status`)
      const byStatus: Record<string, number> = {}
      for (const r of (sent as unknown as { rows: Array<{ status: string; n: number }> }).rows) {
        byStatus[r.status] = Number(r.n)
      }
      const finished = runs.completed + runs.failed + runs.cancelled
      return {
        automation_id: automation.id,
        name: automation.name,
        range,
        since,
        runs: {
          ...runs,
          completion_rate: finished === 0 ? null : Math.round((runs.completed / finished) * 10_000) / 10_000,
        },
        by_source: bySource,
        failure_reasons: reasons,
        sends: sendFunnel(byStatus),
      }
    },

    /** GET /automation-webhooks: every trigger source with its address, state and counts. */
    async addresses(tenant: AutomationsTenant, page: { limit: number; offset: number }) {
      const rows = await repo.listSources(db, tenant.accountId, page.limit, page.offset)
      const result = toPage(rows, page.limit, page.offset)
      return {
        ...result,
        items: result.items.map(({ source, automation }) => {
          const state =
            source.kind === 'internal'
              ? 'internal'
              : automation.status !== 'active'
                ? 'not_connected'
                : source.eventCount > 0 || (source.kind === 'calendar' && source.lastPolledAt && !source.lastError)
                  ? 'running'
                  : 'waiting_for_first_event'
          const connection =
            source.kind === 'webhook'
              ? { method: 'POST', content_type: 'application/json', automation_status: automation.status }
              : source.kind === 'calendar'
                ? {
                    feed_url: source.feedUrl,
                    last_polled_at: source.lastPolledAt?.toISOString() ?? null,
                    automation_status: automation.status,
                  }
                : { trigger: automation.trigger.type, automation_status: automation.status }
          return withGermanAliases(
            {
              id: source.id,
              automation_id: automation.id,
              automation_name: automation.name,
              url: source.kind === 'webhook' ? webhookUrl(source) : source.kind === 'calendar' ? source.feedUrl : null,
              kind: source.kind,
              state,
              connection,
              first_event_at: source.firstEventAt?.toISOString() ?? null,
              last_event_at: source.lastEventAt?.toISOString() ?? null,
              event_count: source.eventCount,
              last_error: source.lastError,
            },
            ['kind', 'state', 'connection', 'first_event_at', 'last_event_at', 'event_count', 'last_error'],
          )
        }),
      }
    },

    /**
     * A POST to a webhook address: the secret compared in constant time (unknown: 404, nothing stored); the contact
     * found or created by e-mail or phone (never an opt-in); a run started. A payload that cannot start one is
     * recorded as the address's last error and refused with 422.
     */
    async receiveWebhook(sourceId: string, secret: string, payload: unknown) {
      const source = UUID.test(sourceId) ? await repo.sourceById(db, sourceId) : null
      if (source?.kind !== 'webhook' || !source.secretSealed) throw notFound('address')
      const expected = deps.secrets.open(source.secretSealed)
      if (!timingSafeEqual(digest(expected), digest(secret))) throw notFound('address')
      const refuse = async (key: string, message: string) => {
        await repo.updateSource(db, source.accountId, source.id, { lastError: message, lastErrorAt: clock.now() })
        return new AppError(422, 'unprocessable', message, { key })
      }
      const automation = await repo.findAutomation(db, source.accountId, source.automationId)
      if (!automation) throw notFound('address')
      if (automation.status !== 'active')
        throw await refuse('automation_not_active', `The automation is ${automation.status}; nothing was started`)
      if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
        throw await refuse('payload_not_object', 'The body must be a JSON object')
      }
      const data = payload as Record<string, unknown>
      const email = typeof data.email === 'string' ? data.email : undefined
      const phone = typeof data.phone === 'string' ? data.phone : undefined
      if (!email && !phone)
        throw await refuse(
          'contact_address_missing',
          'The body needs an email or a phone to find or create the contact',
        )
      const account = await getAccount(db, source.accountId)
      try {
        return await db.transaction(async (tx) => {
          const { contactId } = await findOrCreateInboundContact(tx, clock, {
            accountId: source.accountId,
            language: account.language,
            name: typeof data.name === 'string' ? data.name : '',
            ...(phone ? { phone } : {}),
            ...(email ? { email } : {}),
          })
          const [runId] = await startRuns(tx, clock, automation, [{ contactId, data, source: 'webhook' }])
          await repo.countSourceEvent(tx, source.accountId, source.id, clock.now())
          await repo.updateSource(tx, source.accountId, source.id, { lastError: null })
          return { run_id: runId, contact_id: contactId }
        })
      } catch (error) {
        if (error instanceof AppError && error.status === 400)
          throw await refuse('contact_address_invalid', error.message)
        throw error
      }
    },

    runJob,
    pollCalendar,
    startCalendarRun,
  }
}

export type AutomationsService = ReturnType<typeof automationsService>

/** DELETE /templates/{id} answers 409 while an automation's steps send the template. */
export async function automationTemplateUses(tx: Db, accountId: string, templateId: string): Promise<string[]> {
  return (await repo.automationsUsingTemplate(tx, accountId, templateId)).map((name) => `automation "${name}"`)
}
