import { randomUUID } from 'node:crypto'
import { and, desc, eq, inArray, sql } from 'drizzle-orm'
import { memberships, users } from '../../platform/auth/people.tables.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest, notFound } from '../../platform/http/errors.ts'
import { databaseOffset, toPage } from '../../platform/http/pagination.ts'
import { contactNames } from '../contacts/index.ts'
import { actorOf, publishInboxChanges } from './inbox.live.ts'
import { conversationNotes } from './inbox.notes.tables.ts'
import { conversations, messages } from './inbox.tables.ts'
import type { InboxServiceDeps, InboxTenant } from './inbox.types.ts'
import { historyView, UUID } from './inbox.views.ts'

/**
 * Internal notes of the team on a conversation and the @mentions in them: a note is stored and shown in the thread
 * in its place by time, never sent to the customer and never in /v1's message lists. `@Display Name` or
 * `@local-part` (of the e-mail address) of a current member names them when the note is written; an unknown @word
 * stays text. A mentioned member finds the note in their mentions until they mark it read.
 */

export const NOTE_MAX = 4000
const EXCERPT_MAX = 160

type NoteRow = typeof conversationNotes.$inferSelect
interface Member {
  id: string
  name: string
}

/** The account's current members (accepted the invitation) with their names and e-mail addresses. */
async function currentMembers(db: Db, accountId: string) {
  return db
    .select({ id: users.id, name: users.name, email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.accountId, accountId), eq(memberships.status, 'active')))
}

/** a letter, digit or one of the characters an e-mail local part keeps: a mention's name does not end before one */
const WORD_CHAR = /[\p{L}\p{N}_.+-]/u

/**
 * The members a note's body mentions: each `@` at the start or after a character that is no part of a word (so an
 * e-mail address is no mention) followed by a member's display name or e-mail local part, case-insensitively, the
 * longest that fits, ending at a word boundary (a trailing `.` or `,` ends it too). In the order first mentioned.
 */
export function resolveMentions(body: string, members: ReadonlyArray<{ id: string; name: string; email: string }>) {
  const found: string[] = []
  const lower = body.toLocaleLowerCase()
  const candidates = members.flatMap((m) =>
    [m.name.trim(), m.email.split('@')[0] ?? '']
      .filter((text) => text.length > 0)
      .map((text) => ({ id: m.id, text: text.toLocaleLowerCase() })),
  )
  candidates.sort((a, b) => b.text.length - a.text.length)
  for (let at = lower.indexOf('@'); at >= 0; at = lower.indexOf('@', at + 1)) {
    if (at > 0 && WORD_CHAR.test(body[at - 1] ?? '')) continue
    const rest = lower.slice(at + 1)
    const hit = candidates.find((c) => {
      if (!rest.startsWith(c.text)) return false
      const next = rest.slice(c.text.length)
      // a sentence's full stop or comma after the name ends it; a letter or digit would make it another word
      return next === '' || !WORD_CHAR.test(next[0] ?? '') || /^[.,+-](?![\p{L}\p{N}])/u.test(next)
    })
    if (hit && !found.includes(hit.id)) found.push(hit.id)
  }
  return found
}

async function namesOf(db: Db, ids: Iterable<string>): Promise<Map<string, string>> {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return new Map()
  const rows = await db
    .select({ id: users.id, name: users.name, email: users.email })
    .from(users)
    .where(inArray(users.id, unique))
  return new Map(rows.map((r) => [r.id, r.name || r.email]))
}

function noteView(row: NoteRow, names: Map<string, string>) {
  const member = (id: string): Member => ({ id, name: names.get(id) ?? '' })
  return {
    kind: 'note' as const,
    id: row.id,
    conversation_id: row.conversationId,
    body: row.body,
    author: row.authorId ? member(row.authorId) : null,
    mentions: row.mentions.map(member),
    created_at: row.createdAt.toISOString(),
  }
}

async function notesViews(db: Db, rows: NoteRow[]) {
  const names = await namesOf(
    db,
    rows.flatMap((r) => [...(r.authorId ? [r.authorId] : []), ...r.mentions]),
  )
  return rows.map((r) => noteView(r, names))
}

async function conversationOf(db: Db, accountId: string, id: string) {
  const [row] = UUID.test(id)
    ? await db
        .select({
          id: conversations.id,
          contactId: conversations.contactId,
          lastMessageAt: conversations.lastMessageAt,
        })
        .from(conversations)
        .where(and(eq(conversations.accountId, accountId), eq(conversations.id, id)))
    : []
  if (!row) throw notFound('conversation')
  return row
}

/** Writes a note on a conversation of the account; its mentions are resolved now. The account's consoles hear it. */
export async function addNote(db: Db, clock: Clock, tenant: InboxTenant, conversationId: string, body: string) {
  const text = body.trim()
  if (text.length === 0) throw badRequest('A note needs some text', 'note_empty')
  if (text.length > NOTE_MAX) throw badRequest(`A note has at most ${NOTE_MAX} characters`, 'note_too_long')
  const row = await db.transaction(async (tx) => {
    const conversation = await conversationOf(tx, tenant.accountId, conversationId)
    // after every message it follows: a message's time may run ahead of the clock (the account's message clock
    // hands out at least 1 ms after the last), and the thread orders by time
    const now = clock.now()
    const after = new Date(conversation.lastMessageAt.getTime() + 1)
    const mentions = resolveMentions(text, await currentMembers(tx, tenant.accountId))
    const [stored] = await tx
      .insert(conversationNotes)
      .values({
        accountId: tenant.accountId,
        id: randomUUID(),
        conversationId,
        authorId: actorOf(tenant),
        body: text,
        mentions,
        createdAt: now > after ? now : after,
      })
      .returning()
    // live: the thread shows the note, the mentioned members' counts go up
    await publishInboxChanges(tx, tenant.accountId, [
      { type: 'note', conversation_id: conversationId, actor_id: actorOf(tenant) },
    ])
    return stored
  })
  const [view] = await notesViews(db, [row])
  return view
}

/**
 * A conversation's thread for the console: its messages and notes by time, the newest `limit` after `offset` from
 * the newest end, oldest first within the page (as GET /v1/inbox/conversations/{id}/messages pages its messages).
 */
export async function conversationThread(
  db: Db,
  accountId: string,
  id: string,
  page: { limit: number; offset: number },
) {
  await conversationOf(db, accountId, id)
  const wanted = databaseOffset(page.offset) + page.limit + 1
  const [messageRows, noteRows] = await Promise.all([
    db
      .select()
      .from(messages)
      .where(and(eq(messages.accountId, accountId), eq(messages.conversationId, id)))
      .orderBy(desc(messages.createdAt), desc(messages.id))
      .limit(wanted),
    db
      .select()
      .from(conversationNotes)
      .where(and(eq(conversationNotes.accountId, accountId), eq(conversationNotes.conversationId, id)))
      .orderBy(desc(conversationNotes.createdAt), desc(conversationNotes.id))
      .limit(wanted),
  ])
  const notes = await notesViews(db, noteRows)
  const items = [...messageRows.map((row) => ({ ...historyView(row), kind: 'message' as const })), ...notes].sort(
    (a, b) => (a.created_at === b.created_at ? b.id.localeCompare(a.id) : a.created_at < b.created_at ? 1 : -1),
  )
  const { items: shown, ...rest } = toPage(
    items.slice(page.offset, page.offset + page.limit + 1),
    page.limit,
    page.offset,
  )
  return { items: shown.reverse(), ...rest }
}

function memberOf(tenant: InboxTenant): string {
  const userId = actorOf(tenant)
  if (!userId) throw badRequest('Mentions are a signed-in member’s own: call this as a member', 'member_required')
  return userId
}

const mentionOf = (userId: string) => sql`${conversationNotes.mentions} @> ARRAY[${userId}]::uuid[]`
const unreadBy = (userId: string) => sql`NOT (${conversationNotes.readBy} @> ARRAY[${userId}]::uuid[])`

async function unreadMentions(db: Db, accountId: string, userId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int`.mapWith(Number) })
    .from(conversationNotes)
    .where(and(eq(conversationNotes.accountId, accountId), mentionOf(userId), unreadBy(userId)))
  return row?.n ?? 0
}

/**
 * The calling member's mentions, newest first, with the conversation's contact, an excerpt, the author, read; none for
 * a call that is no member's.
 */
export async function listMentions(db: Db, tenant: InboxTenant, page: { limit: number; offset: number }) {
  const userId = actorOf(tenant)
  // a key (or an assistant acting for no member) is nobody a note can mention
  if (!userId) return { mentions: [], unread_count: 0, ...toPage([], page.limit, page.offset) }
  const { accountId } = tenant
  const rows = await db
    .select({ note: conversationNotes, contactId: conversations.contactId })
    .from(conversationNotes)
    .innerJoin(
      conversations,
      and(
        eq(conversations.accountId, conversationNotes.accountId),
        eq(conversations.id, conversationNotes.conversationId),
      ),
    )
    .where(and(eq(conversationNotes.accountId, accountId), mentionOf(userId)))
    .orderBy(desc(conversationNotes.createdAt), desc(conversationNotes.id))
    .limit(page.limit + 1)
    .offset(databaseOffset(page.offset))
  const { items, ...rest } = toPage(rows, page.limit, page.offset)
  const [contacts, authors, unread] = await Promise.all([
    contactNames(
      db,
      accountId,
      items.map((r) => r.contactId),
    ),
    namesOf(
      db,
      items.flatMap((r) => (r.note.authorId ? [r.note.authorId] : [])),
    ),
    unreadMentions(db, accountId, userId),
  ])
  const mentions = items.map(({ note, contactId }) => {
    const body = note.body.replace(/\s+/g, ' ').trim()
    return {
      note_id: note.id,
      conversation_id: note.conversationId,
      contact: { id: contactId, name: contacts.get(contactId) ?? '' },
      excerpt: body.length > EXCERPT_MAX ? `${body.slice(0, EXCERPT_MAX - 1)}…` : body,
      author: note.authorId ? { id: note.authorId, name: authors.get(note.authorId) ?? '' } : null,
      read: note.readBy.includes(userId),
      created_at: note.createdAt.toISOString(),
    }
  })
  return { mentions, unread_count: unread, ...rest }
}

/**
 * Marks the calling member's mentions read: those of `noteIds`, or all. Ids that are no mention of theirs are
 * passed over. Their other open consoles hear it (a `note` change of each conversation touched).
 */
export async function markMentionsRead(db: Db, tenant: InboxTenant, noteIds?: string[]) {
  const userId = memberOf(tenant)
  const { accountId } = tenant
  const ids = noteIds?.filter((id) => UUID.test(id))
  if (ids && ids.length === 0) return { marked: 0, unread_count: await unreadMentions(db, accountId, userId) }
  const marked = await db.transaction(async (tx) => {
    const rows = await tx
      .update(conversationNotes)
      .set({ readBy: sql`array_append(${conversationNotes.readBy}, ${userId}::uuid)` })
      .where(
        and(
          eq(conversationNotes.accountId, accountId),
          mentionOf(userId),
          unreadBy(userId),
          ids ? inArray(conversationNotes.id, ids) : undefined,
        ),
      )
      .returning({ conversationId: conversationNotes.conversationId })
    const touched = [...new Set(rows.map((r) => r.conversationId))]
    await publishInboxChanges(
      tx,
      accountId,
      touched.map((id) => ({ type: 'note' as const, conversation_id: id, actor_id: userId })),
    )
    return rows.length
  })
  return { marked, unread_count: await unreadMentions(db, accountId, userId) }
}

/** The notes' part of the inbox service. */
export function inboxNotes({ db, clock }: Pick<InboxServiceDeps, 'db' | 'clock'>) {
  return {
    addNote: (tenant: InboxTenant, conversationId: string, body: string) =>
      addNote(db, clock, tenant, conversationId, body),
    conversationThread: (tenant: InboxTenant, id: string, page: { limit: number; offset: number }) =>
      conversationThread(db, tenant.accountId, id, page),
    listMentions: (tenant: InboxTenant, page: { limit: number; offset: number }) => listMentions(db, tenant, page),
    markMentionsRead: (tenant: InboxTenant, noteIds?: string[]) => markMentionsRead(db, tenant, noteIds),
  }
}
