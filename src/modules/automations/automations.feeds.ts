import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { type ClaimedJob, enqueue, jobPending } from '../../platform/jobs/jobs.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import { findOrCreateInboundContact } from '../contacts/index.ts'
import { calendarOccurrences } from './automations.calendar.ts'
import { CALENDAR_POLL_QUEUE, CALENDAR_START_QUEUE } from './automations.ports.ts'
import * as repo from './automations.repository.ts'
import { startRuns } from './automations.start.ts'

/** Calendar events further ahead than this are not scheduled yet (a later poll will). */
const CALENDAR_HORIZON_MS = 60 * 24 * 3600_000

/** The calendar feeds' jobs: a feed's poll (its events scheduled), an event's start, and the polling chain. */
export function calendarFeeds(deps: { db: Db; clock: Clock; http: OutboundHttp }) {
  const { db, clock } = deps

  async function ensurePolling(tx: Db, accountId: string, source: repo.SourceRow | null) {
    if (source?.kind !== 'calendar') return
    // activation must not start a second polling chain
    if (await jobPending(tx, { accountId, queue: CALENDAR_POLL_QUEUE, key: 'source_id', value: source.id })) return
    await enqueue(tx, clock, { accountId, queue: CALENDAR_POLL_QUEUE, payload: { source_id: source.id } })
  }

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

  return { pollCalendar, startCalendarRun, ensurePolling }
}
