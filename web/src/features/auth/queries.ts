import { queryOptions } from '@tanstack/react-query'
import { app, call } from '../../api/client.ts'

export const setupLinkQuery = (token: string) =>
  queryOptions({
    queryKey: ['setup', token],
    queryFn: () => call(app.GET('/app/setup/{token}', { params: { path: { token } } })),
  })

export const invitationQuery = (token: string) =>
  queryOptions({
    queryKey: ['invitation', token],
    queryFn: () => call(app.GET('/app/invitations/{token}', { params: { path: { token } } })),
  })
