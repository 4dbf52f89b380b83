import { v1 } from '../../api/client.ts'
import { type Answer, apiQuery } from '../../ui/query.ts'

/** Every list of the media library, whatever its filter. */
export const mediaKey = ['media'] as const
export const mediaQuery = (kind: '' | 'image' | 'video' | 'document') =>
  apiQuery(['media', kind], () =>
    v1.GET('/v1/media', { params: { query: { limit: 100, offset: 0, ...(kind ? { kind } : {}) } } }),
  )

export const imagesQuery = apiQuery(['media', 'image'], () =>
  v1.GET('/v1/media', { params: { query: { limit: 100, offset: 0, kind: 'image' } } }),
)

/** An item of the media library, as GET /v1/media lists it. */
export type MediaItem = Answer<ReturnType<typeof mediaQuery>>['media'][number]
