import { eq, sql } from 'drizzle-orm'
import { createAccount, createApiKey } from './auth/accounts.service.ts'
import { accounts, systemState } from './auth/auth.tables.ts'
import { SCOPES } from './auth/scopes.ts'
import { issueToken, SETUP_TTL_MS } from './auth/user-tokens.ts'
import { systemClock } from './clock.ts'
import type { Db } from './db/client.ts'

const BOOTSTRAP_KEY = 'bootstrap'

/**
 * On the first start of an empty database: an account "Default", a key with every scope and a one-time setup link
 * for the web app's first person (the account's owner). Recorded, so both are created and shown once, never again
 * (even if every account is later removed).
 */
export async function bootstrapFirstStart(
  db: Db,
): Promise<{ accountId: string; key: string; setupToken: string } | null> {
  return db.transaction(async (tx) => {
    const claimed = await tx
      .insert(systemState)
      .values({ key: BOOTSTRAP_KEY, value: sql`'{}'::jsonb` })
      .onConflictDoNothing()
      .returning({ key: systemState.key })
    if (claimed.length === 0) return null
    const [existing] = await tx.select({ id: accounts.id }).from(accounts).limit(1)
    if (existing) return null
    const account = await createAccount(tx, { name: 'Default' })
    const key = await createApiKey(tx, { accountId: account.id, name: 'Default key', scopes: [...SCOPES] })
    await tx
      .update(systemState)
      .set({ value: { account_id: account.id, key_id: key.id } })
      .where(eq(systemState.key, BOOTSTRAP_KEY))
    const setupToken = await issueToken(tx, systemClock, {
      kind: 'setup',
      ttlMs: SETUP_TTL_MS,
      accountId: account.id,
    })
    return { accountId: account.id, key: key.key, setupToken }
  })
}
