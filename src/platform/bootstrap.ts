import { eq, sql } from 'drizzle-orm'
import { createAccount, createApiKey } from './auth/accounts.service.ts'
import { accounts, systemState } from './auth/auth.tables.ts'
import { SCOPES } from './auth/scopes.ts'
import type { Db } from './db/client.ts'

const BOOTSTRAP_KEY = 'bootstrap'

/**
 * On the first start of an empty database: an account "Default" and a key with every scope. Recorded, so the
 * key is created and shown once, never again (even if every account is later removed).
 */
export async function bootstrapFirstStart(db: Db): Promise<{ accountId: string; key: string } | null> {
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
    return { accountId: account.id, key: key.key }
  })
}
