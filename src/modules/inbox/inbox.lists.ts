import { desc, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { databaseOffset } from '../../platform/http/pagination.ts'
import { conversations } from './inbox.tables.ts'

/**
 * The inbox's views and search (the web app's list, GET /app/conversations). A view is a status and, for the open
 * ones, an assignee: mine (open, assigned to the signed-in member), unassigned (open, nobody), all (open), snoozed,
 * closed; without a view every conversation is listed whatever its status (the list as it was before views). Each
 * view reads an index in its order (conversations_open_assignee_idx for mine and unassigned,
 * conversations_status_idx for the others); the counts count each view only up to COUNT_CAP, so an account with a
 * million conversations costs at most that many index entries per view.
 */

export const VIEWS = ['mine', 'unassigned', 'all', 'snoozed', 'closed'] as const
export type View = (typeof VIEWS)[number]
/** a view's count stops here: the console shows "10000+" */
export const COUNT_CAP = 10_000
/** the longest search text */
export const SEARCH_MAX = 100

/** The view's condition on `conversations` (null: every conversation); mine needs the member. */
function viewCondition(view: View | undefined, memberId: string | null): SQL | null {
  switch (view) {
    case undefined:
      return null
    case 'mine':
      if (!memberId) throw badRequest('view=mine needs a signed-in member', 'view_needs_member', { field: 'view' })
      return sql`${conversations.status} = 'open' AND ${conversations.assigneeId} = ${memberId}`
    case 'unassigned':
      return sql`${conversations.status} = 'open' AND ${conversations.assigneeId} IS NULL`
    case 'all':
      return sql`${conversations.status} = 'open'`
    case 'snoozed':
      return sql`${conversations.status} = 'snoozed'`
    case 'closed':
      return sql`${conversations.status} = 'closed'`
  }
}

/** `text` for LIKE: its wildcards (% _) and the escape character taken literally. */
export function likeEscaped(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`)
}

/**
 * The search's condition: the contact's name or phone number, or the text of any of the conversation's messages,
 * contains `q` (case-insensitive; wildcards taken literally). A phone number is matched by its digits, without the
 * leading zeros of a national number (`0171 234` finds +49171234…).
 */
function searchCondition(q: string): SQL {
  const pattern = `%${likeEscaped(q)}%`
  const digits = q.replace(/\D/g, '').replace(/^0+/, '')
  const phone = digits.length >= 3 ? sql` OR ct.phone LIKE ${`%${digits}%`}` : sql``
  return sql`(EXISTS (
      SELECT 1 FROM contacts ct WHERE ct.account_id = ${conversations.accountId} AND ct.id = ${conversations.contactId}
        AND (ct.name ILIKE ${pattern} ESCAPE '\\'${phone}))
    OR EXISTS (
      SELECT 1 FROM messages m WHERE m.account_id = ${conversations.accountId} AND m.conversation_id = ${conversations.id}
        AND m.text ILIKE ${pattern} ESCAPE '\\'))`
}

/** Trims the search text: empty is no search; longer than SEARCH_MAX is a 400 naming q. */
export function searchText(q: string | undefined): string | null {
  const text = (q ?? '').trim()
  if (text === '') return null
  if (text.length > SEARCH_MAX) throw badRequest(`q: at most ${SEARCH_MAX} characters`, 'bad_request', { field: 'q' })
  return text
}

/**
 * The inbox page of the web app in one statement: a view's conversations (matching the search) by latest activity
 * with each one's contact (name, phone, e-mail) read beside it by primary key, so the list names people without a
 * second round trip, and the account's unread total.
 */
export async function inboxPage(
  db: Db,
  accountId: string,
  page: { limit: number; offset: number; view?: View; q?: string | null; memberId: string | null },
) {
  const conditions = [sql`${conversations.accountId} = ${accountId}`]
  const view = viewCondition(page.view, page.memberId)
  if (view) conditions.push(view)
  if (page.q) conditions.push(searchCondition(page.q))
  return db
    .select({
      row: conversations,
      contact: sql<{ name: string; phone: string; email: string } | null>`(
        SELECT json_build_object('name', ct.name, 'phone', ct.phone, 'email', ct.email)
        FROM contacts ct WHERE ct.account_id = ${conversations.accountId} AND ct.id = ${conversations.contactId})`,
      // the account's unread messages in every conversation, not only this page's: run once (no reference to the
      // row), from the partial index of conversations with any
      unreadTotal: sql<number>`(
        SELECT coalesce(sum(u.unread_count), 0)::int FROM conversations u
        WHERE u.account_id = ${accountId} AND u.unread_count > 0)`.mapWith(Number),
    })
    .from(conversations)
    .where(sql.join(conditions, sql` AND `))
    .orderBy(desc(conversations.lastMessageAt), desc(conversations.id))
    .limit(page.limit + 1)
    .offset(databaseOffset(page.offset))
}

export type ViewCounts = Record<View, number | null>

/**
 * How many conversations each view holds, for the signed-in member (mine: null without one), in one statement;
 * each count reads its view's index and stops at COUNT_CAP.
 */
export async function viewCounts(db: Db, accountId: string, memberId: string | null): Promise<ViewCounts> {
  const capped = (where: SQL) =>
    sql`(SELECT count(*) FROM (SELECT 1 FROM conversations c WHERE c.account_id = ${accountId} AND ${where}
      LIMIT ${COUNT_CAP}) v)`
  const mine = memberId ? capped(sql`c.status = 'open' AND c.assignee_id = ${memberId}`) : sql`NULL`
  const [row] = rows<Record<View, string | number | null>>(
    await db.execute(sql`SELECT ${mine} AS mine,
      ${capped(sql`c.status = 'open' AND c.assignee_id IS NULL`)} AS unassigned,
      ${capped(sql`c.status = 'open'`)} AS "all",
      ${capped(sql`c.status = 'snoozed'`)} AS snoozed,
      ${capped(sql`c.status = 'closed'`)} AS closed`),
  )
  const n = (v: string | number | null) => (v === null ? null : Number(v))
  return {
    mine: n(row.mine),
    unassigned: n(row.unassigned),
    all: n(row.all),
    snoozed: n(row.snoozed),
    closed: n(row.closed),
  }
}
