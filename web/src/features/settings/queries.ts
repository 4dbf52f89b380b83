import { queryOptions } from '@tanstack/react-query'
import { call, v1 } from '../../api/client.ts'

export const channelsQuery = queryOptions({
  queryKey: ['settings', 'channels'],
  queryFn: () => call(v1.GET('/v1/settings/channels')),
})

export const coexistenceQuery = queryOptions({
  queryKey: ['settings', 'coexistence'],
  queryFn: () => call(v1.GET('/v1/settings/coexistence')),
})

export const consentSettingsQuery = queryOptions({
  queryKey: ['settings', 'consent'],
  queryFn: () => call(v1.GET('/v1/settings/consent')),
})

export const followupTimingQuery = queryOptions({
  queryKey: ['settings', 'followup-timing'],
  queryFn: () => call(v1.GET('/v1/settings/followup-timing')),
})
