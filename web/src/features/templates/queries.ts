import { v1 } from '../../api/client.ts'
import { apiQuery, firstPage } from '../../ui/query.ts'

/** Every list of templates, whatever its filter. */
export const templatesKey = ['templates'] as const

export const templatePickQuery = apiQuery(['templates', 'chat'], () =>
  v1.GET('/v1/templates', { params: { query: firstPage(100) as never } }),
)

export const sendableTemplatesQuery = apiQuery(['templates', 'sendable'], () =>
  v1.GET('/v1/templates', { params: { query: { sendable: true, channel: 'chat', limit: 200, offset: 0 } } }),
)

export const templatesQuery = apiQuery(['templates', 'all'], () =>
  v1.GET('/v1/templates', { params: { query: firstPage(200) } }),
)

export const templateQuery = (id: string) =>
  apiQuery(['template', id], () => v1.GET('/v1/templates/{id}', { params: { path: { id } } }))
