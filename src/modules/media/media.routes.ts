import multipart from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { Value } from 'typebox/value'
import { installBase64JsonParser, liftedBase64 } from '../../platform/http/base64-body.ts'
import { bodyBudgetError, largeBodies } from '../../platform/http/body-budget.ts'
import { badRequest, errorResponses } from '../../platform/http/errors.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import { unknownFieldsMessage } from '../../platform/http/strict-input.ts'
import { MAX_UPLOAD_BYTES } from './media.rules.ts'
import {
  Deleted,
  ListQuery,
  MediaItem,
  MediaPage,
  MediaParams,
  MediaResponse,
  UpdateBody,
  UploadJsonBody,
  Usage,
  UsagesResponse,
} from './media.schemas.ts'
import type { MediaService, Staged } from './media.service.ts'
import type { MediaUsage } from './media.tables.ts'

const tags = ['media']
// base64 is a third larger than the bytes it carries
const JSON_BODY_LIMIT = Math.ceil((MAX_UPLOAD_BYTES * 4) / 3) + 64 * 1024

const uploadDescription = [
  'Three forms. (1) multipart/form-data with a `file` part and an optional `usage` field. (2) JSON `{url, usage?}`:',
  'a public https address, downloaded by Herold (redirects followed, every hop checked against private and loopback',
  'addresses; at most 100 MB, streamed to storage). (3) JSON `{data_base64, filename, mime, usage?}` (filename with',
  'extension). The kind is read from the bytes (magic numbers), never from the name or claimed type: `image` (JPEG,',
  'PNG; at most 5 MB), `video` (MP4, 3GP; 16 MB), `document` (PDF; 100 MB): WhatsApp’s limits per kind. 400 with key',
  '`media_type_unsupported`, `media_type_mismatch` (the bytes disagree with the claimed mime, the part’s Content-Type',
  'or the file name’s extension), `media_too_large`, `media_empty`, `media_invalid`, `media_url_invalid`,',
  '`media_url_blocked` (a private or loopback address) or `media_download_failed`; nothing is stored then.',
  'A JSON body is read as bytes and its base64 decoded from them, and large bodies share a budget of 192 MB in flight',
  'per server: over it, 429 rate_limited (key `uploads_in_flight`) with Retry-After before the body is read.',
  '`usage` defaults to `generic`. 200 with `{media: {id, kind, usage, url, mime, size, width, height (images),',
  'filename, created_at}}`.',
].join(' ')

/** The services the media operations call. */
export interface MediaServices {
  media: MediaService
}

const operation = operationsUsing<MediaServices>()

export const listMedia = operation({
  method: 'GET',
  path: '/media',
  scope: 'media:read',
  operationId: 'listMedia',
  summary: 'List the media library',
  description: 'Newest first; `kind` filters (image, video, document).',
  tags,
  query: ListQuery,
  response: MediaPage,
  handle: async ({ media }, { tenant, query }) => namedPage('media', await media.list(tenant, query)),
})

export const getMedia = operation({
  method: 'GET',
  path: '/media/{id}',
  scope: 'media:read',
  operationId: 'getMedia',
  summary: 'A media file',
  tags,
  params: MediaParams,
  response: MediaResponse,
  handle: async ({ media }, { tenant, params }) => ({ media: await media.get(tenant, params.id) }),
})

export const updateMedia = operation({
  method: 'PATCH',
  path: '/media/{id}',
  scope: 'media:write',
  operationId: 'updateMedia',
  summary: 'Rename a media file or change its usage',
  description:
    '`filename` (with its extension, shown in the library) and `usage`; at least one. The stored bytes and the public address do not change, so templates and newsletters that use it are unaffected.',
  tags,
  params: MediaParams,
  body: UpdateBody,
  response: MediaResponse,
  errors: { 400: 'bad_request: neither filename nor usage given' },
  handle: async ({ media }, { tenant, params, body }) => ({ media: await media.update(tenant, params.id, body) }),
})

export const listMediaUsages = operation({
  method: 'GET',
  path: '/media/{id}/usages',
  scope: 'media:read',
  operationId: 'listMediaUsages',
  summary: 'Where a media file is used',
  description:
    'What refers to it by its media_id or its address: templates and newsletters (header image), the landing page (logo). While anything does, DELETE /media/{id} is a 409.',
  tags,
  params: MediaParams,
  response: UsagesResponse,
  handle: ({ media }, { tenant, params }) => media.usages(tenant, params.id),
})

export const deleteMedia = operation({
  method: 'DELETE',
  path: '/media/{id}',
  scope: 'media:write',
  operationId: 'deleteMedia',
  summary: 'Delete a media file',
  description:
    '409 media_in_use (with `used_by`) while a template’s or a newsletter’s header image refers to it (by its media_id or its url) or it is the landing page’s logo; the row goes, then the stored bytes.',
  tags,
  params: MediaParams,
  response: Deleted,
  errors: { 409: 'media_in_use (with uses): a template, newsletter or setting still uses the file' },
  handle: ({ media }, { tenant, params }) => media.remove(tenant, params.id),
})

/** The media library's operations besides the upload (which reads multipart or a large JSON body itself). */
export const mediaOperations = [listMedia, getMedia, updateMedia, listMediaUsages, deleteMedia]

export function mediaRoutes(service: MediaService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.addSchema(MediaItem)
    // data_base64 is decoded from the body's bytes, not parsed into a string first (platform/http/base64-body.ts)
    installBase64JsonParser(app, { field: 'data_base64', invalidKey: 'media_base64_invalid' })
    await app.register(multipart, {
      // one byte over the largest allowed size, so the size check sees it and answers with its own reason
      limits: { fileSize: MAX_UPLOAD_BYTES + 1, files: 1, fields: 5, parts: 8 },
    })

    app.post(
      '/media',
      {
        config: { scope: 'media:write' },
        bodyLimit: JSON_BODY_LIMIT,
        // JSON bodies count against the process's budget of large bodies in flight; multipart is streamed to storage
        onRequest: largeBodies.hook(JSON_BODY_LIMIT, (request) => request.isMultipart()),
        schema: {
          operationId: 'uploadMedia',
          summary: 'Upload a file to the media library',
          description: uploadDescription,
          tags,
          consumes: ['application/json', 'multipart/form-data'],
          // multipart (form 1) is read as a stream in the handler and described above, not validated by a schema
          body: { content: { 'application/json': { schema: UploadJsonBody } } },
          response: {
            ...errorResponses({
              400: 'bad_request: not exactly one file, url or data_base64, or data_base64 without filename and mime; media_empty; media_invalid: the file cannot be read as its type; media_type_unsupported; media_type_mismatch: the content is another type than the name or mime says; media_too_large; media_url_invalid; media_url_blocked; media_download_failed; media_base64_invalid: data_base64 is not base64',
              429: bodyBudgetError,
            }),
            200: MediaResponse,
          },
        },
      },
      async (request) => {
        if (request.isMultipart()) return { media: await multipartUpload(service, request) }
        const body = (request.body ?? {}) as Static<typeof UploadJsonBody>
        const { url, data_base64, filename, mime, usage } = body
        if (url !== undefined && data_base64 === undefined && filename === undefined && mime === undefined) {
          return { media: await service.fromUrl(request.tenant, { url, usage }) }
        }
        if (data_base64 !== undefined && url === undefined) {
          if (filename === undefined || mime === undefined) {
            throw badRequest('data_base64 needs filename (with extension) and mime')
          }
          const data = liftedBase64(request)
          if (data) return { media: await service.fromBytes(request.tenant, { data, filename, mime, usage }) }
          return { media: await service.fromBase64(request.tenant, { data_base64, filename, mime, usage }) }
        }
        throw badRequest(
          'Send multipart/form-data with a file, or JSON with url, or with data_base64, filename and mime',
        )
      },
    )

    mountOperations(app, { media: service }, mediaOperations)
  }
}

async function multipartUpload(service: MediaService, request: FastifyRequest) {
  let staged: Staged | null = null
  let filename: string | null = null
  let usage: unknown
  const unknown: string[] = []
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || staged) {
          part.file.resume()
          throw badRequest('Send exactly one file, in the part named `file`')
        }
        filename = part.filename || null
        staged = await service.stage(part.file, { mime: part.mimetype, filename })
      } else if (part.fieldname === 'usage') {
        usage = part.value
      } else {
        unknown.push(part.fieldname)
      }
    }
  } catch (error) {
    if (staged) await service.discard(staged)
    throw error
  }
  // strict input: a form field other than file and usage is refused by name, as a JSON field is
  if (unknown.length > 0) {
    if (staged) await service.discard(staged)
    throw badRequest(unknownFieldsMessage('body', unknown), 'bad_request', { unknown_fields: unknown })
  }
  if (!staged) throw badRequest('The multipart body has no `file` part')
  if (usage !== undefined && !Value.Check(Usage, usage)) {
    await service.discard(staged)
    throw badRequest('usage must be one of generic, landing, newsletter, template, logo, avatar, blog')
  }
  return service.commit(request.tenant, staged, { usage: usage as MediaUsage | undefined, filename, source: 'file' })
}
