import { and, eq, sql } from 'drizzle-orm'
import { accounts } from '../../platform/auth/auth.tables.ts'
import type { Db } from '../../platform/db/client.ts'
import { perTick } from '../../platform/db/per-tick.ts'
import { channelConnections } from './channels.tables.ts'

// Every query here filters on account_id; a repository never decides a rule.

export type ConnectionRow = typeof channelConnections.$inferSelect
export type NewConnectionRow = typeof channelConnections.$inferInsert

export async function connectionsOf(db: Db, accountId: string): Promise<ConnectionRow[]> {
  return db.select().from(channelConnections).where(eq(channelConnections.accountId, accountId))
}

/**
 * The accounts' chat connections for the requests of one turn of the event loop in one statement (the check of
 * POST /messages with a template: 32 requests at once were 32 statements).
 */
export const chatConnectionBatched = perTick(
  async (db, accountIds: readonly string[]): Promise<Array<ConnectionRow | undefined>> => {
    const rows = await db
      .select({ at: sql<number>`k.at`, connection: channelConnections })
      .from(sql`unnest(${sql.param([...accountIds])}::uuid[]) WITH ORDINALITY AS k(account_id, at)`)
      .innerJoin(
        channelConnections,
        and(eq(channelConnections.accountId, sql`k.account_id`), eq(channelConnections.channel, 'chat')),
      )
    const found: Array<ConnectionRow | undefined> = new Array(accountIds.length).fill(undefined)
    for (const row of rows) found[Number(row.at) - 1] = row.connection
    return found
  },
)

export async function connectionOf(
  db: Db,
  accountId: string,
  channel: 'chat' | 'email',
  options: { lock?: boolean } = {},
): Promise<ConnectionRow | undefined> {
  const query = db
    .select()
    .from(channelConnections)
    .where(and(eq(channelConnections.accountId, accountId), eq(channelConnections.channel, channel)))
  const [row] = options.lock ? await query.for('update') : await query
  return row
}

/** The account and its connection on the channel, in one round trip (a provider webhook's first read). */
export async function accountWithConnection(db: Db, accountId: string, channel: 'chat' | 'email') {
  let query = preparedAccountWithConnection.get(db)
  if (!query) {
    query = prepareAccountWithConnection(db)
    preparedAccountWithConnection.set(db, query)
  }
  const [row] = await query.execute({ accountId, channel })
  return row
}

// prepared once per database handle (a hot read: every provider webhook)
const preparedAccountWithConnection = new WeakMap<Db, ReturnType<typeof prepareAccountWithConnection>>()

function prepareAccountWithConnection(db: Db) {
  return db
    .select({ account: accounts, connection: channelConnections })
    .from(accounts)
    .leftJoin(
      channelConnections,
      and(eq(channelConnections.accountId, accounts.id), eq(channelConnections.channel, sql.placeholder('channel'))),
    )
    .where(eq(accounts.id, sql.placeholder('accountId')))
    .prepare('channels_account_with_connection')
}

export async function upsertConnection(db: Db, row: NewConnectionRow): Promise<ConnectionRow> {
  const { accountId: _a, channel: _c, ...change } = row
  const [saved] = await db
    .insert(channelConnections)
    .values(row)
    .onConflictDoUpdate({ target: [channelConnections.accountId, channelConnections.channel], set: change })
    .returning()
  return saved
}

export async function updateConnection(
  db: Db,
  accountId: string,
  channel: 'chat' | 'email',
  change: Partial<Pick<ConnectionRow, 'status' | 'disconnectedAt' | 'coexistence' | 'credentialsSealed'>>,
): Promise<ConnectionRow | undefined> {
  const [row] = await db
    .update(channelConnections)
    .set(change)
    .where(and(eq(channelConnections.accountId, accountId), eq(channelConnections.channel, channel)))
    .returning()
  return row
}
