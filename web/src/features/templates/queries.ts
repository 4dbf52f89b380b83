import { queryOptions } from '@tanstack/react-query'
import { call, v1 } from '../../api/client.ts'

/** Every list of templates, whatever its filter. */
export const templatesKey = ['templates'] as const

export const templatePickQuery = queryOptions({
  queryKey: ['templates', 'chat'],
  queryFn: () => call(v1.GET('/v1/templates', { params: { query: { limit: 100, offset: 0 } as never } })),
})

export const sendableTemplatesQuery = queryOptions({
  queryKey: ['templates', 'sendable'],
  queryFn: () =>
    call(v1.GET('/v1/templates', { params: { query: { sendable: true, channel: 'chat', limit: 200, offset: 0 } } })),
})

export const templatesQuery = queryOptions({
  queryKey: ['templates', 'all'],
  queryFn: () => call(v1.GET('/v1/templates', { params: { query: { limit: 200, offset: 0 } } })),
})

export const templateQuery = (id: string) =>
  queryOptions({
    queryKey: ['template', id],
    queryFn: () => call(v1.GET('/v1/templates/{id}', { params: { path: { id } } })),
  })
