import { app, v1 } from '../../api/client.ts'
import { apiQuery, firstPage } from '../../ui/query.ts'

/** Every list of contacts, whatever its search. */
export const contactsKey = ['contacts'] as const

export const contactPickQuery = apiQuery(['contacts', 'pick'], () =>
  v1.GET('/v1/contacts', { params: { query: firstPage(100) } }),
)

export const contactsQuery = (search: string, limit: number) =>
  apiQuery(['contacts', search, limit], () =>
    v1.GET('/v1/contacts', { params: { query: { q: search, limit, offset: 0 } } }),
  )

export const contactQuery = (id: string) =>
  apiQuery(['contact', id], () => v1.GET('/v1/contacts/{id}', { params: { path: { id } } }))

export const consentHistoryQuery = (id: string) =>
  apiQuery(['contact-consent', id], () => app.GET('/app/contacts/{id}/consent-history', { params: { path: { id } } }))

export const contactPreviewQuery = apiQuery(['contacts', 'preview'], () =>
  v1.GET('/v1/contacts', { params: { query: firstPage(50) } }),
)

export const tagsQuery = apiQuery(['tags'], () => v1.GET('/v1/contacts/tags'))
