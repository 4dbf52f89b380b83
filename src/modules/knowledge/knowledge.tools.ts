import { and, eq } from 'drizzle-orm'
import { Type } from 'typebox'
import { AppError, notFound } from '../../platform/http/errors.ts'
import { paging, UUID, Uuid } from '../../platform/tools/common.ts'
import { withOk } from '../../platform/tools/outputs.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import type { AiService } from './knowledge.ai.ts'
import { AskBody, AskResponse, PassagesResponse } from './knowledge.app.ts'
import { passagesOf } from './knowledge.repository.ts'
import {
  AiReplyPage,
  AiReplyQuery,
  AiSettings,
  AiSettingsBody,
  Deleted,
  ListQuery as DocumentListQuery,
  DocumentPage,
  DocumentResponse,
  RefreshResponse,
  SearchQuery,
  SearchResponse,
} from './knowledge.schemas.ts'
import type { KnowledgeService } from './knowledge.service.ts'
import { knowledgeDocuments } from './knowledge.tables.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  knowledge: KnowledgeService
  ai: AiService
}

const defineTool = toolsUsing<Services>()

const DocumentId = Uuid('the knowledge document id, from list_knowledge_documents')

async function knowledgeDocument(ctx: ToolContext<Services>, id: string) {
  const [row] = await ctx.platform.database.orm
    .select({
      id: knowledgeDocuments.id,
      title: knowledgeDocuments.title,
      filename: knowledgeDocuments.filename,
      passages: knowledgeDocuments.passageCount,
    })
    .from(knowledgeDocuments)
    .where(and(eq(knowledgeDocuments.accountId, ctx.tenant.accountId), eq(knowledgeDocuments.id, id)))
  if (!row) throw new AppError(404, 'not_found', 'No such knowledge document')
  return row
}

const db = (ctx: ToolContext<Services>) => ctx.platform.database.orm

export const listKnowledgeDocuments = defineTool({
  name: 'list_knowledge_documents',
  title: 'List knowledge documents',
  description:
    'The documents the built-in AI answers customers from, newest first: title, file name, format, size, source and the number of indexed passages.',
  scope: 'knowledge:write',
  rest: 'GET /knowledge/documents',
  output: DocumentPage,
  kind: 'read',
  input: Type.Object(paging(100, 25)),
  async run(ctx, args) {
    const query = restRule(DocumentListQuery, args, 'query')
    const { items, ...page } = await ctx.services.knowledge.list(ctx.tenant, query)
    return { documents: items, ...page }
  },
})

export const getKnowledgeDocument = defineTool({
  name: 'get_knowledge_document',
  title: 'Get a knowledge document',
  description:
    'One knowledge document: title, file name, format, source (upload, url with its address, or text), passages, characters and size.',
  scope: 'knowledge:write',
  rest: 'GET /knowledge/documents/{id}',
  output: DocumentResponse,
  kind: 'read',
  input: Type.Object({ document_id: DocumentId }),
  async run(ctx, args) {
    return { document: await ctx.services.knowledge.get(ctx.tenant, args.document_id) }
  },
})

export const renameKnowledgeDocument = defineTool({
  name: 'rename_knowledge_document',
  title: 'Rename a knowledge document',
  description:
    'Give a knowledge document a new title (1-300 characters): the built-in AI cites it by this title and search weighs it, so its passages are indexed again at once.',
  scope: 'knowledge:write',
  rest: 'PATCH /knowledge/documents/{id}',
  output: DocumentResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    document_id: DocumentId,
    title: Type.String({ minLength: 1, maxLength: 300 }),
  }),
  async run(ctx, args) {
    return { document: await ctx.services.knowledge.rename(ctx.tenant, args.document_id, args.title) }
  },
})

export const refreshKnowledgeDocument = defineTool({
  name: 'refresh_knowledge_document',
  title: 'Fetch a knowledge document again',
  description:
    'Download a document that was added from an address again (an updated price list, FAQ page); when its content changed, its text is extracted again and its passages replaced (same id and title), else nothing changes.',
  scope: 'knowledge:write',
  rest: 'POST /knowledge/documents/{id}/refresh',
  output: RefreshResponse,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({ document_id: DocumentId }),
  async run(ctx, args) {
    return await ctx.services.knowledge.refresh(ctx.tenant, args.document_id)
  },
})

export const searchKnowledge = defineTool({
  name: 'search_knowledge',
  title: 'Search the knowledge documents',
  description:
    'Full-text search over the passages of the knowledge documents in the account’s language ("quoted phrases", OR and -word work); the best passages first with a snippet (matches in **bold**). match says whether passages hold every word (all), only some (any) or none.',
  scope: 'knowledge:write',
  rest: 'GET /knowledge/search',
  output: SearchResponse,
  kind: 'read',
  input: Type.Object({
    q: Type.String({ minLength: 1, maxLength: 500, description: 'words to find' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
  }),
  async run(ctx, args) {
    return await ctx.services.knowledge.search(ctx.tenant, restRule(SearchQuery, args, 'query'))
  },
})

export const addKnowledgeFromUrl = defineTool({
  name: 'add_knowledge_document_from_url',
  title: 'Add a knowledge document from a URL',
  description:
    'Download a document (PDF, DOCX, plain text, Markdown or HTML, at most 20 MB) from a public https address, extract its text and index it for the built-in AI. A file without text (a scanned PDF) is refused with the reason.',
  scope: 'knowledge:write',
  rest: 'POST /knowledge/documents (url)',
  output: withOk(DocumentResponse),
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    url: Type.String({ minLength: 1, maxLength: 2000, description: 'public https address of the document' }),
  }),
  async run(ctx, args) {
    const input = await ctx.services.knowledge.download(args.url)
    return { ok: true, document: await ctx.services.knowledge.add(ctx.tenant, input) }
  },
})

export const addKnowledgeFromText = defineTool({
  name: 'add_knowledge_document_from_text',
  title: 'Add a knowledge document from text',
  description:
    'Add a document written here (opening hours, prices, answers to common questions) to the knowledge the built-in AI answers from. Markdown headings (# ...) become the passages’ headings; the title is the file name without extension.',
  scope: 'knowledge:write',
  rest: 'POST /knowledge/documents (data_base64 of a .md file)',
  output: withOk(DocumentResponse),
  kind: 'write',
  input: Type.Object({
    title: Type.String({
      minLength: 1,
      maxLength: 200,
      pattern: '^[^/\\\\]+$',
      description: 'the document’s name (no slashes)',
    }),
    text: Type.String({ minLength: 1, maxLength: 500_000, description: 'the content, plain text or Markdown' }),
  }),
  async run(ctx, args) {
    const input = {
      data: Buffer.from(args.text, 'utf8'),
      filename: `${args.title.trim()}.md`,
      mime: 'text/markdown',
      source: 'base64' as const,
    }
    return { ok: true, document: await ctx.services.knowledge.add(ctx.tenant, input) }
  },
})

export const deleteKnowledgeDocument = defineTool({
  name: 'delete_knowledge_document',
  title: 'Delete a knowledge document',
  description: 'Delete a knowledge document and its passages: the built-in AI no longer answers from it.',
  scope: 'knowledge:write',
  rest: 'DELETE /knowledge/documents/{id}',
  output: Deleted,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ document_id: DocumentId }),
  async preview(ctx, args) {
    return {
      action: 'delete a knowledge document and its passages',
      document: await knowledgeDocument(ctx, args.document_id),
    }
  },
  async run(ctx, args) {
    return await ctx.services.knowledge.remove(ctx.tenant, args.document_id)
  },
})

export const getAiSettings = defineTool({
  name: 'get_ai_settings',
  title: 'Get the AI settings',
  description:
    'Whether the built-in AI answers inbound chat messages from the knowledge documents and suggests tags, its per-contact hourly limit, and whether an AI endpoint is configured (and if not, why nothing is called).',
  scope: 'settings:read',
  rest: 'GET /settings/ai',
  output: AiSettings,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return await ctx.services.ai.settings(ctx.tenant.accountId)
  },
})

export const updateAiSettings = defineTool({
  name: 'update_ai_settings',
  title: 'Change the AI settings',
  description:
    'Switch the built-in AI’s replies to customers (replies_enabled) and its tag suggestions (tags_enabled) on or off, and set how many replies one contact can get per hour (1-60).',
  scope: 'settings:write',
  rest: 'PATCH /settings/ai',
  output: withOk(AiSettings),
  kind: 'write',
  idempotent: true,
  input: Type.Object(AiSettingsBody.properties),
  async run(ctx, args) {
    const body = restRule(AiSettingsBody, args, 'body')
    return { ok: true, ...(await ctx.services.ai.updateSettings(ctx.tenant.accountId, body)) }
  },
})

export const listAiReplies = defineTool({
  name: 'list_ai_replies',
  title: 'List the AI’s replies',
  description:
    'What the built-in AI did with inbound messages, newest first: sent, declined (handed to a person), skipped, failed, with the passages its prompt held; filter by conversation_id or message_id.',
  scope: 'inbox:read',
  rest: 'GET /knowledge/ai-replies',
  output: AiReplyPage,
  kind: 'read',
  input: Type.Object({
    conversation_id: Type.Optional(Uuid('only this conversation')),
    message_id: Type.Optional(Uuid('the inbound message or the reply')),
    ...paging(100, 25),
  }),
  async run(ctx, args) {
    const query = restRule(AiReplyQuery, args, 'query')
    const { items, ...page } = await ctx.services.ai.listReplies(ctx.tenant, query)
    return { ai_replies: items, ...page }
  },
})

export const getKnowledgeDocumentPassages = defineTool({
  name: 'get_knowledge_document_passages',
  title: 'Passages of a knowledge document',
  description:
    'A knowledge document’s passages in order, as the search indexes them and the built-in AI quotes them: position, PDF page, heading and text. Paged (limit 1-200, default 50).',
  scope: 'knowledge:write',
  rest: 'GET /app/knowledge/documents/{id}/passages',
  output: PassagesResponse,
  kind: 'read',
  input: Type.Object({ document_id: Uuid('the document id, from list_knowledge_documents'), ...paging(200, 50) }),
  async run(ctx, args) {
    const limit = args.limit ?? 50
    const offset = args.offset ?? 0
    const found = UUID.test(args.document_id)
      ? await passagesOf(db(ctx), ctx.tenant.accountId, args.document_id, { limit, offset })
      : undefined
    if (!found) throw notFound('document')
    return { passages: found.slice(0, limit), has_more: found.length > limit, limit, offset }
  },
})

export const askKnowledgeTestQuestion = defineTool({
  name: 'ask_knowledge_test_question',
  title: 'Ask the AI a test question',
  description:
    'How the built-in AI would answer a customer’s chat question from the knowledge documents, without sending or storing anything: the same five best passages, the same prompt to the configured model, the same strict reading of its answer. Answers outcome (answer or declined), the answer, the reason for a decline (no_passages: no model asked) and the passages with the cited ones marked. Works while AI replies are switched off; 409 ai_unavailable without an AI endpoint, 502 ai_call_failed when the model fails.',
  scope: 'knowledge:write',
  rest: 'POST /app/knowledge/ask',
  output: AskResponse,
  kind: 'read',
  openWorld: true,
  input: AskBody,
  async run(ctx, args) {
    const { question } = restRule(AskBody, args, 'body')
    return await ctx.services.ai.ask(ctx.tenant.accountId, question)
  },
})

/** In the order the tool server lists them. */
export const knowledgeTools = [
  listKnowledgeDocuments,
  getKnowledgeDocument,
  renameKnowledgeDocument,
  refreshKnowledgeDocument,
  searchKnowledge,
  addKnowledgeFromUrl,
  addKnowledgeFromText,
  deleteKnowledgeDocument,
  getAiSettings,
  updateAiSettings,
  listAiReplies,
  getKnowledgeDocumentPassages,
  askKnowledgeTestQuestion,
]
