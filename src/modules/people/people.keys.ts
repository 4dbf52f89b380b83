import { and, eq, isNull } from 'drizzle-orm'
import type { Static } from 'typebox'
import { insertApiKey, keysOfAccount } from '../../platform/auth/accounts.service.ts'
import { apiKeys } from '../../platform/auth/auth.tables.ts'
import { credentialsChangedHere } from '../../platform/auth/credential-cache.ts'
import { isScope, type Scope } from '../../platform/auth/scopes.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import type { KeyView } from './people.schemas.ts'

/**
 * The account's API keys, managed by its owners and admins (the web app's /app/keys and the tool server's key
 * tools). Only the key's hash is stored; its secret is in the answer that creates it and nowhere else.
 */

export function keyView(k: typeof apiKeys.$inferSelect): Static<typeof KeyView> {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    revoked_at: k.revokedAt ? k.revokedAt.toISOString() : null,
  }
}

/** Every key of the account, newest first, revoked ones too (never their secrets). */
export async function listKeys(db: Db, accountId: string): Promise<Array<Static<typeof KeyView>>> {
  return (await keysOfAccount(db, accountId)).map(keyView)
}

/** A new key with these scopes (400 naming unknown ones); its secret is answered once. */
export async function createKey(
  db: Db,
  input: { accountId: string; name: string; scopes: string[] },
): Promise<{ key: Static<typeof KeyView>; secret: string }> {
  const unknown = input.scopes.filter((s) => !isScope(s))
  if (unknown.length > 0) throw new AppError(400, 'bad_request', `unknown scope(s): ${unknown.join(', ')}`)
  const scopes = [...new Set(input.scopes)] as Scope[]
  const { row, key } = await insertApiKey(db, { accountId: input.accountId, name: input.name.trim() || 'key', scopes })
  return { key: keyView(row), secret: key }
}

/** One key of the account; another account's key is 404. */
export async function getKey(db: Db, accountId: string, keyId: string): Promise<Static<typeof KeyView>> {
  const [row] = /^[0-9a-f-]{36}$/i.test(keyId)
    ? await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.accountId, accountId), eq(apiKeys.id, keyId)))
    : []
  if (!row) throw new AppError(404, 'not_found', 'No such API key')
  return keyView(row)
}

/** Revokes a key at once, on every process (a revoked key stays revoked; another account's key is 404). */
export async function revokeKey(db: Db, clock: Clock, accountId: string, keyId: string) {
  if (!/^[0-9a-f-]{36}$/i.test(keyId)) throw new AppError(404, 'not_found', 'No such API key')
  const where = and(eq(apiKeys.accountId, accountId), eq(apiKeys.id, keyId))
  await db
    .update(apiKeys)
    .set({ revokedAt: clock.now() })
    .where(and(where, isNull(apiKeys.revokedAt)))
  credentialsChangedHere()
  return getKey(db, accountId, keyId)
}

/**
 * Renames a key or narrows its scopes. A key never gains power through an update it did not have when issued
 * (spec, section 5 rule 6): scopes beyond its own are refused; a revoked key is 409.
 */
export async function updateKey(
  db: Db,
  accountId: string,
  keyId: string,
  change: { name?: string; scopes?: string[] },
): Promise<Static<typeof KeyView>> {
  const key = await getKey(db, accountId, keyId)
  if (change.name === undefined && change.scopes === undefined) {
    throw new AppError(400, 'bad_request', 'Give name or scopes')
  }
  if (key.revoked_at) throw new AppError(409, 'key_revoked', 'This API key is revoked; create a new one')
  const name = change.name?.trim()
  if (name === '') throw new AppError(400, 'bad_request', 'name must not be blank')
  let scopes: Scope[] | undefined
  if (change.scopes !== undefined) {
    const unknown = change.scopes.filter((s) => !isScope(s))
    if (unknown.length > 0) throw new AppError(400, 'bad_request', `unknown scope(s): ${unknown.join(', ')}`)
    const beyond = change.scopes.filter((s) => !key.scopes.includes(s))
    if (beyond.length > 0) {
      throw new AppError(
        403,
        'forbidden',
        `A key never gains scopes after it was issued (create a new key instead): ${beyond.join(', ')}`,
        { key: 'apikey_scope_erweiterung', details: { scopes: beyond } },
      )
    }
    scopes = [...new Set(change.scopes)] as Scope[]
  }
  await db
    .update(apiKeys)
    .set({ ...(name === undefined ? {} : { name }), ...(scopes === undefined ? {} : { scopes }) })
    .where(and(eq(apiKeys.accountId, accountId), eq(apiKeys.id, keyId)))
  credentialsChangedHere()
  return getKey(db, accountId, keyId)
}
