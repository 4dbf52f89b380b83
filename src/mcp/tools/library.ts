import { and, eq } from 'drizzle-orm'
import { Type } from 'typebox'
import {
  AiReplyQuery,
  AiSettingsBody,
  ListQuery as DocumentListQuery,
  SearchQuery,
} from '../../modules/knowledge/knowledge.schemas.ts'
import { knowledgeDocuments } from '../../modules/knowledge/knowledge.tables.ts'
import { ListQuery as MediaListQuery, UpdateBody as MediaUpdateBody, Usage } from '../../modules/media/media.schemas.ts'
import type { MediaUsage } from '../../modules/media/media.tables.ts'
import { AppError } from '../../platform/http/errors.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule, type ToolContext } from '../tool.ts'
import { paging, Uuid } from './common.ts'

/** The media library and the knowledge documents the built-in AI answers from, with the AI's settings. */

const MediaId = Uuid('the media file id, from list_media or upload_media_from_url')
const DocumentId = Uuid('the knowledge document id, from list_knowledge_documents')

export const listMedia = defineTool({
  name: 'list_media',
  title: 'List media files',
  description:
    'Files of the media library newest first (images, videos, PDF documents), each with its public url to use in templates and newsletters; filter by kind.',
  scope: 'media:read',
  rest: 'GET /media',
  output: out.list_media,
  kind: 'read',
  input: Type.Object({
    kind: Type.Optional(Type.Union([Type.Literal('image'), Type.Literal('video'), Type.Literal('document')])),
    ...paging(100, 25),
  }),
  async run(ctx, args) {
    const query = restRule(MediaListQuery, args, 'query')
    const { items, ...page } = await ctx.services.media.list(ctx.tenant, query)
    return { media: items, ...page }
  },
})

export const getMedia = defineTool({
  name: 'get_media',
  title: 'Get a media file',
  description: 'One media file: kind, usage, public url, type, size, image dimensions and file name.',
  scope: 'media:read',
  rest: 'GET /media/{id}',
  output: out.get_media,
  kind: 'read',
  input: Type.Object({ media_id: MediaId }),
  async run(ctx, args) {
    return { media: await ctx.services.media.get(ctx.tenant, args.media_id) }
  },
})

export const uploadMediaFromUrl = defineTool({
  name: 'upload_media_from_url',
  title: 'Add a media file from a URL',
  description:
    'Download a file from a public https address into the media library (images, videos, PDF; at most 100 MB; private and loopback addresses are refused). The kind comes from the bytes. Returns the file with its public url.',
  scope: 'media:write',
  rest: 'POST /media (url)',
  output: out.upload_media_from_url,
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    url: Type.String({ minLength: 1, maxLength: 2000, description: 'public https address of the file' }),
    usage: Type.Optional(Usage),
  }),
  async run(ctx, args) {
    const usage = args.usage as MediaUsage | undefined
    return { ok: true, media: await ctx.services.media.fromUrl(ctx.tenant, { url: args.url, usage }) }
  },
})

export const deleteMedia = defineTool({
  name: 'delete_media',
  title: 'Delete a media file',
  description:
    'Delete a file from the media library and its storage. A file still used by a template, newsletter or other content is refused (409 media_in_use, naming the users).',
  scope: 'media:write',
  rest: 'DELETE /media/{id}',
  output: out.delete_media,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ media_id: MediaId }),
  async preview(ctx, args) {
    const media = await ctx.services.media.get(ctx.tenant, args.media_id)
    return { action: 'delete a media file permanently', media }
  },
  async run(ctx, args) {
    return await ctx.services.media.remove(ctx.tenant, args.media_id)
  },
})

export const listKnowledgeDocuments = defineTool({
  name: 'list_knowledge_documents',
  title: 'List knowledge documents',
  description:
    'The documents the built-in AI answers customers from, newest first: title, file name, format, size, source and the number of indexed passages.',
  scope: 'knowledge:write',
  rest: 'GET /knowledge/documents',
  output: out.list_knowledge_documents,
  kind: 'read',
  input: Type.Object(paging(100, 25)),
  async run(ctx, args) {
    const query = restRule(DocumentListQuery, args, 'query')
    const { items, ...page } = await ctx.services.knowledge.list(ctx.tenant, query)
    return { documents: items, ...page }
  },
})

export const searchKnowledge = defineTool({
  name: 'search_knowledge',
  title: 'Search the knowledge documents',
  description:
    'Full-text search over the passages of the knowledge documents in the account’s language ("quoted phrases", OR and -word work); the best passages first with a snippet (matches in **bold**). match says whether passages hold every word (all), only some (any) or none.',
  scope: 'knowledge:write',
  rest: 'GET /knowledge/search',
  output: out.search_knowledge,
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
  output: out.add_knowledge_document_from_url,
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
  output: out.add_knowledge_document_from_text,
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

async function knowledgeDocument(ctx: ToolContext, id: string) {
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

export const deleteKnowledgeDocument = defineTool({
  name: 'delete_knowledge_document',
  title: 'Delete a knowledge document',
  description: 'Delete a knowledge document and its passages: the built-in AI no longer answers from it.',
  scope: 'knowledge:write',
  rest: 'DELETE /knowledge/documents/{id}',
  output: out.delete_knowledge_document,
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
  output: out.get_ai_settings,
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
  output: out.update_ai_settings,
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
  output: out.list_ai_replies,
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

export const updateMedia = defineTool({
  name: 'update_media',
  title: 'Rename a media file',
  description:
    'Change a media file’s name in the library (filename with its extension) or its usage; the stored file and its public address stay, so templates and newsletters using it are unaffected.',
  scope: 'media:write',
  rest: 'PATCH /media/{id}',
  output: out.update_media,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    media_id: MediaId,
    filename: MediaUpdateBody.properties.filename,
    usage: Type.Optional(Usage),
  }),
  async run(ctx, args) {
    const { media_id, ...change } = args
    const body = restRule(MediaUpdateBody, change, 'body')
    return {
      media: await ctx.services.media.update(ctx.tenant, media_id, body as { filename?: string; usage?: MediaUsage }),
    }
  },
})

export const listMediaUsages = defineTool({
  name: 'list_media_usages',
  title: 'Where a media file is used',
  description:
    'What refers to a media file by its id or address: templates and newsletters using it as header image, the landing page’s logo. While anything does, delete_media is refused.',
  scope: 'media:read',
  rest: 'GET /media/{id}/usages',
  output: out.list_media_usages,
  kind: 'read',
  input: Type.Object({ media_id: MediaId }),
  async run(ctx, args) {
    return await ctx.services.media.usages(ctx.tenant, args.media_id)
  },
})

export const getKnowledgeDocument = defineTool({
  name: 'get_knowledge_document',
  title: 'Get a knowledge document',
  description:
    'One knowledge document: title, file name, format, source (upload, url with its address, or text), passages, characters and size.',
  scope: 'knowledge:write',
  rest: 'GET /knowledge/documents/{id}',
  output: out.get_knowledge_document,
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
  output: out.rename_knowledge_document,
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
  output: out.refresh_knowledge_document,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({ document_id: DocumentId }),
  async run(ctx, args) {
    return await ctx.services.knowledge.refresh(ctx.tenant, args.document_id)
  },
})

export const libraryTools = [
  listMedia,
  getMedia,
  uploadMediaFromUrl,
  deleteMedia,
  updateMedia,
  listMediaUsages,
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
]
