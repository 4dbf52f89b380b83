import { Type } from 'typebox'
import { Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { withOk } from '../../platform/tools/outputs.ts'
import { toolsUsing } from '../../platform/tools/tool.ts'
import { askKnowledge, listKnowledgeDocumentPassages } from './knowledge.app.ts'
import * as knowledge from './knowledge.routes.ts'
import { DocumentResponse } from './knowledge.schemas.ts'

// Adding a document is a multipart or JSON upload route (no operation); its tools take a URL or a text.
const DocumentId = Uuid('the knowledge document id, from list_knowledge_documents')
const tool = operationTools<knowledge.KnowledgeServices>({ id: { name: 'document_id', schema: DocumentId } })
const defineTool = toolsUsing<knowledge.KnowledgeServices>()

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

export const knowledgeTools = [
  tool(knowledge.listKnowledgeDocuments, {
    name: 'list_knowledge_documents',
    description:
      'The documents the built-in AI answers customers from, newest first: title, file name, format, size, source and the number of indexed passages.',
  }),
  tool(knowledge.getKnowledgeDocument, {
    name: 'get_knowledge_document',
    title: 'Get a knowledge document',
    description:
      'One knowledge document: title, file name, format, source (upload, url with its address, or text), passages, characters and size.',
  }),
  tool(knowledge.updateKnowledgeDocument, {
    name: 'rename_knowledge_document',
    description:
      'Give a knowledge document a new title (1-300 characters): the built-in AI cites it by this title and search weighs it, so its passages are indexed again at once.',
  }),
  tool(knowledge.refreshKnowledgeDocument, {
    name: 'refresh_knowledge_document',
    title: 'Fetch a knowledge document again',
    description:
      'Download a document that was added from an address again (an updated price list, FAQ page); when its content changed, its text is extracted again and its passages replaced (same id and title), else nothing changes.',
    idempotent: true,
    openWorld: true,
  }),
  tool(knowledge.searchKnowledge, {
    name: 'search_knowledge',
    description:
      'Full-text search over the passages of the knowledge documents in the account’s language ("quoted phrases", OR and -word work); the best passages first with a snippet (matches in **bold**). match says whether passages hold every word (all), only some (any) or none.',
    describe: { q: 'words to find' },
  }),
  addKnowledgeFromUrl,
  addKnowledgeFromText,
  tool(knowledge.deleteKnowledgeDocument, {
    name: 'delete_knowledge_document',
    description: 'Delete a knowledge document and its passages: the built-in AI no longer answers from it.',
    idempotent: true,
    async preview(ctx, { tenant, params }) {
      return {
        action: 'delete a knowledge document and its passages',
        document: await ctx.services.knowledge.summary(tenant, params.id),
      }
    },
  }),
  tool(knowledge.getAiSettings, {
    name: 'get_ai_settings',
    title: 'Get the AI settings',
    description:
      'Whether the built-in AI answers inbound chat messages from the knowledge documents and suggests tags, its per-contact hourly limit, and whether an AI endpoint is configured (and if not, why nothing is called).',
  }),
  tool(knowledge.updateAiSettings, {
    name: 'update_ai_settings',
    title: 'Change the AI settings',
    description:
      'Switch the built-in AI’s replies to customers (replies_enabled) and its tag suggestions (tags_enabled) on or off, and set how many replies one contact can get per hour (1-60).',
    ok: true,
  }),
  tool(knowledge.listAiReplies, {
    name: 'list_ai_replies',
    title: 'List the AI’s replies',
    description:
      'What the built-in AI did with inbound messages, newest first: sent, declined (handed to a person), skipped, failed, with the passages its prompt held; filter by conversation_id or message_id.',
    describe: { conversation_id: 'only this conversation' },
  }),
  tool(listKnowledgeDocumentPassages, {
    name: 'get_knowledge_document_passages',
    title: 'Passages of a knowledge document',
    description:
      'A knowledge document’s passages in order, as the search indexes them and the built-in AI quotes them: position, PDF page, heading and text. Paged (limit 1-200, default 50).',
    schemas: { document_id: Uuid('the document id, from list_knowledge_documents') },
  }),
  tool(askKnowledge, {
    name: 'ask_knowledge_test_question',
    title: 'Ask the AI a test question',
    description:
      'How the built-in AI would answer a customer’s chat question from the knowledge documents, without sending or storing anything: the same five best passages, the same prompt to the configured model, the same strict reading of its answer. Answers outcome (answer or declined), the answer, the reason for a decline (no_passages: no model asked) and the passages with the cited ones marked. Works while AI replies are switched off; 409 ai_unavailable without an AI endpoint, 502 ai_call_failed when the model fails.',
    kind: 'read',
    openWorld: true,
  }),
]
