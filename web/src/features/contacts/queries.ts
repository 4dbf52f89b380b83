import { queryOptions } from '@tanstack/react-query'
import { app, call, v1 } from '../../api/client.ts'

/** Every list of contacts, whatever its search. */
export const contactsKey = ['contacts'] as const

export const contactPickQuery = queryOptions({
  queryKey: ['contacts', 'pick'],
  queryFn: () => call(v1.GET('/v1/contacts', { params: { query: { limit: 100, offset: 0 } } })),
})

export const contactsQuery = (search: string, limit: number) =>
  queryOptions({
    queryKey: ['contacts', search, limit],
    queryFn: () => call(v1.GET('/v1/contacts', { params: { query: { q: search, limit, offset: 0 } } })),
  })

export const contactQuery = (id: string) =>
  queryOptions({
    queryKey: ['contact', id],
    queryFn: () => call(v1.GET('/v1/contacts/{id}', { params: { path: { id } } })),
  })

export const consentHistoryQuery = (id: string) =>
  queryOptions({
    queryKey: ['contact-consent', id],
    queryFn: () => call(app.GET('/app/contacts/{id}/consent-history', { params: { path: { id } } })),
  })

export const contactPreviewQuery = queryOptions({
  queryKey: ['contacts', 'preview'],
  queryFn: () => call(v1.GET('/v1/contacts', { params: { query: { limit: 50, offset: 0 } } })),
})

export const tagsQuery = queryOptions({
  queryKey: ['tags'],
  queryFn: () => call(v1.GET('/v1/contacts/tags')),
})
