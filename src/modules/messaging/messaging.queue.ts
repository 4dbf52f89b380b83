import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { cancelQueuedJobsFor, enqueueSelectSql } from '../../platform/jobs/jobs.ts'
import { TEMPLATE_SEND_QUEUE } from './messaging.sends.ts'
import type { SendOrigin } from './messaging.tables.ts'

/**
 * Send records of a campaign (newsletter, follow-up, automation) queued for the template send pipeline, written by
 * other modules through these SQL pieces: data-modifying CTEs they fold into a statement of their own, so a fan-out
 * stays one statement per batch while only messaging writes its send tables.
 */

type CampaignOrigin = Exclude<SendOrigin, 'api'>

/** A short-link id made in SQL: 12 random bytes as base64url (16 characters), as newLinkId makes one. */
const LINK_ID_SQL = sql.raw(
  `translate(encode(substr(uuid_send(gen_random_uuid()), 1, 6) || substr(uuid_send(gen_random_uuid()), 11, 6), 'base64'), '+/', '-_')`,
)

const ZERO_UUID = '00000000-0000-0000-0000-000000000000'

/**
 * The CTE `sends` (after the caller's CTE `recipients`, whose `id` column is a contact id): one `queued` send record
 * of the template per recipient, none twice for the same origin (the unique index; ON CONFLICT skips repeats).
 * `trackedLink`: each send's variable {{1}} is the id of its own short link, drawn here; the link row is written
 * with the send's job (queueSendJobsSql). The send jobs follow with queueSendJobsSql, as the sender drains.
 */
export function queueSendsSql(input: {
  accountId: string
  templateId: string
  origin: CampaignOrigin
  originId: string
  recipients: string
  trackedLink: boolean
  now: Date
}): SQL {
  const now = input.now.toISOString()
  return sql`sends AS (
        INSERT INTO template_sends (account_id, id, contact_id, template_id, variables, status, origin, origin_id,
          created_at, updated_at)
        SELECT ${input.accountId}::uuid, gen_random_uuid(), p.id, ${input.templateId}::uuid,
          ${input.trackedLink ? sql`jsonb_build_object('1', ${LINK_ID_SQL})` : sql`'{}'::jsonb`}, 'queued', ${input.origin},
          ${input.originId}::uuid, ${now}::timestamptz, ${now}::timestamptz
        FROM ${sql.identifier(input.recipients)} p
        ON CONFLICT DO NOTHING
        RETURNING 1
      )`
}

/**
 * The CTEs `fed`, `links` and `queued`: the origin's next send records in contact order after `after` (and up to
 * `upTo`), at most `limit`, get their send jobs (`queued` returns their queue, for notifyJobsSql) and, with `cta`,
 * their tracked short links (the id queueSendsSql drew, to the CTA's address). `fed` has the records' `contact_id`.
 */
export function queueSendJobsSql(input: {
  accountId: string
  origin: CampaignOrigin
  originId: string
  after: string | null
  upTo: string | null
  limit: number
  cta: { url: string } | null
  priority: 0 | 1
  now: Date
}): SQL {
  const now = input.now.toISOString()
  const newsletterId = input.origin === 'newsletter' ? input.originId : null
  return sql`fed AS (
        SELECT s.id, s.contact_id, s.status, s.variables->>'1' AS link_id FROM template_sends s
        WHERE s.account_id = ${input.accountId} AND s.origin = ${input.origin} AND s.origin_id = ${input.originId}
          AND s.contact_id > ${input.after ?? ZERO_UUID}::uuid
          ${input.upTo ? sql`AND s.contact_id <= ${input.upTo}::uuid` : sql``}
        ORDER BY s.contact_id LIMIT ${input.limit}
      ), links AS (
        INSERT INTO tracked_links (account_id, id, contact_id, url, newsletter_id, created_at)
        SELECT ${input.accountId}::uuid, f.link_id, f.contact_id, ${input.cta?.url ?? ''}, ${newsletterId}::uuid,
          ${now}::timestamptz
        FROM fed f WHERE ${input.cta ? sql`f.link_id IS NOT NULL AND f.status = 'queued'` : sql`FALSE`}
        ON CONFLICT DO NOTHING
        RETURNING 1
      ), queued AS (
        ${enqueueSelectSql(input.now, {
          queue: TEMPLATE_SEND_QUEUE,
          priority: input.priority,
          select: sql`SELECT ${input.accountId}::uuid AS account_id, jsonb_build_object('send_id', f.id) AS payload
            FROM fed f WHERE f.status = 'queued'`,
        })}
      )`
}

/** Removes the origin's send records that are still `queued`, and their queued send jobs first. */
export async function dropQueuedSends(
  tx: Db,
  input: { accountId: string; origin: CampaignOrigin; originId: string },
): Promise<void> {
  const queued = sql`FROM template_sends WHERE account_id = ${input.accountId} AND origin = ${input.origin}
    AND origin_id = ${input.originId} AND status = 'queued'`
  await cancelQueuedJobsFor(tx, {
    accountId: input.accountId,
    queue: TEMPLATE_SEND_QUEUE,
    key: 'send_id',
    select: sql`SELECT id::text ${queued}`,
  })
  await tx.execute(sql`DELETE ${queued}`)
}
