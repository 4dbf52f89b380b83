import { app, v1 } from '../../api/client.ts'
import { apiQuery, firstPage } from '../../ui/query.ts'

export const keysQuery = apiQuery(['keys'], () => app.GET('/app/keys'))

export const teamQuery = apiQuery(['team'], () => v1.GET('/v1/team', { params: { query: firstPage(200) } }))
