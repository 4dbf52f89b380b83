import { app } from '../../api/client.ts'
import { type Answer, apiQuery } from '../../ui/query.ts'

/** Every saved reply of the account (at most 500), by code: the settings list and the reply box's picker. */
export const savedRepliesQuery = apiQuery(['saved-replies'], () =>
  app.GET('/app/saved-replies', { params: { query: {} } }),
)

export type SavedReplyItem = Answer<typeof savedRepliesQuery>['saved_replies'][number]
