import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import { badRequest, notFound } from '../../platform/http/errors.ts'
import { publishInboxChanges } from './inbox.live.ts'

/**
 * Automatic assignment (round-robin): a conversation goes to the available member with room (fewer open
 * conversations than the account's limit) whose last automatic assignment is the oldest, or waits in the account's
 * queue until a member gets room. The state is in the database (member_availability.last_turn, assignment_queue), so
 * it survives restarts; every decision is taken under the row lock of the account's inbox_settings row, so processes
 * assigning at the same time take turns and never pass a member's limit. Lock order: that row first, then member
 * rows; conversations waiting in the queue are taken with SKIP LOCKED (one an inbound transaction holds is its own).
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** why a conversation_assignments record was written: automatic assignment, or its member left (inbox.leaving.ts) */
export type AssignmentReason = 'round_robin' | 'queue' | 'member_removed' | 'member_role_changed'

/** Takes the account's assignment lock; the limit when round-robin is on, else null (and nothing to do). */
export async function lockRoundRobin(tx: Db, accountId: string): Promise<{ limit: number } | null> {
  const [row] = rows<{ assignment_mode: string; assignment_limit: number }>(
    await tx.execute(
      sql`SELECT assignment_mode, assignment_limit FROM inbox_settings WHERE account_id = ${accountId} FOR UPDATE`,
    ),
  )
  return row?.assignment_mode === 'round_robin' ? { limit: Number(row.assignment_limit) } : null
}

/** The available active member (not a viewer) with room who has waited longest since their last assignment. */
async function nextMember(tx: Db, accountId: string, limit: number): Promise<string | null> {
  const [row] = rows<{ user_id: string }>(
    await tx.execute(sql`
      SELECT a.user_id FROM member_availability a
      JOIN memberships m ON m.account_id = a.account_id AND m.user_id = a.user_id
        AND m.status = 'active' AND m.role <> 'viewer'
      WHERE a.account_id = ${accountId} AND a.available
        AND (SELECT count(*) FROM conversations c
             WHERE c.account_id = a.account_id AND c.assignee_id = a.user_id AND c.status = 'open') < ${limit}
      ORDER BY a.last_turn, a.updated_at, a.user_id
      LIMIT 1`),
  )
  return row?.user_id ?? null
}

async function assignTo(
  tx: Db,
  clock: Clock,
  input: {
    accountId: string
    conversationId: string
    memberId: string
    reason: AssignmentReason
    actorId: string | null
  },
) {
  const { accountId, conversationId, memberId } = input
  const now = clock.now()
  await tx.execute(sql`
    UPDATE conversations SET assignee_id = ${memberId} WHERE account_id = ${accountId} AND id = ${conversationId}`)
  await tx.execute(sql`
    UPDATE member_availability SET last_assigned_at = ${now},
      last_turn = (SELECT max(last_turn) + 1 FROM member_availability WHERE account_id = ${accountId})
    WHERE account_id = ${accountId} AND user_id = ${memberId}`)
  await tx.execute(sql`
    DELETE FROM assignment_queue WHERE account_id = ${accountId} AND conversation_id = ${conversationId}`)
  await tx.execute(sql`
    INSERT INTO conversation_assignments (account_id, id, conversation_id, assignee_id, reason, actor_id, created_at)
    VALUES (${accountId}, ${randomUUID()}, ${conversationId}, ${memberId}, ${input.reason}, ${input.actorId}, ${now})`)
  await publishInboxChanges(tx, accountId, [
    { type: 'assignment', conversation_id: conversationId, actor_id: input.actorId },
  ])
}

/**
 * A customer's message in an unassigned open conversation, inside the transaction that stores it: assigned at once
 * to the next member with room, or queued (a conversation already waiting keeps its place).
 */
export async function assignOnInbound(tx: Db, clock: Clock, accountId: string, conversationId: string) {
  const roundRobin = await lockRoundRobin(tx, accountId)
  if (!roundRobin) return
  const [conversation] = rows<{ assignee_id: string | null; status: string; queued: boolean }>(
    await tx.execute(sql`
      SELECT c.assignee_id, c.status, EXISTS (SELECT 1 FROM assignment_queue q
        WHERE q.account_id = c.account_id AND q.conversation_id = c.id) AS queued
      FROM conversations c WHERE c.account_id = ${accountId} AND c.id = ${conversationId}`),
  )
  if (!conversation || conversation.assignee_id !== null || conversation.status !== 'open' || conversation.queued)
    return
  const member = await nextMember(tx, accountId, roundRobin.limit)
  if (member) {
    await assignTo(tx, clock, { accountId, conversationId, memberId: member, reason: 'round_robin', actorId: null })
    return
  }
  await tx.execute(sql`
    INSERT INTO assignment_queue (account_id, conversation_id, queued_at)
    VALUES (${accountId}, ${conversationId}, ${clock.now()}) ON CONFLICT DO NOTHING`)
}

/**
 * Hands out the queue while members have room: after a conversation is closed, snoozed or reassigned, a member
 * becomes available, or the settings change. Conversations no longer waiting (assigned, closed, deleted) leave the
 * queue. Runs in the caller's transaction; returns how many it assigned.
 */
export async function handOutQueue(tx: Db, clock: Clock, accountId: string, actorId: string | null = null) {
  const roundRobin = await lockRoundRobin(tx, accountId)
  if (!roundRobin) return 0
  await tx.execute(sql`
    DELETE FROM assignment_queue q WHERE q.account_id = ${accountId} AND NOT EXISTS (
      SELECT 1 FROM conversations c WHERE c.account_id = q.account_id AND c.id = q.conversation_id
        AND c.assignee_id IS NULL AND c.status = 'open')`)
  let assigned = 0
  for (;;) {
    const waiting = rows<{ conversation_id: string }>(
      await tx.execute(sql`
        SELECT q.conversation_id FROM assignment_queue q
        JOIN conversations c ON c.account_id = q.account_id AND c.id = q.conversation_id
        WHERE q.account_id = ${accountId}
        ORDER BY q.queued_at, q.conversation_id
        LIMIT 100
        FOR UPDATE OF c SKIP LOCKED`),
    )
    let round = 0
    for (const { conversation_id: conversationId } of waiting) {
      const member = await nextMember(tx, accountId, roundRobin.limit)
      if (!member) return assigned + round
      await assignTo(tx, clock, { accountId, conversationId, memberId: member, reason: 'queue', actorId })
      round++
    }
    assigned += round
    if (waiting.length < 100) return assigned
  }
}

export interface MemberAvailability {
  member_id: string
  name: string
  email: string
  available: boolean
  open_conversations: number
  last_assigned_at: Date | null
}

/** The account's active members (not viewers) with their availability and open conversations. */
export async function listAvailability(db: Db, accountId: string): Promise<MemberAvailability[]> {
  const found = rows<{
    user_id: string
    name: string
    email: string
    available: boolean | null
    open_count: string | number
    last_assigned_at: string | Date | null
  }>(
    await db.execute(sql`
      SELECT m.user_id, u.name, u.email, a.available, a.last_assigned_at,
        (SELECT count(*) FROM conversations c
         WHERE c.account_id = m.account_id AND c.assignee_id = m.user_id AND c.status = 'open') AS open_count
      FROM memberships m JOIN users u ON u.id = m.user_id
      LEFT JOIN member_availability a ON a.account_id = m.account_id AND a.user_id = m.user_id
      WHERE m.account_id = ${accountId} AND m.status = 'active' AND m.role <> 'viewer'
      ORDER BY lower(u.name), u.email, m.user_id`),
  )
  return found.map((r) => ({
    member_id: r.user_id,
    name: r.name,
    email: r.email,
    available: r.available === true,
    open_conversations: Number(r.open_count),
    last_assigned_at: r.last_assigned_at === null ? null : new Date(r.last_assigned_at),
  }))
}

/**
 * Sets a member available or away. An available member with room takes waiting conversations at once; an away member
 * gets no new automatic assignments (what they have stays theirs).
 */
export async function setAvailability(
  db: Db,
  clock: Clock,
  input: { accountId: string; memberId: string; available: boolean; actorId: string | null },
) {
  const { accountId, memberId, available } = input
  if (!UUID.test(memberId)) throw notFound('team member')
  return db.transaction(async (tx) => {
    const [member] = rows<{ status: string; role: string }>(
      await tx.execute(sql`
        SELECT status, role FROM memberships WHERE account_id = ${accountId} AND user_id = ${memberId}`),
    )
    if (!member) throw notFound('team member')
    if (member.status !== 'active' || member.role === 'viewer') {
      throw badRequest('Only an active member who may answer (not a viewer) takes conversations', 'member_not_active')
    }
    // the assignment lock before the member's row (the order every assigning transaction keeps)
    await lockRoundRobin(tx, accountId)
    await tx.execute(sql`
      INSERT INTO member_availability (account_id, user_id, available, updated_at)
      VALUES (${accountId}, ${memberId}, ${available}, ${clock.now()})
      ON CONFLICT (account_id, user_id) DO UPDATE SET available = EXCLUDED.available, updated_at = EXCLUDED.updated_at`)
    if (available) await handOutQueue(tx, clock, accountId, input.actorId)
    const all = await listAvailability(tx, accountId)
    const view = all.find((m) => m.member_id === memberId)
    if (!view) throw notFound('team member')
    return view
  })
}

/** The automatic assignments of a conversation, newest first (who got it and why). */
export async function assignmentHistory(db: Db, accountId: string, conversationId: string) {
  if (!UUID.test(conversationId)) throw notFound('conversation')
  const found = rows<{
    assignee_id: string | null
    reason: string
    actor_id: string | null
    created_at: string | Date
  }>(
    await db.execute(sql`
      SELECT assignee_id, reason, actor_id, created_at FROM conversation_assignments
      WHERE account_id = ${accountId} AND conversation_id = ${conversationId}
      ORDER BY created_at DESC, id LIMIT 100`),
  )
  return found.map((r) => ({
    assignee_id: r.assignee_id,
    reason: r.reason,
    actor_id: r.actor_id,
    created_at: new Date(r.created_at),
  }))
}
