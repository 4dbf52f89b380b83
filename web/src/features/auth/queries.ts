import { app } from '../../api/client.ts'
import { apiQuery } from '../../ui/query.ts'

export const setupLinkQuery = (token: string) =>
  apiQuery(['setup', token], () => app.GET('/app/setup/{token}', { params: { path: { token } } }))

export const invitationQuery = (token: string) =>
  apiQuery(['invitation', token], () => app.GET('/app/invitations/{token}', { params: { path: { token } } }))
