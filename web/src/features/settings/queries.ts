import { app, v1 } from '../../api/client.ts'
import { apiQuery } from '../../ui/query.ts'

export const channelsQuery = apiQuery(['settings', 'channels'], () => v1.GET('/v1/settings/channels'))

/** the chat number with its pace as it stands (lower after throughput refusals) */
export const chatChannelQuery = apiQuery(['settings', 'chat-channel'], () => app.GET('/app/channels/chat'))

export const coexistenceQuery = apiQuery(['settings', 'coexistence'], () => v1.GET('/v1/settings/coexistence'))

export const consentSettingsQuery = apiQuery(['settings', 'consent'], () => v1.GET('/v1/settings/consent'))

export const followupTimingQuery = apiQuery(['settings', 'followup-timing'], () =>
  v1.GET('/v1/settings/followup-timing'),
)

export const sendingSettingsQuery = apiQuery(['settings', 'sending'], () => v1.GET('/v1/settings/sending'))

export const accountQuery = apiQuery(['settings', 'account'], () => app.GET('/app/account'))
