import { app, v1 } from '../../api/client.ts'
import { type Answer, apiQuery, firstPage } from '../../ui/query.ts'

/** Every knowledge search, whatever its words. */
export const knowledgeSearchKey = ['knowledge-search'] as const

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

/** A document of the knowledge, as GET /v1/knowledge/documents lists it. */
export type DocumentItem = Answer<typeof knowledgeDocumentsQuery>['documents'][number]
