import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { Signal, SignalListener, SignalName } from '../../platform/events/signals.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import { RUN_QUEUE } from './automations.ports.ts'
import * as repo from './automations.repository.ts'
import { keywordMatches, type RunLogEntry, type Trigger } from './automations.rules.ts'

// How runs begin (from a signal, the trigger route, a calendar event) and how they end early.

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
  await enqueueRunJobs(tx, clock, automation.accountId, rows)
  return rows.map((row) => row.id)
}

/** The next job of each run of an account (its steps' walk), in one statement: at `runAt` where given, else now. */
export function enqueueRunJobs(tx: Db, clock: Clock, accountId: string, runs: Array<{ id: string; runAt?: Date }>) {
  return enqueue(
    tx,
    clock,
    runs.map((run) => ({
      accountId,
      queue: RUN_QUEUE,
      payload: { run_id: run.id },
      runAt: run.runAt,
      concurrencyKey: run.id,
    })),
  )
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
