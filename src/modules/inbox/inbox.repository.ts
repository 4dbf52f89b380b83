import { and, asc, desc, eq, gt, inArray, type SQL, sql } from 'drizzle-orm'
import { deleteContactRows, inAccount, ofContact } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { events } from '../../platform/events/events.tables.ts'
import { databaseOffset } from '../../platform/http/pagination.ts'
import { enqueueSql, notifyJobsSql } from '../../platform/jobs/jobs.ts'
import { batchClock, draftsJson } from './inbox.batch.ts'
import { conversations, messageClocks, messages } from './inbox.tables.ts'

// Every query here filters on account_id; a repository never decides a rule.

export type ConversationRow = typeof conversations.$inferSelect
export type MessageRow = typeof messages.$inferSelect
export type NewMessageRow = typeof messages.$inferInsert

export async function findConversation(db: Db, accountId: string, id: string): Promise<ConversationRow | undefined> {
  const [row] = await db
    .select()
    .from(conversations)
    .where(and(eq(conversations.accountId, accountId), eq(conversations.id, id)))
  return row
}

/** The contact's conversation on the channel, created when missing; `created` tells which. */
export async function findOrCreateConversation(
  db: Db,
  row: { accountId: string; id: string; contactId: string; channel: string; createdAt: Date },
): Promise<{ conversation: ConversationRow; created: boolean }> {
  const [inserted] = await db
    .insert(conversations)
    .values({ ...row, lastMessageAt: row.createdAt })
    .onConflictDoNothing()
    .returning()
  if (inserted) return { conversation: inserted, created: true }
  const [existing] = await db
    .select()
    .from(conversations)
    .where(
      inAccount(
        conversations,
        row.accountId,
        eq(conversations.contactId, row.contactId),
        eq(conversations.channel, row.channel),
      ),
    )
    .for('update')
  return { conversation: existing, created: false }
}

export async function messageByProviderId(
  db: Db,
  accountId: string,
  channel: string,
  providerMessageId: string,
): Promise<MessageRow | undefined> {
  const [row] = await db
    .select()
    .from(messages)
    .where(
      inAccount(messages, accountId, eq(messages.channel, channel), eq(messages.providerMessageId, providerMessageId)),
    )
  return row
}

/**
 * The first statement of a batch of inbound messages of one account and channel (one transaction): which provider
 * message ids are already stored, the senders' contacts (`contacts`: SQL with the columns `ord`, the message's
 * position, and `id`, locked) and their conversations on the channel (locked: the same order of locks as the slow
 * path), and `extras` (other modules' reads folded in: their values come back in `preloaded`, in order).
 */
export async function resolveInbound(
  db: Db,
  input: { accountId: string; channel: string; providerMessageIds: string[]; contacts: SQL; extras: SQL[] },
): Promise<{
  duplicates: Set<string>
  contactIds: Map<number, string>
  conversationIds: Map<string, string>
  preloaded: unknown[]
}> {
  const result = await db.execute(sql`
    WITH contact AS (${input.contacts}), conversation AS (
      SELECT ${conversations.contactId} AS contact_id, ${conversations.id} AS id FROM ${conversations}
      WHERE ${conversations.accountId} = ${input.accountId}::uuid AND ${conversations.channel} = ${input.channel}
        AND ${conversations.contactId} = ANY(ARRAY(SELECT id FROM contact))
      FOR UPDATE
    )
    SELECT (SELECT coalesce(jsonb_agg(${messages.providerMessageId}), '[]'::jsonb) FROM ${messages}
        WHERE ${messages.accountId} = ${input.accountId}::uuid AND ${messages.channel} = ${input.channel}
          AND ${messages.providerMessageId} = ANY(ARRAY(
            SELECT jsonb_array_elements_text(${JSON.stringify(input.providerMessageIds)}::jsonb)))) AS duplicates,
      (SELECT coalesce(jsonb_agg(jsonb_build_array(ord, id)), '[]'::jsonb) FROM contact) AS contacts,
      (SELECT coalesce(jsonb_agg(jsonb_build_array(contact_id, id)), '[]'::jsonb) FROM conversation) AS conversations,
      jsonb_build_array(${input.extras.length > 0 ? sql.join(input.extras, sql`, `) : sql``}) AS preloaded`)
  const [raw] = (result as unknown as { rows: Array<Record<string, unknown>> }).rows
  const json = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T
  return {
    duplicates: new Set(json<string[]>(raw.duplicates)),
    contactIds: new Map(json<Array<[number, string]>>(raw.contacts)),
    conversationIds: new Map(json<Array<[string, string]>>(raw.conversations)),
    preloaded: json<unknown[]>(raw.preloaded),
  }
}

/** An inbound message of insertInboundMessagesInOrder, with its message.received event. */
export interface InboundDraft {
  id: string
  conversationId: string
  contactId: string
  type: string
  text: string
  mediaUrl: string
  mediaMime: string
  providerMessageId: string
  preview: string
  /** the event's id and its data without `created_at` (added from the message's time) */
  eventId: string
  eventData: Record<string, unknown>
}

/**
 * insertMessageInOrder for many inbound messages of one account and channel, in one statement: the account's
 * message clock moves once by as many milliseconds as there are messages, each message gets its own strictly
 * increasing time in the given order, each touched conversation takes its latest message and counts the unread
 * ones, and every stored message gets its message.received event (`created_at` in its data); the caller hands the
 * events on (handOnEvents) in the same transaction. The clock row stays locked until the caller commits (see
 * insertMessageInOrder). Returns the stored messages in order; a provider message id stored before is skipped, and
 * its event is not written.
 */
export async function insertInboundMessagesInOrder(
  tx: Db,
  input: { accountId: string; channel: string; drafts: InboundDraft[]; now: Date },
): Promise<MessageRow[]> {
  const { accountId, drafts } = input
  if (drafts.length === 0) return []
  const { clock, draftAt } = batchClock(accountId, input.now, drafts.length)
  const now = input.now.toISOString()
  const rows = draftsJson(drafts, (d) => ({
    media_url: d.mediaUrl,
    media_mime: d.mediaMime,
    provider_message_id: d.providerMessageId,
    event_id: d.eventId,
    event_data: d.eventData,
  }))
  const result = await tx.execute(sql`
    WITH clock AS (${clock}
    ), draft AS (
      SELECT * FROM jsonb_to_recordset(${rows}::jsonb) AS r(ord int, id uuid, conversation_id uuid, contact_id uuid,
        type text, text text, media_url text, media_mime text, provider_message_id text, preview text, event_id uuid,
        event_data jsonb)
    ), stored AS (
      INSERT INTO ${messages} (account_id, id, conversation_id, contact_id, channel, direction, type, text, media_url,
        media_mime, provider_message_id, status, error_code, automated, ai, template, created_at)
      SELECT ${accountId}::uuid, d.id, d.conversation_id, d.contact_id, ${input.channel}, 'inbound', d.type, d.text,
        d.media_url, d.media_mime, d.provider_message_id, NULL, NULL, false, false, NULL,
        ${draftAt}
      FROM draft d, clock
      ON CONFLICT DO NOTHING
      RETURNING *
    ), touched AS (
      SELECT stored.conversation_id,
        max(stored.created_at) AS last_at,
        (array_agg(draft.preview ORDER BY stored.created_at DESC))[1] AS preview,
        count(*)::int AS received
      FROM stored JOIN draft ON draft.id = stored.id
      GROUP BY stored.conversation_id
    ), conversation AS (
      UPDATE ${conversations} c SET
        last_message_at = touched.last_at,
        last_message_preview = touched.preview,
        last_message_direction = 'inbound',
        last_inbound_at = touched.last_at,
        unread_count = c.unread_count + touched.received,
        automated_only = false,
        status = 'open',
        closed_at = NULL,
        snoozed_until = NULL,
        snooze_until_reply = false
      FROM touched
      WHERE c.account_id = ${accountId}::uuid AND c.id = touched.conversation_id
      RETURNING c.id
    ), event AS (
      INSERT INTO ${events} (account_id, id, name, contact_id, data, created_at)
      SELECT stored.account_id, draft.event_id, 'message.received', stored.contact_id,
        draft.event_data || jsonb_build_object('created_at',
          to_char(stored.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
        ${now}::timestamptz
      FROM stored JOIN draft ON draft.id = stored.id
      RETURNING id
    )
    SELECT stored.*, (SELECT count(*) FROM conversation) AS touched, (SELECT count(*) FROM event) AS evented
    FROM stored ORDER BY stored.created_at`)
  return (result as unknown as { rows: Array<Record<string, unknown>> }).rows.map(messageFromRaw)
}

/** An event recorded with the message it reports (message.received): its data gets the message's `created_at`. */
export interface MessageEvent {
  id: string
  name: string
  data: Record<string, unknown>
  createdAt: Date
  /** its dispatch job (enqueue's input) */
  dispatch: { queue: string; payload: Record<string, unknown> }
}

/**
 * Stores a message with the account's next message time, in one statement: the time is later than every
 * earlier one (at least 1 ms after the last), the conversation's last message moves to it, and the given event
 * (message.received) is written with `created_at` in its data, with its dispatch job and that job's NOTIFY. The
 * message_clocks row stays locked until the caller commits, so an account's message writers commit in the order
 * of their times and no message can appear later with a time a poller already passed; keep what follows the
 * statement in the transaction short. Returns undefined when the provider message id is already stored (the
 * caller rolls back then: the event and job of this statement are written regardless).
 */
export async function insertMessageInOrder(
  db: Db,
  row: Omit<NewMessageRow, 'createdAt'> & { id: string; accountId: string; conversationId: string },
  options: { now: Date; preview: string; event?: MessageEvent },
): Promise<MessageRow | undefined> {
  const inbound = row.direction === 'inbound'
  const automated = row.automated ?? false
  const event = options.event
  const dispatch = event
    ? enqueueSql(options.now, [{ accountId: row.accountId, ...event.dispatch }])
    : { insert: sql`SELECT NULL::text AS queue, NULL::uuid AS account_id WHERE false` }
  const eventInsert = event
    ? sql`INSERT INTO ${events} (account_id, id, name, contact_id, data, created_at)
      SELECT stored.account_id, ${event.id}::uuid, ${event.name}, stored.contact_id,
        ${JSON.stringify(event.data)}::jsonb || jsonb_build_object('created_at',
          to_char(stored.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
        ${event.createdAt.toISOString()}::timestamptz
      FROM stored
      RETURNING id`
    : sql`SELECT NULL::uuid AS id WHERE false`
  const result = await db.execute(sql`
    WITH clock AS (
      INSERT INTO ${messageClocks} (account_id, last_at)
      VALUES (${row.accountId}::uuid, ${options.now.toISOString()}::timestamptz)
      ON CONFLICT (account_id) DO UPDATE
        SET last_at = GREATEST(EXCLUDED.last_at, ${messageClocks}.last_at + interval '1 millisecond')
      RETURNING last_at
    ), stored AS (
      INSERT INTO ${messages} (account_id, id, conversation_id, contact_id, channel, direction, type, text, media_url,
        media_mime, provider_message_id, status, error_code, automated, ai, template, created_at)
      SELECT ${row.accountId}::uuid, ${row.id}::uuid, ${row.conversationId}::uuid, ${row.contactId}::uuid,
        ${row.channel}, ${row.direction}, ${row.type}, ${row.text ?? ''}, ${row.mediaUrl ?? ''}, ${row.mediaMime ?? ''},
        ${row.providerMessageId ?? null}, ${row.status ?? null}, ${row.errorCode ?? null}, ${automated}, ${row.ai ?? false},
        ${row.template ? JSON.stringify(row.template) : null}::jsonb, clock.last_at
      FROM clock
      ON CONFLICT DO NOTHING
      RETURNING *
    ), conversation AS (
      UPDATE ${conversations} c SET
        last_message_at = stored.created_at,
        last_message_preview = ${options.preview},
        last_message_direction = stored.direction,
        last_inbound_at = CASE WHEN ${inbound} THEN stored.created_at ELSE c.last_inbound_at END,
        unread_count = c.unread_count + CASE WHEN ${inbound} THEN 1 ELSE 0 END,
        status = CASE WHEN ${inbound} THEN 'open' ELSE c.status END,
        closed_at = CASE WHEN ${inbound} THEN NULL ELSE c.closed_at END,
        snoozed_until = CASE WHEN ${inbound} THEN NULL ELSE c.snoozed_until END,
        snooze_until_reply = c.snooze_until_reply AND NOT ${inbound},
        automated_only = c.automated_only AND NOT (${inbound} OR NOT ${automated}),
        needs_person = c.needs_person AND (${inbound} OR ${automated} OR ${row.ai ?? false}),
        needs_person_reason = CASE WHEN ${inbound} OR ${automated} OR ${row.ai ?? false}
          THEN c.needs_person_reason ELSE NULL END
      FROM stored
      WHERE c.account_id = stored.account_id AND c.id = stored.conversation_id
      RETURNING c.id
    ), event AS (${eventInsert}), dispatch AS (${dispatch.insert})
    SELECT stored.*, (SELECT count(*) FROM conversation) AS touched, (SELECT count(*) FROM event) AS evented,
      ${notifyJobsSql('dispatch')} AS notified
    FROM stored`)
  const [raw] = (result as unknown as { rows: Array<Record<string, unknown>> }).rows
  return raw ? messageFromRaw(raw) : undefined
}

function messageFromRaw(raw: Record<string, unknown>): MessageRow {
  return {
    accountId: String(raw.account_id),
    id: String(raw.id),
    conversationId: String(raw.conversation_id),
    contactId: String(raw.contact_id),
    channel: String(raw.channel),
    direction: raw.direction as MessageRow['direction'],
    type: String(raw.type),
    text: String(raw.text),
    mediaUrl: String(raw.media_url),
    mediaMime: String(raw.media_mime),
    providerMessageId: raw.provider_message_id === null ? null : String(raw.provider_message_id),
    status: (raw.status ?? null) as MessageRow['status'],
    errorCode: raw.error_code === null || raw.error_code === undefined ? null : String(raw.error_code),
    automated: Boolean(raw.automated),
    ai: Boolean(raw.ai),
    template: (raw.template ?? null) as MessageRow['template'],
    createdAt: new Date(raw.created_at as string | Date),
  }
}

export async function lastInboundAt(db: Db, accountId: string, contactId: string, channel: string) {
  const [row] = await db
    .select({ at: conversations.lastInboundAt })
    .from(conversations)
    .where(ofContact(conversations, accountId, contactId, eq(conversations.channel, channel)))
  return row?.at ?? null
}

export async function listConversations(
  db: Db,
  accountId: string,
  filter: {
    channel?: string
    needs_person?: boolean
    sort: 'created_at' | 'last_message_at'
    limit: number
    offset: number
  },
) {
  // the spec's order is creation; the inbox asks for activity (each has its index: conversations_created_idx and
  // conversations_activity_idx)
  const at = filter.sort === 'last_message_at' ? conversations.lastMessageAt : conversations.createdAt
  return db
    .select()
    .from(conversations)
    .where(
      inAccount(
        conversations,
        accountId,
        filter.channel ? eq(conversations.channel, filter.channel) : undefined,
        filter.needs_person === undefined ? undefined : eq(conversations.needsPerson, filter.needs_person),
      ),
    )
    .orderBy(desc(at), desc(conversations.id))
    .limit(filter.limit + 1)
    .offset(databaseOffset(filter.offset))
}

/** The account's unread inbound messages over every conversation (the partial index holds those with any). */
export async function unreadTotal(db: Db, accountId: string): Promise<number> {
  const [row] = await db
    .select({ total: sql<number>`coalesce(sum(${conversations.unreadCount}), 0)::int`.mapWith(Number) })
    .from(conversations)
    .where(and(eq(conversations.accountId, accountId), sql`${conversations.unreadCount} > 0`))
  return row?.total ?? 0
}

/** The newest limit+1 messages after skipping `offset` from the newest end, newest first. */
export async function conversationMessages(
  db: Db,
  accountId: string,
  conversationId: string,
  page: { limit: number; offset: number },
): Promise<MessageRow[]> {
  return db
    .select()
    .from(messages)
    .where(and(eq(messages.accountId, accountId), eq(messages.conversationId, conversationId)))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(page.limit + 1)
    .offset(databaseOffset(page.offset))
}

/**
 * GET /messages, a hot read of the API: its four shapes (with or without created_after and conversation_id) are
 * prepared once per database handle with placeholders, so a request binds its values and builds nothing.
 */
const preparedLists = new WeakMap<Db, ReturnType<typeof prepareLists>>()

function prepareLists(db: Db) {
  const shape = (after: boolean, conversation: boolean) =>
    db
      .select()
      .from(messages)
      .where(
        and(
          eq(messages.accountId, sql.placeholder('accountId')),
          eq(messages.direction, sql.placeholder('direction')),
          after ? gt(messages.createdAt, sql.placeholder('createdAfter')) : undefined,
          conversation ? eq(messages.conversationId, sql.placeholder('conversationId')) : undefined,
        ),
      )
      .orderBy(desc(messages.createdAt), desc(messages.id))
      .limit(sql.placeholder('limit'))
      .offset(sql.placeholder('offset'))
      .prepare(`messages_list${after ? '_after' : ''}${conversation ? '_conversation' : ''}`)
  return {
    all: shape(false, false),
    after: shape(true, false),
    conversation: shape(false, true),
    afterConversation: shape(true, true),
  }
}

export async function listMessages(
  db: Db,
  accountId: string,
  filter: {
    direction: 'inbound' | 'outbound'
    createdAfter?: Date
    conversationId?: string
    limit: number
    offset: number
  },
): Promise<MessageRow[]> {
  let lists = preparedLists.get(db)
  if (!lists) {
    lists = prepareLists(db)
    preparedLists.set(db, lists)
  }
  const after = filter.createdAfter !== undefined
  const conversation = filter.conversationId !== undefined
  const query = after
    ? conversation
      ? lists.afterConversation
      : lists.after
    : conversation
      ? lists.conversation
      : lists.all
  return query.execute({
    accountId,
    direction: filter.direction,
    createdAfter: filter.createdAfter?.toISOString(),
    conversationId: filter.conversationId,
    limit: filter.limit + 1,
    offset: filter.offset,
  })
}

/** Outbound messages by provider id, locked: status updates of one message take turns. */
export async function outboundByProviderIds(db: Db, accountId: string, channel: string, ids: string[]) {
  if (ids.length === 0) return []
  return db
    .select()
    .from(messages)
    .where(
      inAccount(
        messages,
        accountId,
        eq(messages.channel, channel),
        eq(messages.direction, 'outbound'),
        inArray(messages.providerMessageId, ids),
      ),
    )
    .orderBy(asc(messages.id))
    .for('update')
}

export async function setMessageStatus(
  db: Db,
  accountId: string,
  id: string,
  status: MessageRow['status'],
  errorCode: string | null,
): Promise<void> {
  await db
    .update(messages)
    .set({ status, errorCode })
    .where(and(eq(messages.accountId, accountId), eq(messages.id, id)))
}

export async function deleteContactMessages(db: Db, accountId: string, contactId: string) {
  const removedMessages = await db
    .delete(messages)
    .where(ofContact(messages, accountId, contactId))
    .returning({ id: messages.id, mediaUrl: messages.mediaUrl })
  return {
    counts: {
      messages: removedMessages.length,
      conversations: await deleteContactRows(db, conversations, accountId, contactId),
    },
    mediaUrls: removedMessages.map((m) => m.mediaUrl).filter((url) => url !== ''),
  }
}

/** Marks a conversation for a person (the built-in AI could not answer); a person's reply clears it. */
export async function markForPerson(db: Db, accountId: string, conversationId: string, reason: string) {
  await db
    .update(conversations)
    .set({ needsPerson: true, needsPersonReason: reason })
    .where(and(eq(conversations.accountId, accountId), eq(conversations.id, conversationId)))
}
