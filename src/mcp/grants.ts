import { and, desc, eq, gt, isNull, max } from 'drizzle-orm'
import { oauthAccessTokens } from '../platform/auth/auth.tables.ts'
import { users } from '../platform/auth/people.tables.ts'
import type { Clock } from '../platform/clock.ts'
import { inAccount } from '../platform/db/account-rows.ts'
import type { Db } from '../platform/db/client.ts'
import { AppError } from '../platform/http/errors.ts'
import { oauthClients, oauthGrants } from './mcp.tables.ts'
import { revokeGrant } from './oauth.ts'

/** An assistant connected to the account through OAuth: one approved grant, with who approved it. */
export interface ConnectedAssistant {
  id: string
  client_id: string
  client_name: string
  scopes: string[]
  resource: string
  approved_by: { id: string; name: string; email: string } | null
  approved_at: string
  last_token_at: string | null
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Joins an access token and the grant it was issued under. */
export const grantTokens = and(
  eq(oauthAccessTokens.accountId, oauthGrants.accountId),
  eq(oauthAccessTokens.grantId, oauthGrants.id),
)

async function grantRows(db: Db, accountId: string, grantId?: string) {
  return db
    .select({
      grant: oauthGrants,
      clientName: oauthClients.clientName,
      user: { id: users.id, name: users.name, email: users.email },
      lastTokenAt: max(oauthAccessTokens.createdAt),
    })
    .from(oauthGrants)
    .innerJoin(oauthClients, eq(oauthClients.clientId, oauthGrants.clientId))
    .leftJoin(users, eq(users.id, oauthGrants.userId))
    .leftJoin(oauthAccessTokens, grantTokens)
    .where(
      inAccount(
        oauthGrants,
        accountId,
        isNull(oauthGrants.revokedAt),
        ...(grantId ? [eq(oauthGrants.id, grantId)] : []),
      ),
    )
    .groupBy(oauthGrants.accountId, oauthGrants.id, oauthClients.clientName, users.id, users.name, users.email)
    .orderBy(desc(oauthGrants.createdAt), desc(oauthGrants.id))
}

function view(row: Awaited<ReturnType<typeof grantRows>>[number]): ConnectedAssistant {
  const last = row.lastTokenAt as Date | string | null
  return {
    id: row.grant.id,
    client_id: row.grant.clientId,
    client_name: row.clientName,
    scopes: row.grant.scopes,
    resource: row.grant.resource,
    approved_by: row.user?.id ? { id: row.user.id, name: row.user.name, email: row.user.email } : null,
    approved_at: row.grant.createdAt.toISOString(),
    last_token_at: last === null ? null : new Date(last).toISOString(),
  }
}

/** The assistants connected to the account (grants not revoked), newest first. */
export async function listConnectedAssistants(db: Db, accountId: string): Promise<ConnectedAssistant[]> {
  return (await grantRows(db, accountId)).map(view)
}

/** One connected assistant; another account's grant, or a revoked one, is 404. */
export async function getConnectedAssistant(db: Db, accountId: string, grantId: string): Promise<ConnectedAssistant> {
  const [row] = UUID.test(grantId) ? await grantRows(db, accountId, grantId) : []
  if (!row) throw new AppError(404, 'not_found', 'No such connected assistant')
  return view(row)
}

/** Disconnects an assistant: the grant is revoked, its access tokens deleted, its refresh tokens stop working. */
export async function disconnectAssistant(db: Db, clock: Clock, accountId: string, grantId: string) {
  const assistant = await getConnectedAssistant(db, accountId, grantId)
  await revokeGrant(db, clock, accountId, grantId)
  return assistant
}

/** Access tokens still valid under a grant (for the preview of a disconnect). */
export async function liveTokens(db: Db, clock: Clock, accountId: string, grantId: string): Promise<number> {
  const rows = await db
    .select({ id: oauthAccessTokens.id })
    .from(oauthAccessTokens)
    .where(
      inAccount(
        oauthAccessTokens,
        accountId,
        eq(oauthAccessTokens.grantId, grantId),
        gt(oauthAccessTokens.expiresAt, clock.now()),
      ),
    )
  return rows.length
}

/** The account's connected assistants as the tool server's own tools use them (assistants.tools.ts). */
export function assistantGrants(db: Db, clock: Clock) {
  return {
    list: (accountId: string) => listConnectedAssistants(db, accountId),
    get: (accountId: string, grantId: string) => getConnectedAssistant(db, accountId, grantId),
    liveTokens: (accountId: string, grantId: string) => liveTokens(db, clock, accountId, grantId),
    disconnect: (accountId: string, grantId: string) => disconnectAssistant(db, clock, accountId, grantId),
  }
}

export type AssistantGrants = ReturnType<typeof assistantGrants>
