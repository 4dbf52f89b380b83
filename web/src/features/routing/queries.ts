import { app } from '../../api/client.ts'
import { apiQuery } from '../../ui/query.ts'

export const routingQuery = apiQuery(['inbox', 'routing'], () => app.GET('/app/inbox/routing'))

export const openingStateQuery = apiQuery(['inbox', 'opening-state'], () => app.GET('/app/inbox/opening-state'))

export const availabilityQuery = apiQuery(['inbox', 'availability'], () => app.GET('/app/inbox/availability'))
