import { and, desc, eq, gt, sql } from 'drizzle-orm'
import { deleteContactRows, ofContact } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { rowAsJsonSql, rowFromJson, rows } from '../../platform/db/rows.ts'
import type { Passage } from './knowledge.extract.ts'
import {
  type AiReplyState,
  aiReplies,
  aiSettings,
  aiTagSuggestions,
  knowledgeDocuments,
  knowledgePassages,
  type PromptPassage,
  type SearchConfig,
} from './knowledge.tables.ts'

// Every query here filters on account_id; a repository never decides a rule.

export type DocumentRow = typeof knowledgeDocuments.$inferSelect
export type AiSettingsRow = typeof aiSettings.$inferSelect
export type AiReplyRow = typeof aiReplies.$inferSelect

export async function insertDocument(tx: Db, row: DocumentRow): Promise<void> {
  await tx.insert(knowledgeDocuments).values(row)
}

/**
 * All passages of a document in one statement; each search vector weights the section heading A, the document
 * title B and the text D, in the document's search configuration.
 */
export async function insertPassages(
  tx: Db,
  document: { accountId: string; id: string; title: string; searchConfig: SearchConfig },
  passages: Passage[],
): Promise<void> {
  const chunk = 500
  for (let start = 0; start < passages.length; start += chunk) {
    const values = JSON.stringify(
      passages
        .slice(start, start + chunk)
        .map((p) => ({ position: p.position, page: p.page, heading: p.heading, text: p.text })),
    )
    const config = sql`${document.searchConfig}::regconfig`
    await tx.execute(sql`
      INSERT INTO ${knowledgePassages} (account_id, document_id, position, page, heading, text, search_config, search)
      SELECT ${document.accountId}::uuid, ${document.id}::uuid, r.position, r.page, r.heading, r.text,
        ${document.searchConfig},
        setweight(to_tsvector(${config}, r.heading), 'A')
          || setweight(to_tsvector(${config}, ${document.title}), 'B')
          || setweight(to_tsvector(${config}, r.text), 'D')
      FROM jsonb_to_recordset(${values}::jsonb) AS r(position int, page int, heading text, text text)`)
  }
}

export async function listDocuments(db: Db, accountId: string, query: { limit: number; offset: number }) {
  return db
    .select()
    .from(knowledgeDocuments)
    .where(eq(knowledgeDocuments.accountId, accountId))
    .orderBy(desc(knowledgeDocuments.createdAt), desc(knowledgeDocuments.id))
    .limit(query.limit + 1)
    .offset(query.offset)
}

export async function findDocument(db: Db, accountId: string, id: string): Promise<DocumentRow | undefined> {
  const [row] = await db
    .select()
    .from(knowledgeDocuments)
    .where(and(eq(knowledgeDocuments.accountId, accountId), eq(knowledgeDocuments.id, id)))
  return row
}

/** A new title, and every passage's search vector rebuilt with it (the title weighs B). */
export async function retitleDocument(tx: Db, row: DocumentRow, title: string): Promise<void> {
  await tx
    .update(knowledgeDocuments)
    .set({ title })
    .where(and(eq(knowledgeDocuments.accountId, row.accountId), eq(knowledgeDocuments.id, row.id)))
  const config = sql`${row.searchConfig}::regconfig`
  await tx.execute(sql`UPDATE ${knowledgePassages} SET search = setweight(to_tsvector(${config}, heading), 'A')
      || setweight(to_tsvector(${config}, ${title}), 'B') || setweight(to_tsvector(${config}, text), 'D')
    WHERE account_id = ${row.accountId} AND document_id = ${row.id}`)
}

/** The document's new content: its row updated and its passages removed (the caller inserts the new ones). */
export async function replaceDocument(tx: Db, row: DocumentRow): Promise<void> {
  await tx
    .update(knowledgeDocuments)
    .set({
      format: row.format,
      mime: row.mime,
      sizeBytes: row.sizeBytes,
      sha256: row.sha256,
      passageCount: row.passageCount,
      charCount: row.charCount,
    })
    .where(and(eq(knowledgeDocuments.accountId, row.accountId), eq(knowledgeDocuments.id, row.id)))
  await tx.execute(sql`DELETE FROM ${knowledgePassages}
    WHERE account_id = ${row.accountId} AND document_id = ${row.id}`)
}

export async function deleteDocument(db: Db, accountId: string, id: string): Promise<DocumentRow | undefined> {
  const [row] = await db
    .delete(knowledgeDocuments)
    .where(and(eq(knowledgeDocuments.accountId, accountId), eq(knowledgeDocuments.id, id)))
    .returning()
  return row
}

export interface PassageHit {
  document_id: string
  title: string
  filename: string
  format: string
  position: number
  page: number | null
  heading: string
  text: string
  snippet: string
  rank: number
}

/**
 * Ranked passages of the account matching `q`. `all`: every word must occur (websearch syntax: quotes, OR, -word);
 * `any`: any of the words (for questions in natural language). Each configuration in use is searched with its own
 * query, so the GIN index serves each branch.
 */
export async function searchPassages(
  db: Db,
  accountId: string,
  input: { q: string; mode: 'all' | 'any'; limit: number; configs: SearchConfig[] },
): Promise<PassageHit[]> {
  if (input.configs.length === 0) return []
  const queryFor = (config: string) =>
    input.mode === 'all'
      ? sql`websearch_to_tsquery(${config}::regconfig, ${input.q})`
      : sql`nullif(replace(plainto_tsquery(${config}::regconfig, ${input.q})::text, ' & ', ' | '), '')::tsquery`
  const branches = input.configs.map(
    (config) => sql`
      SELECT p.document_id, p.position, p.page, p.heading, p.text, p.search_config,
        ts_rank(p.search, q.query, 1) AS rank, q.query
      FROM ${knowledgePassages} p, (SELECT ${queryFor(config)} AS query) q
      WHERE p.account_id = ${accountId}::uuid AND p.search_config = ${config} AND q.query IS NOT NULL
        AND p.search @@ q.query`,
  )
  const result = await db.execute(sql`
    WITH hits AS (${sql.join(branches, sql` UNION ALL `)}),
    top AS (SELECT * FROM hits ORDER BY rank DESC, document_id, position LIMIT ${input.limit})
    SELECT top.document_id, d.title, d.filename, d.format, top.position, top.page, top.heading, top.text,
      top.rank::float8 AS rank,
      ts_headline(top.search_config::regconfig, top.text, top.query,
        'MaxFragments=2, MinWords=8, MaxWords=30, StartSel=**, StopSel=**') AS snippet
    FROM top JOIN ${knowledgeDocuments} d ON d.account_id = ${accountId}::uuid AND d.id = top.document_id
    ORDER BY top.rank DESC, top.document_id, top.position`)
  return rows<PassageHit>(result).map((r) => ({
    ...r,
    position: Number(r.position),
    page: r.page === null ? null : Number(r.page),
    rank: Number(r.rank),
  }))
}

/** The search configurations the account's documents use. */
export async function configsInUse(db: Db, accountId: string): Promise<SearchConfig[]> {
  const result = await db.execute(
    sql`SELECT DISTINCT search_config FROM ${knowledgeDocuments} WHERE account_id = ${accountId}::uuid`,
  )
  return rows<{ search_config: SearchConfig }>(result).map((r) => r.search_config)
}

export async function settingsOf(db: Db, accountId: string): Promise<AiSettingsRow | undefined> {
  const [row] = await db.select().from(aiSettings).where(eq(aiSettings.accountId, accountId))
  return row
}

/** settingsOf as a jsonb expression for a statement of another module; settingsFromJson reads its value. */
export const settingsAsJsonSql = (accountId: string) => rowAsJsonSql(aiSettings, eq(aiSettings.accountId, accountId))
export const settingsFromJson = (value: unknown): AiSettingsRow | undefined =>
  rowFromJson(aiSettings, value) ?? undefined

export async function upsertSettings(
  db: Db,
  row: Partial<Omit<AiSettingsRow, 'accountId' | 'updatedAt'>> & { accountId: string; updatedAt: Date },
): Promise<AiSettingsRow> {
  const { accountId: _accountId, ...changes } = row
  const [saved] = await db
    .insert(aiSettings)
    .values(row)
    .onConflictDoUpdate({ target: aiSettings.accountId, set: changes })
    .returning()
  return saved
}

/** The reply row of an inbound message, created `pending` when missing (locked for the caller's transaction). */
export async function claimReply(
  tx: Db,
  row: Pick<AiReplyRow, 'accountId' | 'id' | 'inboundMessageId' | 'contactId' | 'question' | 'createdAt'>,
): Promise<AiReplyRow> {
  await tx
    .insert(aiReplies)
    .values({ ...row, state: 'pending', updatedAt: row.createdAt })
    .onConflictDoNothing()
  const [found] = await tx
    .select()
    .from(aiReplies)
    .where(and(eq(aiReplies.accountId, row.accountId), eq(aiReplies.inboundMessageId, row.inboundMessageId)))
    .for('update')
  return found
}

export async function updateReply(
  db: Db,
  accountId: string,
  id: string,
  change: Partial<{
    state: AiReplyState
    reason: string | null
    replyText: string | null
    messageId: string | null
    conversationId: string | null
    passages: PromptPassage[]
    model: string | null
  }> & { updatedAt: Date },
): Promise<void> {
  await db
    .update(aiReplies)
    .set(change)
    .where(and(eq(aiReplies.accountId, accountId), eq(aiReplies.id, id)))
}

/** AI replies sent to the contact since `since` (the per-contact rate). */
export async function repliesSentSince(db: Db, accountId: string, contactId: string, since: Date): Promise<number> {
  const result = await db.execute(sql`
    SELECT count(*)::int AS n FROM ${aiReplies}
    WHERE account_id = ${accountId}::uuid AND contact_id = ${contactId}::uuid
      AND created_at > ${since.toISOString()}::timestamptz AND state IN ('sending', 'sent', 'interrupted')`)
  return Number(rows<{ n: number }>(result)[0]?.n ?? 0)
}

export async function listReplies(
  db: Db,
  accountId: string,
  query: { limit: number; offset: number; conversationId?: string; messageId?: string },
) {
  const filters = [eq(aiReplies.accountId, accountId)]
  if (query.conversationId) filters.push(eq(aiReplies.conversationId, query.conversationId))
  if (query.messageId) {
    filters.push(
      sql`(${aiReplies.messageId} = ${query.messageId}::uuid OR ${aiReplies.inboundMessageId} = ${query.messageId}::uuid)`,
    )
  }
  return db
    .select()
    .from(aiReplies)
    .where(and(...filters))
    .orderBy(desc(aiReplies.createdAt), desc(aiReplies.id))
    .limit(query.limit + 1)
    .offset(query.offset)
}

export async function insertTagSuggestion(db: Db, row: typeof aiTagSuggestions.$inferInsert): Promise<boolean> {
  const inserted = await db.insert(aiTagSuggestions).values(row).onConflictDoNothing().returning()
  return inserted.length > 0
}

export async function tagSuggestionsSince(db: Db, accountId: string, contactId: string, since: Date) {
  const [row] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(aiTagSuggestions)
    .where(ofContact(aiTagSuggestions, accountId, contactId, gt(aiTagSuggestions.createdAt, since)))
  return Number(row?.n ?? 0)
}

export async function updateTagSuggestion(
  db: Db,
  accountId: string,
  inboundMessageId: string,
  change: { suggested: string[]; added: string[] },
): Promise<void> {
  await db
    .update(aiTagSuggestions)
    .set(change)
    .where(and(eq(aiTagSuggestions.accountId, accountId), eq(aiTagSuggestions.inboundMessageId, inboundMessageId)))
}

/** DELETE /contacts/{id}: the AI's records about the contact go with it. */
export async function deleteContactAiRecords(tx: Db, accountId: string, contactId: string) {
  return {
    ai_replies: await deleteContactRows(tx, aiReplies, accountId, contactId),
    ai_tag_suggestions: await deleteContactRows(tx, aiTagSuggestions, accountId, contactId),
  }
}

/** A document's passages in order (the web app's document view); undefined when the document is not the account's. */
export async function passagesOf(
  db: Db,
  accountId: string,
  documentId: string,
  query: { limit: number; offset: number },
) {
  const [document] = await db
    .select({ id: knowledgeDocuments.id })
    .from(knowledgeDocuments)
    .where(and(eq(knowledgeDocuments.accountId, accountId), eq(knowledgeDocuments.id, documentId)))
  if (!document) return undefined
  return db
    .select({
      position: knowledgePassages.position,
      page: knowledgePassages.page,
      heading: knowledgePassages.heading,
      text: knowledgePassages.text,
    })
    .from(knowledgePassages)
    .where(and(eq(knowledgePassages.accountId, accountId), eq(knowledgePassages.documentId, documentId)))
    .orderBy(knowledgePassages.position)
    .limit(query.limit + 1)
    .offset(query.offset)
}

/** A failed call to the AI endpoint: the account's settings show the last one. */
export async function recordAiFailure(db: Db, accountId: string, at: Date, reason: string): Promise<void> {
  await db
    .update(aiSettings)
    .set({ lastFailureAt: at, lastFailureReason: reason })
    .where(eq(aiSettings.accountId, accountId))
}
