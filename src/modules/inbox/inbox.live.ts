import type { FastifyInstance } from 'fastify'
import type { Clock } from '../../platform/clock.ts'
import type { Database, Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { LiveHub, type LiveLimits } from '../../platform/live/live-hub.ts'
import { LIVE_PAYLOAD_MAX, publishLive } from '../../platform/live/publish.ts'

/**
 * What changed in an account's inbox, as its open consoles hear it (GET /app/events): the web client refetches what
 * a change names (the conversation list, the conversation's thread, the unread count).
 */
export interface InboxChange {
  type: 'message' | 'message_status' | 'conversation' | 'note' | 'assignment' | 'status' | 'read'
  conversation_id: string
  message_id?: string
  /** the member who made the change (null or absent: a customer, a provider, the system) */
  actor_id?: string | null
}

/** The event's data: `{ changes: InboxChange[] }`, each change once. */
function eventData(changes: readonly InboxChange[], withMessages: boolean) {
  const seen = new Set<string>()
  const kept: InboxChange[] = []
  for (const change of changes) {
    const one: InboxChange = { type: change.type, conversation_id: change.conversation_id }
    if (withMessages && change.message_id) one.message_id = change.message_id
    if (change.actor_id) one.actor_id = change.actor_id
    const key = `${one.type}/${one.conversation_id}/${one.message_id ?? ''}/${one.actor_id ?? ''}`
    if (seen.has(key)) continue
    seen.add(key)
    kept.push(one)
  }
  return { changes: kept }
}

/** the notification's envelope around the data (id, account, kind): well under this */
const ENVELOPE = 120

/**
 * Tells the account's open consoles what a transaction changed in its inbox: one pg_notify per call, fired at the
 * commit (so call it inside the writing transaction, once per transaction; a rolled-back change is never heard).
 * A batch too big for one notification names its conversations without their messages, and a bigger one becomes
 * `resync` (the consoles refetch everything).
 */
export async function publishInboxChanges(tx: Db, accountId: string, changes: InboxChange[]): Promise<void> {
  if (changes.length === 0) return
  let data = eventData(changes, true)
  if (JSON.stringify(data).length + ENVELOPE > LIVE_PAYLOAD_MAX) data = eventData(changes, false)
  // beyond the limit publishLive sends resync
  await publishLive(tx, accountId, 'inbox', data)
}

/** The member who makes a change through a session (a key or the system: null). */
export function actorOf(tenant: { actor?: { userId?: string } }): string | null {
  return tenant.actor?.userId ?? null
}

/**
 * GET /app/events: the inbox's changes as Server-Sent Events for the signed-in member's account (needs inbox:read).
 * A plain route (the stream is the raw reply), behind the /app session check like every /app route; one hub per
 * process (the app), closed at shutdown before the server stops taking connections.
 */
export function liveRoutes(deps: { database: Pick<Database, 'listen'>; clock: Clock }, limits?: Partial<LiveLimits>) {
  return async (app: FastifyInstance): Promise<void> => {
    const hub = new LiveHub(deps.database, deps.clock, limits)
    app.addHook('preClose', async () => {
      await hub.close()
    })
    app.get(
      '/events',
      {
        config: { scope: 'inbox:read' },
        schema: {
          summary: 'The inbox’s changes as they happen (Server-Sent Events)',
          description:
            'Needs inbox:read. `text/event-stream` of the signed-in member’s account: `inbox` events (data `{changes: [{type, conversation_id, message_id?, actor_id?}]}`, type one of message, message_status, conversation, note, assignment, status, read) each with an `id`; `resync` (refetch everything), `ready` (data `{resumed}`: true when the events missed after Last-Event-ID were replayed) and `end` (data `{reason}`: signed_out, expired, shutdown). A comment every 25 s. Reconnect with the Last-Event-ID header to get what was missed; an id this server no longer knows gets `resync`. At most 10 streams per member (429 too_many_streams).',
          tags: ['app'],
          operationId: 'streamInboxEvents',
          querystring: { type: 'object', properties: {}, additionalProperties: false },
          headers: {
            type: 'object',
            properties: { 'last-event-id': { type: 'string', maxLength: 64 } },
          },
          produces: ['text/event-stream'],
          response: {
            200: { type: 'string', description: 'the events, as long as the stream is open' },
          },
        },
      },
      async (request, reply) => {
        const session = request.appSession
        if (!session) throw new AppError(401, 'unauthorized', 'Sign in first')
        const owner = {
          accountId: session.tenant.accountId,
          userId: session.userId,
          sessionId: session.sessionId,
          expiresAt: session.expiresAt,
        }
        hub.admit(owner)
        await hub.ready()
        const lastEventId = request.headers['last-event-id']
        reply.hijack()
        hub.attach(owner, reply.raw, typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : undefined)
      },
    )
  }
}
