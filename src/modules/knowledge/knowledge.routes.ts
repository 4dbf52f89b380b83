import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { bodyBudgetError, largeBodies } from '../../platform/http/body-budget.ts'
import { badRequest, errorResponses } from '../../platform/http/errors.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import { unknownFieldsMessage } from '../../platform/http/strict-input.ts'
import type { AiService } from './knowledge.ai.ts'
import {
  AiReplyPage,
  AiReplyQuery,
  AiSettings,
  AiSettingsBody,
  Deleted,
  DocumentPage,
  DocumentParams,
  DocumentResponse,
  JsonUploadBody,
  ListQuery,
  MultipartUploadBody,
  RefreshResponse,
  RenameBody,
  SearchQuery,
  SearchResponse,
} from './knowledge.schemas.ts'
import { type DocumentInput, type KnowledgeService, MAX_DOCUMENT_BYTES } from './knowledge.service.ts'

const tags = ['knowledge']
/** The services the knowledge's operations call. */
export interface KnowledgeServices {
  knowledge: KnowledgeService
  ai: AiService
}

const operation = operationsUsing<KnowledgeServices>()
const DOCUMENT_BODY_LIMIT = Math.ceil((MAX_DOCUMENT_BYTES * 4) / 3) + 64 * 1024
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** The multipart form: the one file in `file`, read up to the size limit (a larger one is refused, not cut). */
async function multipartInput(request: FastifyRequest): Promise<DocumentInput> {
  let part: Awaited<ReturnType<FastifyRequest['file']>>
  try {
    part = await request.file({ limits: { fileSize: MAX_DOCUMENT_BYTES, files: 1, fields: 10 } })
  } catch (error) {
    throw badRequest(`The multipart body cannot be read: ${(error as Error).message}`)
  }
  if (part?.fieldname !== 'file') throw badRequest('Send the document in the multipart field `file`', 'file_required')
  // strict input: a form field before the file other than `file` is refused by name, as a JSON field is
  const unknown = Object.keys(part.fields).filter((name) => name !== 'file')
  if (unknown.length > 0) {
    part.file.resume()
    throw badRequest(unknownFieldsMessage('body', unknown), 'bad_request', { unknown_fields: unknown })
  }
  const data = await part.toBuffer().catch((error: Error & { code?: string }) => {
    if (error.code === 'FST_REQ_FILE_TOO_LARGE') {
      throw badRequest(`A document may be at most ${MAX_DOCUMENT_BYTES / 1024 / 1024} MB`, 'document_too_large')
    }
    throw badRequest(`The multipart body cannot be read: ${error.message}`)
  })
  return { data, filename: part.filename || 'document', mime: part.mimetype ?? '', source: 'upload' }
}

function base64Input(body: Static<typeof JsonUploadBody>): DocumentInput {
  const encoded = (body.data_base64 ?? '').replace(/\s+/g, '')
  if (!BASE64.test(encoded)) throw badRequest('data_base64 is not valid base64', 'data_base64_invalid')
  if (!body.filename || !/\.[A-Za-z0-9]{1,10}$/.test(body.filename)) {
    throw badRequest('filename (with its extension) is required with data_base64', 'filename_required')
  }
  return { data: Buffer.from(encoded, 'base64'), filename: body.filename, mime: body.mime ?? '', source: 'base64' }
}

export function knowledgeRoutes(services: KnowledgeServices) {
  const service = services.knowledge
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(multipart, { limits: { fileSize: MAX_DOCUMENT_BYTES, files: 1 } })

    app.post<{ Body: Static<typeof JsonUploadBody> | undefined }>(
      '/knowledge/documents',
      {
        config: { scope: 'knowledge:write' },
        // the file is streamed in the handler; validation only sees an empty object for a multipart request
        preValidation: async (request) => {
          if (request.isMultipart()) request.body = {}
        },
        // base64 of a 20 MB file, with room for the JSON around it
        bodyLimit: DOCUMENT_BODY_LIMIT,
        // the body counts against the process's budget of large bodies in flight
        onRequest: largeBodies.hook(DOCUMENT_BODY_LIMIT),
        schema: {
          operationId: 'uploadKnowledgeDocument',
          summary: 'Upload a knowledge document',
          description:
            "PDF, DOCX, plain text, Markdown or HTML, in one of three forms: multipart with the field `file`; JSON with `url` (a public https address, downloaded through the SSRF guard); JSON with `data_base64`, `filename` (with extension) and `mime`. The format comes from the content (PDF and DOCX by their signatures), never from the name alone: a mismatch is a 400 (key document_type_mismatch), other files are 400 document_type_unsupported. The text is extracted, split into passages under their headings and indexed for full-text search in the account's language (German or English stemming; headings weigh most). A document without text is a 400 with the reason (key document_no_text, e.g. a scanned PDF without a text layer); a damaged or encrypted file is 400 document_unreadable; more than 20 MB is 400 document_too_large. Reading is bounded: a PDF of more than 500 pages is 400 document_too_many_pages (with `pages` and `max_pages`); a DOCX whose parts inflate to more than 100 MB, one part more than 100 times its compressed size, or more than 5,000 parts, and any document whose reading needs more than 192 MB of memory or 30 s, is 400 document_too_complex (with `limit`: inflated_size, ratio, entries, memory or time). Text is extracted on a worker thread, never on the server's event loop. Large bodies share a budget of 192 MB in flight per server: over it, 429 rate_limited (key uploads_in_flight) with Retry-After, before the body is read. The spec names no read scope for knowledge: every knowledge route uses knowledge:write.",
          tags,
          consumes: ['application/json', 'multipart/form-data'],
          body: {
            content: {
              'application/json': { schema: JsonUploadBody },
              'multipart/form-data': { schema: MultipartUploadBody },
            },
          },
          response: {
            ...errorResponses({
              400: 'document_form: not exactly one of url, data_base64 or a multipart file; file_required: no multipart field `file`; data_base64_invalid; filename_required: data_base64 without filename; document_url_invalid: url is not a public https address; document_url_blocked; document_download_failed; document_too_large; document_type_unsupported; document_type_mismatch: the content is another format than the name or type says; document_unreadable; document_no_text: the document holds no text; document_too_many_pages: a PDF of more than 500 pages; document_too_complex: a DOCX over the archive limits, or reading over the memory or time limit',
              429: bodyBudgetError,
            }),
            201: DocumentResponse,
          },
        },
      },
      async (request, reply) => {
        let input: DocumentInput
        if (request.isMultipart()) input = await multipartInput(request)
        else {
          const body = request.body ?? {}
          if ((body.url === undefined) === (body.data_base64 === undefined)) {
            throw badRequest('Send exactly one of url, data_base64 or a multipart file', 'document_form')
          }
          input = body.url !== undefined ? await service.download(body.url) : base64Input(body)
        }
        reply.code(201)
        return { document: await service.add(request.tenant, input) }
      },
    )

    mountOperations(app, services, [
      listKnowledgeDocuments,
      getKnowledgeDocument,
      updateKnowledgeDocument,
      refreshKnowledgeDocument,
      deleteKnowledgeDocument,
      searchKnowledge,
    ])
  }
}

export const listKnowledgeDocuments = operation({
  method: 'GET',
  path: '/knowledge/documents',
  scope: 'knowledge:write',
  operationId: 'listKnowledgeDocuments',
  summary: 'List knowledge documents',
  description: 'Newest first.',
  tags,
  query: ListQuery,
  response: DocumentPage,
  handle: async ({ knowledge }, { tenant, query }) => namedPage('documents', await knowledge.list(tenant, query)),
})

export const getKnowledgeDocument = operation({
  method: 'GET',
  path: '/knowledge/documents/{id}',
  scope: 'knowledge:write',
  operationId: 'getKnowledgeDocument',
  summary: 'A knowledge document',
  description: 'Its title, file, format, source (and address), passages and size.',
  tags,
  params: DocumentParams,
  response: DocumentResponse,
  async handle({ knowledge }, { tenant, params }) {
    return { document: await knowledge.get(tenant, params.id) }
  },
})

export const updateKnowledgeDocument = operation({
  method: 'PATCH',
  path: '/knowledge/documents/{id}',
  scope: 'knowledge:write',
  operationId: 'updateKnowledgeDocument',
  summary: 'Rename a knowledge document',
  description:
    'A new `title` (1-300): the AI cites the document by it and search weighs it, so its passages are indexed again with it at once.',
  tags,
  params: DocumentParams,
  body: RenameBody,
  response: DocumentResponse,
  errors: { 400: 'bad_request: title of the wrong length' },
  async handle({ knowledge }, { tenant, params, body }) {
    return { document: await knowledge.rename(tenant, params.id, body.title) }
  },
})

export const refreshKnowledgeDocument = operation({
  method: 'POST',
  path: '/knowledge/documents/{id}/refresh',
  scope: 'knowledge:write',
  operationId: 'refreshKnowledgeDocument',
  summary: 'Fetch a document from its address again',
  description:
    'Only for a document added with `url` (else 400 document_not_from_url). It is downloaded through the SSRF guard as on upload; when the bytes changed, the text is extracted again and the passages replaced in one commit (same id and title), else nothing changes (`changed: false`). Download and format errors as on upload.',
  tags,
  params: DocumentParams,
  response: RefreshResponse,
  errors: {
    400: 'document_not_from_url: only a document added from an address can be fetched again; document_url_blocked; document_download_failed; document_too_large; document_type_unsupported; document_type_mismatch; document_unreadable; document_no_text',
  },
  async handle({ knowledge }, { tenant, params }) {
    return knowledge.refresh(tenant, params.id)
  },
})

export const deleteKnowledgeDocument = operation({
  method: 'DELETE',
  path: '/knowledge/documents/{id}',
  scope: 'knowledge:write',
  operationId: 'deleteKnowledgeDocument',
  summary: 'Delete a knowledge document',
  description: 'Its passages leave the index at once; AI replies keep the passages they quoted.',
  tags,
  params: DocumentParams,
  response: Deleted,
  async handle({ knowledge }, { tenant, params }) {
    return knowledge.remove(tenant, params.id)
  },
})

export const searchKnowledge = operation({
  method: 'GET',
  path: '/knowledge/search',
  scope: 'knowledge:write',
  operationId: 'searchKnowledge',
  summary: 'Search the knowledge documents',
  description:
    'Ranked passages with their document and position. Passages with every word come first (web search syntax: "phrase", OR, -word); when no passage has them all, passages with any of them (`match: any`).',
  tags,
  query: SearchQuery,
  response: SearchResponse,
  errors: {
    400: 'q_required: q is empty; q_invalid: the database cannot build a search from q (too many operators)',
  },
  async handle({ knowledge }, { tenant, query }) {
    return knowledge.search(tenant, query)
  },
})

export const getAiSettings = operation({
  method: 'GET',
  path: '/settings/ai',
  scope: 'settings:read',
  operationId: 'getAiSettings',
  summary: 'The built-in AI of the account',
  description:
    'Off by default. `available` says whether this installation has an AI endpoint (HEROLD_AI_URL and HEROLD_AI_MODEL, any OpenAI-compatible chat-completions server); `active` whether anything is sent to it for this account; `reason` says why not. The key is never shown.',
  tags: ['settings'],
  response: AiSettings,
  async handle({ ai }, { tenant }) {
    return ai.settings(tenant.accountId)
  },
})

export const updateAiSettings = operation({
  method: 'PATCH',
  path: '/settings/ai',
  scope: 'settings:write',
  operationId: 'updateAiSettings',
  summary: 'Switch AI replies and AI tags on or off',
  description:
    "replies_enabled: an inbound chat text inside the 24-hour window that is not a consent keyword gets a reply written only from the best knowledge passages, sent as a message with `ai: true`; when the passages do not answer it, nothing is sent and the conversation is marked `needs_person`. Never to an opted-out contact; at most replies_per_contact_per_hour replies per contact (default 5). tags_enabled: tags for inbound messages chosen from the account's existing tags, stored with origin `ki`. Switching on without a configured endpoint is stored, and nothing is called (see `reason`).",
  tags: ['settings'],
  body: AiSettingsBody,
  response: AiSettings,
  async handle({ ai }, { tenant, body }) {
    return ai.updateSettings(tenant.accountId, body)
  },
})

export const listAiReplies = operation({
  method: 'GET',
  path: '/knowledge/ai-replies',
  scope: 'inbox:read',
  operationId: 'listAiReplies',
  summary: "What the built-in AI did with inbound messages, with its prompt's passages",
  description:
    'Newest first; filter by conversation_id, or message_id (the inbound message or the reply). state: sent (message_id is the reply, ai: true), declined (the passages did not answer it; the conversation is marked for a person), skipped (opted out, window closed, rate limited, quota used up, sending impossible), failed (the provider refused), interrupted (a worker stopped during the send), pending, sending. `passages` are the passages the prompt held, as they read then.',
  tags: ['knowledge'],
  query: AiReplyQuery,
  response: AiReplyPage,
  handle: async ({ ai }, { tenant, query }) => namedPage('ai_replies', await ai.listReplies(tenant, query)),
})

export function aiRoutes(services: KnowledgeServices) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, services, [getAiSettings, updateAiSettings, listAiReplies])
  }
}
