import { sql } from 'drizzle-orm'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import type { MediaUsageCheck } from '../media/index.ts'
import type { MessagingService } from '../messaging/index.ts'
import { repliesAppRoutes } from './replies.app.ts'
import { type RepliesService, repliesService } from './replies.service.ts'
import { repliesTools } from './replies.tools.ts'

// Saved replies (issue 48) are a module of their own rather than part of the inbox: they are the account's content
// (like templates), managed in settings and used by the reply box and the tool server; the inbox keeps conversations
// and messages. A saved reply is sent through messaging's free-text path (with its media file as a media message),
// so nothing here talks to a provider by itself.

/** The saved replies service of a process: media addresses under HEROLD_PUBLIC_URL. */
export function createRepliesService({ database, clock, config }: PlatformDeps): RepliesService {
  return repliesService({ db: database.orm, clock, publicUrl: config.publicUrl })
}

/** A media library file a saved reply uses cannot be deleted: DELETE /media/{id} is a 409 naming the reply. */
const savedReplyMediaUses: MediaUsageCheck = async (db, accountId, item) => {
  const { rows } = (await db.execute(
    sql`SELECT id, code FROM saved_replies WHERE account_id = ${accountId} AND media_id = ${item.id}`,
  )) as unknown as { rows: Array<{ id: string; code: string }> }
  return rows.map((r) => `saved reply /${r.code} (${r.id})`)
}

export const repliesModule: HeroldModule<
  { replies: RepliesService; messaging: Pick<MessagingService, 'send'> },
  { mediaUsage: MediaUsageCheck }
> = {
  name: 'replies',
  reactions: { mediaUsage: savedReplyMediaUses },
  tools: repliesTools,
  appRoutes: (_deps, { replies, messaging }) => repliesAppRoutes({ replies, messaging }),
}

export type { RepliesService } from './replies.service.ts'
