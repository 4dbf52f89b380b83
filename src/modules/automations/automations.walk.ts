import { type Account, getAccount } from '../../platform/auth/accounts.service.ts'
import type { Db } from '../../platform/db/client.ts'
import { type ClaimedJob, completeJobs, killJob, retryJob } from '../../platform/jobs/jobs.ts'
import { backoffAfter } from '../../platform/jobs/runner.ts'
import {
  type AutomationContact,
  changeContactTags,
  contactMeetsFieldConditions,
  contactsForAutomation,
} from '../contacts/index.ts'
import { withinOpeningHours } from '../inbox/index.ts'
import {
  type AutomationsEngineDeps,
  type Calling,
  FINAL,
  type Pending,
  RUN_MAX_ATTEMPTS,
  type Walk,
} from './automations.ports.ts'
import * as repo from './automations.repository.ts'
import {
  branchTarget,
  conditionHolds,
  durationMs,
  fieldConditionOf,
  nextTimeOfDay,
  type RunLogEntry,
  type Step,
} from './automations.rules.ts'
import { enqueueRunJobs } from './automations.start.ts'

/** A run that waits because sending is not possible now (account blocked or paused) tries again this much later. */
const SENDING_BLOCKED_RETRY_MS = 5 * 60_000

/**
 * The walk of a batch of runs (walkRuns): one transaction that takes each run through its steps until it waits, calls
 * out or ends.
 */
export function runWalker(deps: AutomationsEngineDeps) {
  const { db, clock } = deps

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
    // the inbox's opening hours, the same definition its away message uses
    if (condition.type === 'within_opening_hours') return withinOpeningHours(tx, run.accountId, clock.now())
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
      await enqueueRunJobs(
        tx,
        clock,
        accountId,
        next.map((w) => ({ id: w.run.id, runAt: w.nextJobAt as Date })),
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

  return { walkRuns }
}
