import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import {
  Deleted,
  DocumentPage,
  DocumentParams,
  DocumentResponse,
  JsonUploadBody,
  ListQuery,
  MultipartUploadBody,
  SearchQuery,
  SearchResponse,
} from './knowledge.schemas.ts'
import { type DocumentInput, type KnowledgeService, MAX_DOCUMENT_BYTES } from './knowledge.service.ts'

const tags = ['knowledge']
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

export function knowledgeRoutes(service: KnowledgeService) {
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
        bodyLimit: Math.ceil((MAX_DOCUMENT_BYTES * 4) / 3) + 64 * 1024,
        schema: {
          summary: 'Upload a knowledge document',
          description:
            "PDF, DOCX, plain text, Markdown or HTML, in one of three forms: multipart with the field `file`; JSON with `url` (a public https address, downloaded through the SSRF guard); JSON with `data_base64`, `filename` (with extension) and `mime`. The format comes from the content (PDF and DOCX by their signatures), never from the name alone: a mismatch is a 400 (key document_type_mismatch), other files are 400 document_type_unsupported. The text is extracted, split into passages under their headings and indexed for full-text search in the account's language (German or English stemming; headings weigh most). A document without text is a 400 with the reason (key document_no_text, e.g. a scanned PDF without a text layer); a damaged or encrypted file is 400 document_unreadable; more than 20 MB is 400 document_too_large. The spec names no read scope for knowledge: every knowledge route uses knowledge:write.",
          tags,
          consumes: ['application/json', 'multipart/form-data'],
          body: {
            content: {
              'application/json': { schema: JsonUploadBody },
              'multipart/form-data': { schema: MultipartUploadBody },
            },
          },
          response: { 201: DocumentResponse },
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

    app.get<{ Querystring: Static<typeof ListQuery> }>(
      '/knowledge/documents',
      {
        config: { scope: 'knowledge:write' },
        schema: {
          summary: 'List knowledge documents',
          description: 'Newest first.',
          tags,
          querystring: ListQuery,
          response: { 200: DocumentPage },
        },
      },
      async (request) => {
        const { items, ...page } = await service.list(request.tenant, request.query)
        return { documents: items, ...page }
      },
    )

    app.delete<{ Params: Static<typeof DocumentParams> }>(
      '/knowledge/documents/:id',
      {
        config: { scope: 'knowledge:write' },
        schema: {
          summary: 'Delete a knowledge document',
          description: 'Its passages leave the index at once; AI replies keep the passages they quoted.',
          tags,
          params: DocumentParams,
          response: { 200: Deleted },
        },
      },
      async (request) => service.remove(request.tenant, request.params.id),
    )

    app.get<{ Querystring: Static<typeof SearchQuery> }>(
      '/knowledge/search',
      {
        config: { scope: 'knowledge:write' },
        schema: {
          summary: 'Search the knowledge documents',
          description:
            'Ranked passages with their document and position. Passages with every word come first (web search syntax: "phrase", OR, -word); when no passage has them all, passages with any of them (`match: any`).',
          tags,
          querystring: SearchQuery,
          response: { 200: SearchResponse },
        },
      },
      async (request) => service.search(request.tenant, request.query),
    )
  }
}
