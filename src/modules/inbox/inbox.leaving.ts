import { sql } from 'drizzle-orm'
import type { MemberLeft } from '../../platform/auth/member-left.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import { handOutQueue, lockRoundRobin } from './inbox.assignment.ts'
import { publishInboxChanges } from './inbox.live.ts'

/**
 * When a member leaves (removed from the account, or made a viewer who may not answer), inside that transaction:
 * their open and snoozed conversations go back to nobody, each with a conversation_assignments record (reason
 * member_removed or member_role_changed, the member who did it as actor), and with automatic assignment on, the
 * open ones wait in the queue (oldest activity first) and are handed out at once to members with room.
 */
export const unassignLeavingMember: MemberLeft = async (tx: Db, clock: Clock, left) => {
  const { accountId, userId } = left
  // the assignment lock first, as every assigning transaction takes it (inbox.assignment.ts)
  const roundRobin = await lockRoundRobin(tx, accountId)
  const freed = rows<{ id: string; status: string }>(
    await tx.execute(sql`
      WITH freed AS (
        UPDATE conversations SET assignee_id = NULL
        WHERE account_id = ${accountId} AND assignee_id = ${userId} AND status IN ('open', 'snoozed')
        RETURNING id, status, last_message_at
      ), recorded AS (
        INSERT INTO conversation_assignments (account_id, id, conversation_id, assignee_id, reason, actor_id, created_at)
        SELECT ${accountId}::uuid, gen_random_uuid(), id, NULL, ${left.reason}, ${left.actorId}::uuid,
          ${clock.now().toISOString()}::timestamptz
        FROM freed
        RETURNING conversation_id
      ), queued AS (
        INSERT INTO assignment_queue (account_id, conversation_id, queued_at)
        SELECT ${accountId}::uuid, id, ${clock.now().toISOString()}::timestamptz
          + (row_number() OVER (ORDER BY last_message_at, id)) * interval '1 microsecond'
        FROM freed WHERE status = 'open' AND ${roundRobin !== null}
        ON CONFLICT DO NOTHING
        RETURNING conversation_id
      )
      SELECT id, status, (SELECT count(*) FROM recorded) AS recorded, (SELECT count(*) FROM queued) AS queued
      FROM freed`),
  )
  if (freed.length === 0) return
  await publishInboxChanges(
    tx,
    accountId,
    freed.map((c) => ({ type: 'assignment' as const, conversation_id: c.id, actor_id: left.actorId })),
  )
  if (roundRobin) await handOutQueue(tx, clock, accountId, left.actorId)
}
