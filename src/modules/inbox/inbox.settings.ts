import { eq } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest } from '../../platform/http/errors.ts'
import {
  isCalendarDate,
  isOpenAt,
  isTimezone,
  nextOpening,
  type OpeningHours,
  weeklyHoursProblem,
} from './inbox.hours.ts'
import { inboxSettings, WEEKDAYS, type WeeklyHours } from './inbox.routing.tables.ts'

/**
 * The routing settings of an account (inbox_settings): automatic assignment, opening hours with days off, the away
 * message. An account without a row has the defaults: assignment off, no opening hours (always open), no away
 * message, the account's own time zone.
 */
export type SettingsRow = typeof inboxSettings.$inferSelect

export interface AssignmentChange {
  mode?: 'off' | 'round_robin'
  limit?: number
}

export interface HoursChange {
  enabled?: boolean
  timezone?: string
  weekly?: WeeklyHours
  days_off?: string[]
  away_enabled?: boolean
  away_message?: string
  away_interval_minutes?: number
}

export const defaultSettings = (accountId: string, timezone: string, now: Date): SettingsRow => ({
  accountId,
  assignmentMode: 'off',
  assignmentLimit: 10,
  hoursEnabled: false,
  timezone,
  weeklyHours: {},
  daysOff: [],
  awayEnabled: false,
  awayMessage: '',
  awayIntervalMinutes: 720,
  updatedAt: now,
})

export async function settingsRow(db: Db, accountId: string): Promise<SettingsRow | undefined> {
  const [row] = await db.select().from(inboxSettings).where(eq(inboxSettings.accountId, accountId))
  return row
}

export const openingHoursOf = (row: SettingsRow): OpeningHours => ({
  timezone: row.timezone,
  weekly: row.weeklyHours,
  daysOff: row.daysOff,
})

/** Whether the business counts as open at `at`: always, unless opening hours are switched on. */
export const openAt = (row: SettingsRow | undefined, at: Date) =>
  !row?.hoursEnabled || isOpenAt(openingHoursOf(row), at)

/** The settings as /app and the tools show them, with whether the business is open now. */
export function settingsView(row: SettingsRow, now: Date) {
  const open = openAt(row, now)
  const opens = row.hoursEnabled && !open ? nextOpening(openingHoursOf(row), now) : null
  return {
    assignment: { mode: row.assignmentMode, limit: row.assignmentLimit },
    hours: {
      enabled: row.hoursEnabled,
      timezone: row.timezone,
      weekly: Object.fromEntries(WEEKDAYS.map((day) => [day, row.weeklyHours[day] ?? []])) as Required<WeeklyHours>,
      days_off: [...row.daysOff].sort(),
    },
    away: { enabled: row.awayEnabled, message: row.awayMessage, interval_minutes: row.awayIntervalMinutes },
    open_now: open,
    opens_at: opens,
  }
}

export type SettingsView = ReturnType<typeof settingsView>

function checkHours(change: HoursChange, merged: SettingsRow) {
  if (change.timezone !== undefined && !isTimezone(change.timezone)) {
    throw badRequest(`timezone: ${change.timezone} is not an IANA time zone`, 'invalid_timezone')
  }
  const problem = change.weekly ? weeklyHoursProblem(change.weekly) : null
  if (problem) throw badRequest(`weekly: ${problem}`, 'invalid_opening_hours')
  const badDate = change.days_off?.find((date) => !isCalendarDate(date))
  if (badDate) throw badRequest(`days_off: ${badDate} is not a date`, 'invalid_opening_hours')
  if (merged.awayEnabled && merged.awayMessage.trim() === '') {
    throw badRequest('away_message: an away message switched on needs a text', 'away_message_missing')
  }
}

/** Writes a change over the current settings (or the defaults) in one upsert. */
async function write(db: Db, clock: Clock, accountId: string, timezone: string, set: Partial<SettingsRow>) {
  const current = (await settingsRow(db, accountId)) ?? defaultSettings(accountId, timezone, clock.now())
  const next = { ...current, ...set, accountId, updatedAt: clock.now() }
  const [row] = await db
    .insert(inboxSettings)
    .values(next)
    .onConflictDoUpdate({ target: inboxSettings.accountId, set: { ...set, updatedAt: next.updatedAt } })
    .returning()
  return row
}

export function routingSettings({ db, clock }: { db: Db; clock: Clock }) {
  return {
    async get(accountId: string, accountTimezone: string): Promise<SettingsRow> {
      return (await settingsRow(db, accountId)) ?? defaultSettings(accountId, accountTimezone, clock.now())
    },

    async updateAssignment(accountId: string, accountTimezone: string, change: AssignmentChange) {
      const set: Partial<SettingsRow> = {}
      if (change.mode !== undefined) set.assignmentMode = change.mode
      if (change.limit !== undefined) set.assignmentLimit = change.limit
      return write(db, clock, accountId, accountTimezone, set)
    },

    async updateHours(accountId: string, accountTimezone: string, change: HoursChange) {
      const set: Partial<SettingsRow> = {}
      if (change.enabled !== undefined) set.hoursEnabled = change.enabled
      if (change.timezone !== undefined) set.timezone = change.timezone
      if (change.weekly !== undefined) {
        set.weeklyHours = Object.fromEntries(
          Object.entries(change.weekly).filter(([, ranges]) => ranges && ranges.length > 0),
        ) as WeeklyHours
      }
      if (change.days_off !== undefined) set.daysOff = [...new Set(change.days_off)].sort()
      if (change.away_enabled !== undefined) set.awayEnabled = change.away_enabled
      if (change.away_message !== undefined) set.awayMessage = change.away_message
      if (change.away_interval_minutes !== undefined) set.awayIntervalMinutes = change.away_interval_minutes
      const current = (await settingsRow(db, accountId)) ?? defaultSettings(accountId, accountTimezone, clock.now())
      checkHours(change, { ...current, ...set })
      return write(db, clock, accountId, accountTimezone, set)
    },
  }
}

/**
 * The automations' branch condition "within opening hours": the same definition the away message uses (open at all
 * times while opening hours are off).
 */
export async function withinOpeningHours(db: Db, accountId: string, at: Date): Promise<boolean> {
  return openAt(await settingsRow(db, accountId), at)
}
