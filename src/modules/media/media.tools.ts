import { Type } from 'typebox'
import { paging, Uuid } from '../../platform/tools/common.ts'
import { withOk } from '../../platform/tools/outputs.ts'
import { restRule, toolsUsing } from '../../platform/tools/tool.ts'
import {
  Deleted,
  MediaItem,
  ListQuery as MediaListQuery,
  MediaPage,
  MediaResponse,
  UpdateBody as MediaUpdateBody,
  Usage,
  UsagesResponse,
} from './media.schemas.ts'
import type { MediaService } from './media.service.ts'
import type { MediaUsage } from './media.tables.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  media: MediaService
}

// the schemas its routes register (app.addSchema), named with Type.Ref in the outputs
const defineTool = toolsUsing<Services>([MediaItem])

const MediaId = Uuid('the media file id, from list_media or upload_media_from_url')

export const listMedia = defineTool({
  name: 'list_media',
  title: 'List media files',
  description:
    'Files of the media library newest first (images, videos, PDF documents), each with its public url to use in templates and newsletters; filter by kind.',
  scope: 'media:read',
  rest: 'GET /media',
  output: MediaPage,
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
  output: MediaResponse,
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
  output: withOk(MediaResponse),
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
  output: Deleted,
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

export const updateMedia = defineTool({
  name: 'update_media',
  title: 'Rename a media file',
  description:
    'Change a media file’s name in the library (filename with its extension) or its usage; the stored file and its public address stay, so templates and newsletters using it are unaffected.',
  scope: 'media:write',
  rest: 'PATCH /media/{id}',
  output: MediaResponse,
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
  output: UsagesResponse,
  kind: 'read',
  input: Type.Object({ media_id: MediaId }),
  async run(ctx, args) {
    return await ctx.services.media.usages(ctx.tenant, args.media_id)
  },
})

/** In the order the tool server lists them. */
export const mediaTools = [listMedia, getMedia, uploadMediaFromUrl, deleteMedia, updateMedia, listMediaUsages]
