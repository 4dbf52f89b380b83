import { and, eq, inArray, type SQL, sql } from 'drizzle-orm'
import {
  accountRowFinder,
  deleteContactRows,
  inAccount,
  newestFirst,
  updateAccountRow,
} from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { recordsetSql, recordsJson, rows } from '../../platform/db/rows.ts'
import { countSends } from '../messaging/index.ts'
import {
  automationCalendarEvents,
  automationRuns,
  automationSources,
  automations,
  type RunState,
} from './automations.tables.ts'

export type AutomationRow = typeof automations.$inferSelect
export type SourceRow = typeof automationSources.$inferSelect
export type RunRow = typeof automationRuns.$inferSelect

export async function insertAutomation(tx: Db, row: typeof automations.$inferInsert) {
  await tx.insert(automations).values(row)
}

export const findAutomation = accountRowFinder(automations)

export async function listAutomations(db: Db, accountId: string, limit: number, offset: number) {
  const query = db.select().from(automations).where(inAccount(automations, accountId)).$dynamic()
  return newestFirst(query, { at: automations.createdAt, id: automations.id }, { limit, offset })
}

export async function updateAutomation(
  tx: Db,
  accountId: string,
  id: string,
  change: Partial<typeof automations.$inferInsert>,
) {
  const [row] = await tx
    .update(automations)
    .set(change)
    .where(and(eq(automations.accountId, accountId), eq(automations.id, id)))
    .returning()
  return row ?? null
}

export async function deleteAutomation(tx: Db, accountId: string, id: string): Promise<boolean> {
  const rows = await tx
    .delete(automations)
    .where(and(eq(automations.accountId, accountId), eq(automations.id, id)))
    .returning({ id: automations.id })
  return rows.length > 0
}

/** The active automations of an account whose trigger is of this type. */
export async function activeByTrigger(db: Db, accountId: string, kind: string) {
  return db
    .select()
    .from(automations)
    .where(
      and(eq(automations.accountId, accountId), eq(automations.triggerKind, kind), eq(automations.status, 'active')),
    )
}

export async function anyActiveByTrigger(db: Db, accountId: string, kind: string): Promise<boolean> {
  const result = await db.execute(sql`SELECT ${anyActiveByTriggerSql(accountId, kind)} AS found`)
  return rows<{ found: boolean }>(result)[0]?.found === true
}

/** anyActiveByTrigger as a boolean expression (folded into the inbound message's first statement). */
export function anyActiveByTriggerSql(accountId: string, kind: string): SQL {
  return sql`EXISTS (SELECT 1 FROM automations
    WHERE account_id = ${accountId}::uuid AND status = 'active' AND trigger_kind = ${kind})`
}

export async function sourceOf(db: Db, accountId: string, automationId: string) {
  const [row] = await db
    .select()
    .from(automationSources)
    .where(and(eq(automationSources.accountId, accountId), eq(automationSources.automationId, automationId)))
  return row ?? null
}

/** A webhook address's source by its id alone: the public address carries no account. */
export async function sourceById(db: Db, id: string) {
  const [row] = await db.select().from(automationSources).where(eq(automationSources.id, id))
  return row ?? null
}

export async function insertSource(tx: Db, row: typeof automationSources.$inferInsert) {
  await tx.insert(automationSources).values(row)
}

export async function deleteSource(tx: Db, accountId: string, automationId: string) {
  await tx
    .delete(automationSources)
    .where(and(eq(automationSources.accountId, accountId), eq(automationSources.automationId, automationId)))
}

export function updateSource(tx: Db, accountId: string, id: string, change: Partial<SourceRow>) {
  return updateAccountRow(tx, automationSources, accountId, id, change)
}

/** One more event at a source: counts and times in one statement. */
export async function countSourceEvent(tx: Db, accountId: string, id: string, at: Date) {
  await tx.execute(sql`
    UPDATE automation_sources
    SET event_count = event_count + 1, first_event_at = COALESCE(first_event_at, ${at.toISOString()}::timestamptz),
      last_event_at = ${at.toISOString()}::timestamptz
    WHERE account_id = ${accountId} AND id = ${id}`)
}

export async function listSources(db: Db, accountId: string, limit: number, offset: number) {
  const query = db
    .select({ source: automationSources, automation: automations })
    .from(automationSources)
    .innerJoin(
      automations,
      and(eq(automations.accountId, automationSources.accountId), eq(automations.id, automationSources.automationId)),
    )
    .where(inAccount(automationSources, accountId))
    .$dynamic()
  return newestFirst(query, { at: automationSources.createdAt, id: automationSources.id }, { limit, offset })
}

export async function insertRuns(tx: Db, rows: Array<typeof automationRuns.$inferInsert>) {
  if (rows.length === 0) return
  // one JSON parameter for a whole batch (an import can start thousands of runs in one transaction)
  const json = recordsJson(
    rows,
    ['accountId', 'id', 'automationId', 'contactId', 'state', 'source', 'steps', 'data', 'createdAt'],
    { data: {} },
  )
  await tx.execute(sql`
    INSERT INTO automation_runs (account_id, id, automation_id, contact_id, state, source, steps, data, created_at,
      updated_at)
    SELECT r.account_id, r.id, r.automation_id, r.contact_id, r.state, r.source, r.steps, r.data, r.created_at,
      r.created_at
    FROM jsonb_to_recordset(${json}::jsonb) AS r(account_id uuid, id uuid, automation_id uuid, contact_id uuid,
      state text, source text, steps jsonb, data jsonb, created_at timestamptz)`)
}

export const findRun = accountRowFinder(automationRuns)

/**
 * A batch of an account's runs with their automations, the runs locked in id order (the order every batch takes
 * them in, so two batches never wait on each other crosswise). Runs that are gone are missing.
 */
export async function lockRuns(tx: Db, accountId: string, ids: string[]) {
  if (ids.length === 0) return []
  return tx
    .select({ run: automationRuns, automation: automations })
    .from(automationRuns)
    .leftJoin(
      automations,
      and(eq(automations.accountId, automationRuns.accountId), eq(automations.id, automationRuns.automationId)),
    )
    .where(and(eq(automationRuns.accountId, accountId), inArray(automationRuns.id, ids)))
    .orderBy(automationRuns.id)
    .for('update', { of: automationRuns })
}

/** The whole state of many runs of an account, written in one statement (a batch of steps). */
export async function writeRuns(tx: Db, accountId: string, list: RunRow[]) {
  if (list.length === 0) return
  const json = recordsJson(list, [
    'id',
    'log',
    'stepIndex',
    'state',
    'waitUntil',
    'waitReason',
    'reason',
    'finishedAt',
    'updatedAt',
  ])
  await tx.execute(sql`UPDATE automation_runs r SET log = u.log, step_index = u.step_index, state = u.state,
      wait_until = u.wait_until, wait_reason = u.wait_reason, reason = u.reason, finished_at = u.finished_at,
      updated_at = u.updated_at
    FROM ${recordsetSql(
      json,
      list.length,
      'u',
      'id uuid, log jsonb, step_index int, state text, wait_until timestamptz, wait_reason text, reason text, finished_at timestamptz, updated_at timestamptz',
    )}
    WHERE r.account_id = ${accountId} AND r.id = u.id`)
}

export async function listRuns(db: Db, accountId: string, automationId: string, limit: number, offset: number) {
  const query = db
    .select()
    .from(automationRuns)
    .where(inAccount(automationRuns, accountId, eq(automationRuns.automationId, automationId)))
    .$dynamic()
  return newestFirst(query, { at: automationRuns.createdAt, id: automationRuns.id }, { limit, offset })
}

export function updateRun(tx: Db, accountId: string, id: string, change: Partial<RunRow>) {
  return updateAccountRow(tx, automationRuns, accountId, id, change)
}

/** The runs that waited while their automation was paused: they go on (ids returned for their jobs). */
export async function releasePausedRuns(tx: Db, accountId: string, automationId: string, at: Date) {
  const result = await tx.execute(sql`
    UPDATE automation_runs SET state = 'running', wait_reason = NULL, updated_at = ${at.toISOString()}::timestamptz
    WHERE account_id = ${accountId} AND automation_id = ${automationId} AND wait_reason = 'automation_paused'
    RETURNING id`)
  return rows<{ id: string }>(result).map((r) => r.id)
}

export async function deleteContactRuns(tx: Db, accountId: string, contactId: string): Promise<number> {
  const runs = await deleteContactRows(tx, automationRuns, accountId, contactId)
  await deleteContactRows(tx, automationCalendarEvents, accountId, contactId)
  return runs
}

/** The automations whose steps send this template (DELETE /templates/{id} answers 409 while any does). */
export async function automationsUsingTemplate(db: Db, accountId: string, templateId: string) {
  const result = await db.execute(sql`
    SELECT name FROM automations
    WHERE account_id = ${accountId}
      AND steps @> ${JSON.stringify([{ type: 'send_template', template_id: templateId }])}::jsonb`)
  return rows<{ name: string }>(result).map((r) => r.name)
}

/** A calendar event of a source by its uid in the calendar. */
const calendarEventKey = (accountId: string, sourceId: string, uid: string) =>
  inAccount(
    automationCalendarEvents,
    accountId,
    eq(automationCalendarEvents.sourceId, sourceId),
    eq(automationCalendarEvents.uid, uid),
  )

export async function calendarEvent(db: Db, accountId: string, sourceId: string, uid: string) {
  const [row] = await db
    .select()
    .from(automationCalendarEvents)
    .where(calendarEventKey(accountId, sourceId, uid))
    .for('update')
  return row ?? null
}

export async function upsertCalendarEvent(tx: Db, row: typeof automationCalendarEvents.$inferInsert) {
  await tx
    .insert(automationCalendarEvents)
    .values(row)
    .onConflictDoUpdate({
      target: [automationCalendarEvents.accountId, automationCalendarEvents.sourceId, automationCalendarEvents.uid],
      set: { startsAt: row.startsAt, contactId: row.contactId, runId: null },
    })
}

export async function setCalendarRun(tx: Db, accountId: string, sourceId: string, uid: string, runId: string) {
  await tx
    .update(automationCalendarEvents)
    .set({ runId })
    .where(calendarEventKey(accountId, sourceId, uid))
}

const createdSince = (since: Date | null) =>
  since ? sql`AND r.created_at >= ${since.toISOString()}::timestamptz` : sql``

/** The automation's runs begun since `since` (null: ever), counted by state, source and reason. */
export async function runCounts(db: Db, accountId: string, automationId: string, since: Date | null) {
  const result = await db.execute(sql`SELECT r.state, r.source, r.reason, count(*)::int AS n FROM automation_runs r
        WHERE r.account_id = ${accountId} AND r.automation_id = ${automationId} ${createdSince(since)}
        GROUP BY r.state, r.source, r.reason`)
  return rows<{ state: RunState; source: string; reason: string | null; n: number }>(result)
}

/** The template sends of the automation's runs begun since `since`, counted by status. */
export function runSendCounts(db: Db, accountId: string, automationId: string, since: Date | null) {
  const runs = sql`SELECT r.id FROM automation_runs r
    WHERE r.account_id = ${accountId} AND r.automation_id = ${automationId} ${createdSince(since)}`
  return countSends(db, { accountId, origin: 'automation', originIds: runs }, ['status'])
}
