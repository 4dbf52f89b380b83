import { randomUUID } from 'node:crypto'
import { and, eq, sql } from 'drizzle-orm'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import { type TenantContext, tenantAccount } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import { AppError } from '../../platform/http/errors.ts'
import { type ClaimedJob, enqueue } from '../../platform/jobs/jobs.ts'
import { awayReplies } from './inbox.routing.tables.ts'
import { openAt, type SettingsRow, settingsRow } from './inbox.settings.ts'
import { messages } from './inbox.tables.ts'
import type { InboundStored } from './inbox.types.ts'

/**
 * The away message: a customer who writes outside opening hours gets the account's away text once, as a free text in
 * the 24-hour window, sent through the messaging module's free-text path (its quota, opt-in and pause checks, the
 * number's pace) and stored as automated. A conversation gets it at most once per `away_interval_minutes`: the
 * inbound transaction, which holds the conversation's row lock, looks for a recent one before queueing another.
 */

export const AWAY_QUEUE = 'inbox.away_message'
const WINDOW_MS = 24 * 60 * 60 * 1000

/** What the away job needs of the messaging module: its free-text send (POST /messages with text). */
export interface FreeTextSender {
  send(
    tenant: Pick<TenantContext, 'accountId' | 'account'>,
    input: { contact_id: string; text: string },
    options?: { automated?: boolean },
  ): Promise<{ sent?: { id: string } | null }>
}

/** Inside the inbound transaction: queues the away message when it is owed. */
export async function awayOnInbound(tx: Db, clock: Clock, message: InboundStored, settings: SettingsRow | undefined) {
  if (!settings?.hoursEnabled || !settings.awayEnabled || settings.awayMessage.trim() === '') return
  if (message.channel !== 'chat') return
  const now = clock.now()
  if (openAt(settings, now)) return
  const since = new Date(now.getTime() - settings.awayIntervalMinutes * 60_000)
  const [recent] = rows<{ id: string }>(
    await tx.execute(sql`
      SELECT id FROM away_replies
      WHERE account_id = ${message.accountId} AND conversation_id = ${message.conversationId}
        AND state IN ('queued', 'sending', 'sent') AND created_at > ${since}
      LIMIT 1`),
  )
  if (recent) return
  const id = randomUUID()
  await tx.insert(awayReplies).values({
    accountId: message.accountId,
    id,
    conversationId: message.conversationId,
    contactId: message.contactId,
    inboundMessageId: message.messageId,
    state: 'queued',
    createdAt: now,
    updatedAt: now,
  })
  await enqueue(tx, clock, { accountId: message.accountId, queue: AWAY_QUEUE, payload: { away_id: id } })
}

type AwayState = (typeof awayReplies.$inferSelect)['state']

/** The away job: sends the text once (a retry that finds it `sending` ends it `failed`, never sends twice). */
export function awayJob({ db, clock, sender }: { db: Db; clock: Clock; sender: FreeTextSender }) {
  const settle = (accountId: string, id: string, state: AwayState, set: { reason?: string; messageId?: string }) =>
    db
      .update(awayReplies)
      .set({ state, reason: set.reason ?? null, messageId: set.messageId ?? null, updatedAt: clock.now() })
      .where(and(eq(awayReplies.accountId, accountId), eq(awayReplies.id, id)))

  return async (job: ClaimedJob) => {
    const accountId = job.accountId
    const id = String(job.payload.away_id)
    const [away] = await db
      .select()
      .from(awayReplies)
      .where(and(eq(awayReplies.accountId, accountId), eq(awayReplies.id, id)))
    if (!away) return
    if (away.state === 'sending') return void (await settle(accountId, id, 'failed', { reason: 'interrupted' }))
    if (away.state !== 'queued') return
    const settings = await settingsRow(db, accountId)
    if (!settings?.awayEnabled || settings.awayMessage.trim() === '') {
      return void (await settle(accountId, id, 'skipped', { reason: 'away_off' }))
    }
    const [inbound] = await db
      .select({ createdAt: messages.createdAt })
      .from(messages)
      .where(and(eq(messages.accountId, accountId), eq(messages.id, away.inboundMessageId)))
    if (!inbound || clock.now().getTime() - inbound.createdAt.getTime() >= WINDOW_MS) {
      return void (await settle(accountId, id, 'skipped', { reason: 'window_closed' }))
    }
    const account = tenantAccount(await getAccount(db, accountId))
    await settle(accountId, id, 'sending', {})
    try {
      const result = await sender.send(
        { accountId, account },
        { contact_id: away.contactId, text: settings.awayMessage },
        { automated: true },
      )
      // the send itself tells the account's open consoles (messaging's single send publishes its message)
      await settle(accountId, id, 'sent', result.sent?.id ? { messageId: result.sent.id } : {})
    } catch (error) {
      // the messaging module's checks (opt-in, quota, paused, no number) or the provider's refusal: recorded
      if (!(error instanceof AppError)) throw error
      const state = error.code === 'send_failed' ? 'failed' : 'skipped'
      await settle(accountId, id, state, { reason: error.key })
    }
  }
}

/** The away messages of a conversation, newest first. */
export async function awayHistory(db: Db, accountId: string, conversationId: string) {
  const found = await db
    .select()
    .from(awayReplies)
    .where(and(eq(awayReplies.accountId, accountId), eq(awayReplies.conversationId, conversationId)))
    .orderBy(sql`${awayReplies.createdAt} DESC`)
    .limit(100)
  return found.map((r) => ({
    state: r.state,
    reason: r.reason,
    message_id: r.messageId,
    created_at: r.createdAt,
  }))
}
