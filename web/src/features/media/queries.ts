import { queryOptions } from '@tanstack/react-query'
import { app, call, v1 } from '../../api/client.ts'

/** Every list of the media library, whatever its filter. */
export const mediaKey = ['media'] as const
/** Every knowledge search, whatever its words. */
export const knowledgeSearchKey = ['knowledge-search'] as const

export const mediaQuery = (kind: '' | 'image' | 'video' | 'document') =>
  queryOptions({
    queryKey: ['media', kind],
    queryFn: () =>
      call(v1.GET('/v1/media', { params: { query: { limit: 100, offset: 0, ...(kind ? { kind } : {}) } } })),
  })

export const passagesQuery = (id: string, limit: number) =>
  queryOptions({
    queryKey: ['passages', id, limit],
    queryFn: () =>
      call(
        app.GET('/app/knowledge/documents/{id}/passages', { params: { path: { id }, query: { limit, offset: 0 } } }),
      ),
  })

export const knowledgeSearchQuery = (search: string, limit: number) =>
  queryOptions({
    queryKey: ['knowledge-search', search, limit],
    queryFn: () => call(v1.GET('/v1/knowledge/search', { params: { query: { q: search, limit } } })),
  })

export const aiSettingsQuery = queryOptions({
  queryKey: ['ai-settings'],
  queryFn: () => call(v1.GET('/v1/settings/ai')),
})

export const knowledgeDocumentsQuery = queryOptions({
  queryKey: ['knowledge-documents'],
  queryFn: () => call(v1.GET('/v1/knowledge/documents', { params: { query: { limit: 100, offset: 0 } } })),
})

export const imagesQuery = queryOptions({
  queryKey: ['media', 'image'],
  queryFn: () => call(v1.GET('/v1/media', { params: { query: { limit: 100, offset: 0, kind: 'image' } } })),
})
