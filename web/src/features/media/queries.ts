import { app, v1 } from '../../api/client.ts'
import { type Answer, apiQuery, firstPage } from '../../ui/query.ts'

/** Every list of the media library, whatever its filter. */
export const mediaKey = ['media'] as const
/** Every knowledge search, whatever its words. */
export const knowledgeSearchKey = ['knowledge-search'] as const

export const mediaQuery = (kind: '' | 'image' | 'video' | 'document') =>
  apiQuery(['media', kind], () =>
    v1.GET('/v1/media', { params: { query: { limit: 100, offset: 0, ...(kind ? { kind } : {}) } } }),
  )

export const passagesQuery = (id: string, limit: number) =>
  apiQuery(['passages', id, limit], () =>
    app.GET('/app/knowledge/documents/{id}/passages', { params: { path: { id }, query: { limit, offset: 0 } } }),
  )

export const knowledgeSearchQuery = (search: string, limit: number) =>
  apiQuery(['knowledge-search', search, limit], () =>
    v1.GET('/v1/knowledge/search', { params: { query: { q: search, limit } } }),
  )

export const aiSettingsQuery = apiQuery(['ai-settings'], () => v1.GET('/v1/settings/ai'))

export const knowledgeDocumentsQuery = apiQuery(['knowledge-documents'], () =>
  v1.GET('/v1/knowledge/documents', { params: { query: firstPage(100) } }),
)

export const imagesQuery = apiQuery(['media', 'image'], () =>
  v1.GET('/v1/media', { params: { query: { limit: 100, offset: 0, kind: 'image' } } }),
)

/** An item of the media library, as GET /v1/media lists it. */
export type MediaItem = Answer<ReturnType<typeof mediaQuery>>['media'][number]
/** A document of the knowledge, as GET /v1/knowledge/documents lists it. */
export type DocumentItem = Answer<typeof knowledgeDocumentsQuery>['documents'][number]
