import { app, v1 } from '../../api/client.ts'
import { apiQuery, firstPage } from '../../ui/query.ts'

/** Every list of contacts, whatever its search. */
export const contactsKey = ['contacts'] as const

export const contactPickQuery = apiQuery(['contacts', 'pick'], () =>
  v1.GET('/v1/contacts', { params: { query: firstPage(100) } }),
)

/** A page of contacts, searched and filtered by custom field (`fields`: the conditions as JSON, '' for none). */
export const contactsQuery = (search: string, limit: number, fields = '') =>
  apiQuery(['contacts', search, limit, fields], () =>
    v1.GET('/v1/contacts', {
      params: { query: { q: search, limit, offset: 0, ...(fields ? { fields } : {}) } },
    }),
  )

export const contactQuery = (id: string) =>
  apiQuery(['contact', id], () => v1.GET('/v1/contacts/{id}', { params: { path: { id } } }))

export const consentHistoryQuery = (id: string) =>
  apiQuery(['contact-consent', id], () => app.GET('/app/contacts/{id}/consent-history', { params: { path: { id } } }))

export const contactPreviewQuery = apiQuery(['contacts', 'preview'], () =>
  v1.GET('/v1/contacts', { params: { query: firstPage(50) } }),
)

export const tagsQuery = apiQuery(['tags'], () => v1.GET('/v1/contacts/tags'))
