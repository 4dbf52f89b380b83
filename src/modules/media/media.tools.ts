import { Type } from 'typebox'
import { Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { withOk } from '../../platform/tools/outputs.ts'
import { toolsUsing } from '../../platform/tools/tool.ts'
import { deleteMedia, getMedia, listMedia, listMediaUsages, type MediaServices, updateMedia } from './media.routes.ts'
import { MediaItem, MediaResponse, Usage } from './media.schemas.ts'
import type { MediaUsage } from './media.tables.ts'

// The schemas its routes register (app.addSchema) are named with Type.Ref in the outputs.
const MediaId = Uuid('the media file id, from list_media or upload_media_from_url')
const tool = operationTools<MediaServices>({ references: [MediaItem], id: { name: 'media_id', schema: MediaId } })
const defineTool = toolsUsing<MediaServices>([MediaItem])

// POST /media reads multipart or a large JSON body itself (no operation): this tool takes the URL form only
const uploadMediaFromUrl = defineTool({
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

export const mediaTools = [
  tool(listMedia, {
    name: 'list_media',
    title: 'List media files',
    description:
      'Files of the media library newest first (images, videos, PDF documents), each with its public url to use in templates and newsletters; filter by kind.',
  }),
  tool(getMedia, {
    name: 'get_media',
    title: 'Get a media file',
    description: 'One media file: kind, usage, public url, type, size, image dimensions and file name.',
  }),
  uploadMediaFromUrl,
  tool(deleteMedia, {
    name: 'delete_media',
    description:
      'Delete a file from the media library and its storage. A file still used by a template, newsletter or other content is refused (409 media_in_use, naming the users).',
    idempotent: true,
    async preview(ctx, { tenant, params }) {
      const media = await ctx.services.media.get(tenant, params.id)
      return { action: 'delete a media file permanently', media }
    },
  }),
  tool(updateMedia, {
    name: 'update_media',
    title: 'Rename a media file',
    description:
      'Change a media file’s name in the library (filename with its extension) or its usage; the stored file and its public address stay, so templates and newsletters using it are unaffected.',
  }),
  tool(listMediaUsages, {
    name: 'list_media_usages',
    description:
      'What refers to a media file by its id or address: templates and newsletters using it as header image, the landing page’s logo. While anything does, delete_media is refused.',
  }),
]
