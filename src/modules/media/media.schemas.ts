import { Type } from 'typebox'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'
import { MEDIA_USAGES } from './media.tables.ts'

const literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)))

export const Usage = literals(MEDIA_USAGES)

export const UploadJsonBody = Type.Object(
  {
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2000,
        description: 'form 2: public https address of the file (max 100 MB)',
      }),
    ),
    data_base64: Type.Optional(Type.String({ minLength: 1, description: 'form 3: the file, base64' })),
    filename: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 255,
        pattern: '\\.[A-Za-z0-9]+$',
        description: 'form 3, required there: the file name with extension',
      }),
    ),
    mime: Type.Optional(
      Type.String({ minLength: 3, maxLength: 100, description: 'form 3, required there: the claimed type' }),
    ),
    usage: Type.Optional(Usage),
  },
  { additionalProperties: false, description: 'either `url`, or `data_base64` with `filename` and `mime`' },
)

export const MediaItem = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    kind: Type.String({ description: 'image, video or document (PDF), from the bytes, not the name' }),
    usage: Type.String(),
    url: Type.String({ description: 'public address of the file; use it or the id in templates and newsletters' }),
    mime: Type.String(),
    size: Type.Integer({ description: 'bytes' }),
    width: Type.Optional(Type.Integer({ description: 'images only' })),
    height: Type.Optional(Type.Integer({ description: 'images only' })),
    filename: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'MediaItem', title: 'MediaItem' },
)

export const MediaResponse = Type.Object({ media: Type.Ref('MediaItem') })

export const ListQuery = Type.Object(
  {
    kind: Type.Optional(literals(['image', 'video', 'document'] as const)),
    ...paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }),
  },
  { additionalProperties: false },
)

export const MediaPage = pageSchema('media', Type.Ref('MediaItem'))

export const MediaParams = Type.Object({ id: Type.String({ format: 'uuid' }) })

export const Deleted = Type.Object({ ok: Type.Boolean(), id: Type.String() })

export const UpdateBody = Type.Object(
  {
    filename: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 255,
        pattern: '^[^/\\\\]+\\.[A-Za-z0-9]+$',
        description: 'the file name shown in the library, with its extension (no slashes)',
      }),
    ),
    usage: Type.Optional(Usage),
  },
  { additionalProperties: false, description: 'at least one of filename and usage' },
)

export const UsagesResponse = Type.Object({
  media_id: Type.String({ format: 'uuid' }),
  in_use: Type.Boolean({ description: 'true: DELETE /media/{id} is refused (409 media_in_use) while it is used' }),
  used_by: Type.Array(Type.String(), {
    description: 'what refers to it: templates (header image), newsletters (header image), …',
  }),
})
