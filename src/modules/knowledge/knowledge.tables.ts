import { sql } from 'drizzle-orm'
import {
  boolean,
  customType,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'
import { accountId, accountIdPrimaryKey, accountTable } from '../../platform/auth/auth.tables.ts'
import { at, timestamps } from '../../platform/db/columns.ts'

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

export const DOCUMENT_FORMATS = ['pdf', 'docx', 'txt', 'markdown', 'html'] as const
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number]
export const DOCUMENT_SOURCES = ['upload', 'url', 'base64'] as const
/** The PostgreSQL text search configurations documents are indexed with (from the account's language). */
export const SEARCH_CONFIGS = ['german', 'english', 'simple'] as const
export type SearchConfig = (typeof SEARCH_CONFIGS)[number]

export const knowledgeDocuments = accountTable(
  'knowledge_documents',
  {
    title: text('title').notNull(),
    filename: text('filename').notNull(),
    format: text('format', { enum: DOCUMENT_FORMATS }).notNull(),
    mime: text('mime').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    source: text('source', { enum: DOCUMENT_SOURCES }).notNull(),
    sourceUrl: text('source_url'),
    searchConfig: text('search_config', { enum: SEARCH_CONFIGS }).notNull(),
    sha256: text('sha256').notNull(),
    passageCount: integer('passage_count').notNull(),
    charCount: integer('char_count').notNull(),
    createdAt: at('created_at').notNull(),
  },
  (t) => [index('knowledge_documents_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc())],
)

/** A passage of a document: a few paragraphs under their heading, with its search vector (heading weighted A). */
export const knowledgePassages = pgTable(
  'knowledge_passages',
  {
    accountId: uuid('account_id').notNull(),
    documentId: uuid('document_id').notNull(),
    position: integer('position').notNull(),
    /** the PDF page the passage starts on; null for other formats */
    page: integer('page'),
    heading: text('heading').notNull().default(''),
    text: text('text').notNull(),
    searchConfig: text('search_config', { enum: SEARCH_CONFIGS }).notNull(),
    search: tsvector('search').notNull(),
  },
  (t) => [
    primaryKey({ name: 'knowledge_passages_pk', columns: [t.accountId, t.documentId, t.position] }),
    foreignKey({
      name: 'knowledge_passages_document_fk',
      columns: [t.accountId, t.documentId],
      foreignColumns: [knowledgeDocuments.accountId, knowledgeDocuments.id],
    }).onDelete('cascade'),
    index('knowledge_passages_search_idx').using('gin', t.search),
  ],
)

export const aiSettings = pgTable('ai_settings', {
  accountId: accountIdPrimaryKey(),
  repliesEnabled: boolean('replies_enabled').notNull().default(false),
  tagsEnabled: boolean('tags_enabled').notNull().default(false),
  repliesPerContactPerHour: integer('replies_per_contact_per_hour').notNull().default(5),
  /** the last failed call to the AI endpoint for this account (down, 5xx, timeout, a malformed answer) */
  lastFailureAt: at('last_failure_at'),
  lastFailureReason: text('last_failure_reason'),
  updatedAt: at('updated_at').notNull(),
})

/**
 * What the AI did with one inbound message: `pending` (being worked), `sending` (committed before the provider
 * call, so a retry never sends twice), `sent`, `declined` (the passages do not answer it: marked for a person),
 * `skipped` (opted out, window closed, rate limit, sending impossible), `failed` (the provider refused),
 * `interrupted` (a retry found it `sending`: whether it went out is unknown).
 */
export const AI_REPLY_STATES = ['pending', 'sending', 'sent', 'declined', 'skipped', 'failed', 'interrupted'] as const
export type AiReplyState = (typeof AI_REPLY_STATES)[number]

/** A passage as the prompt held it, kept with the reply for review (the document may be deleted later). */
export interface PromptPassage {
  document_id: string
  document_title: string
  position: number
  heading: string
  text: string
  rank: number
  /** the model named it as a source of its answer */
  used: boolean
}

export const aiReplies = accountTable(
  'ai_replies',
  {
    inboundMessageId: uuid('inbound_message_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    conversationId: uuid('conversation_id'),
    state: text('state', { enum: AI_REPLY_STATES }).notNull(),
    reason: text('reason'),
    question: text('question').notNull(),
    replyText: text('reply_text'),
    /** the outbound message (ai: true) when one was stored */
    messageId: uuid('message_id'),
    passages: jsonb('passages').$type<PromptPassage[]>().notNull().default([]),
    model: text('model'),
    ...timestamps(),
  },
  (t) => [
    uniqueIndex('ai_replies_inbound_uq').on(t.accountId, t.inboundMessageId),
    index('ai_replies_contact_idx').on(t.accountId, t.contactId, t.createdAt),
    index('ai_replies_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
    index('ai_replies_message_idx').on(t.accountId, t.messageId).where(sql`${t.messageId} IS NOT NULL`),
  ],
)

export const aiTagSuggestions = pgTable(
  'ai_tag_suggestions',
  {
    accountId: accountId(),
    inboundMessageId: uuid('inbound_message_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    suggested: jsonb('suggested').$type<string[]>().notNull().default([]),
    added: jsonb('added').$type<string[]>().notNull().default([]),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    primaryKey({ name: 'ai_tag_suggestions_pk', columns: [t.accountId, t.inboundMessageId] }),
    index('ai_tag_suggestions_contact_idx').on(t.accountId, t.contactId, t.createdAt),
  ],
)
