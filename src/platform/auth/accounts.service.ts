import { randomUUID } from 'node:crypto'
import { and, asc, desc, eq, isNull } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { accounts, apiKeys, oauthAccessTokens, plans } from './auth.tables.ts'
import { accountCountry, isCountry } from './countries.ts'
import { credentialsChangedHere } from './credential-cache.ts'
import { generateApiKey, generateOAuthToken } from './credentials.ts'
import type { Scope } from './scopes.ts'

export class AdminError extends Error {}

export type Account = typeof accounts.$inferSelect
export type Plan = typeof plans.$inferSelect

export type AccountView = {
  id: string
  name: string
  plan: string
  status: 'active' | 'blocked'
  sending_paused: boolean
  language: string
  timezone: string
  /** the country national phone numbers are read in: the one set, else the time zone's (null: none) */
  country: string | null
  /** whether the country is set (false: it follows the time zone) */
  country_set: boolean
  created_at: string
}

export function accountView(a: Account): AccountView {
  return {
    id: a.id,
    name: a.name,
    plan: a.plan,
    status: a.status,
    sending_paused: a.sendingPaused,
    language: a.language,
    timezone: a.timezone,
    country: accountCountry(a),
    country_set: a.country !== null,
    created_at: a.createdAt.toISOString(),
  }
}

function assertTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone })
  } catch {
    throw new AdminError(`unknown IANA timezone "${timezone}"`)
  }
}

/** An ISO 3166-1 alpha-2 code (any case) upper-cased; AdminError otherwise. */
export function assertCountry(country: string): string {
  const code = country.trim().toUpperCase()
  if (!isCountry(code)) throw new AdminError(`country must be an ISO 3166-1 alpha-2 code such as DE, got "${country}"`)
  return code
}

function assertLanguage(language: string): void {
  if (!/^[a-z]{2,3}(_[A-Z]{2})?$/.test(language)) {
    throw new AdminError(`language must be a code such as "de" or "en_US", got "${language}"`)
  }
}

async function requirePlan(db: Db, name: string): Promise<void> {
  const [plan] = await db.select({ name: plans.name }).from(plans).where(eq(plans.name, name))
  if (!plan) throw new AdminError(`no plan named "${name}" (create it with: herold plans set ${name} ...)`)
}

export async function createAccount(
  db: Db,
  input: { name: string; plan?: string; language?: string; timezone?: string; country?: string },
): Promise<Account> {
  const name = input.name.trim()
  if (name.length === 0 || name.length > 200) throw new AdminError('name must be 1 to 200 characters')
  const plan = input.plan ?? 'default'
  await requirePlan(db, plan)
  if (input.language) assertLanguage(input.language)
  if (input.timezone) assertTimezone(input.timezone)
  const country = input.country ? assertCountry(input.country) : null
  const [account] = await db
    .insert(accounts)
    .values({ id: randomUUID(), name, plan, language: input.language, timezone: input.timezone, country })
    .returning()
  return account
}

export async function listAccounts(db: Db): Promise<Account[]> {
  return db.select().from(accounts).orderBy(asc(accounts.createdAt), asc(accounts.id))
}

export async function getAccount(db: Db, id: string): Promise<Account> {
  if (!isUuid(id)) throw new AdminError(`no account ${id}`)
  const [account] = await db.select().from(accounts).where(eq(accounts.id, id))
  if (!account) throw new AdminError(`no account ${id}`)
  return account
}

async function updateAccount(db: Db, id: string, change: Partial<typeof accounts.$inferInsert>): Promise<Account> {
  await getAccount(db, id)
  const [account] = await db.update(accounts).set(change).where(eq(accounts.id, id)).returning()
  credentialsChangedHere()
  return account
}

export const blockAccount = (db: Db, id: string) => updateAccount(db, id, { status: 'blocked' })
export const unblockAccount = (db: Db, id: string) => updateAccount(db, id, { status: 'active' })
export const pauseSending = (db: Db, id: string) => updateAccount(db, id, { sendingPaused: true })
export const resumeSending = (db: Db, id: string) => updateAccount(db, id, { sendingPaused: false })

export async function setAccountPlan(db: Db, id: string, plan: string): Promise<Account> {
  await requirePlan(db, plan)
  return updateAccount(db, id, { plan })
}

/** Sets the account's country (ISO 3166-1 alpha-2), or with null lets it follow the time zone again. */
export async function setAccountCountry(db: Db, id: string, country: string | null): Promise<Account> {
  return updateAccount(db, id, { country: country === null ? null : assertCountry(country) })
}

export async function setPlan(
  db: Db,
  input: {
    name: string
    contactsLimit: number
    messagesPerMonth: number
    webhooksLimit: number
    /** omitted: 120 for a new plan, unchanged for an existing one */
    requestsPerMinute?: number
  },
): Promise<Plan> {
  if (!/^[a-z0-9][a-z0-9_-]{0,39}$/.test(input.name)) {
    throw new AdminError('plan name must be 1 to 40 characters of a-z, 0-9, _ and -')
  }
  for (const [flag, value] of [
    ['--contacts', input.contactsLimit],
    ['--messages-per-month', input.messagesPerMonth],
    ['--webhooks', input.webhooksLimit],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0) throw new AdminError(`${flag} must be a whole number >= 0`)
  }
  const rate = input.requestsPerMinute
  if (rate !== undefined && (!Number.isSafeInteger(rate) || rate < 1 || rate > 1_000_000)) {
    throw new AdminError('--requests-per-minute must be a whole number from 1 to 1000000')
  }
  const values = {
    contactsLimit: input.contactsLimit,
    messagesPerMonth: input.messagesPerMonth,
    webhooksLimit: input.webhooksLimit,
    ...(rate === undefined ? {} : { requestsPerMinute: rate }),
  }
  const [plan] = await db
    .insert(plans)
    .values({ name: input.name, ...values })
    .onConflictDoUpdate({ target: plans.name, set: values })
    .returning()
  credentialsChangedHere()
  return plan
}

export async function listPlans(db: Db): Promise<Plan[]> {
  return db.select().from(plans).orderBy(asc(plans.name))
}

export type KeyView = {
  id: string
  account_id: string
  name: string
  prefix: string
  scopes: string[]
  created_at: string
  revoked_at: string | null
}

function keyView(k: typeof apiKeys.$inferSelect): KeyView {
  return {
    id: k.id,
    account_id: k.accountId,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    revoked_at: k.revokedAt ? k.revokedAt.toISOString() : null,
  }
}

/** The returned `key` is the only time the secret exists outside the caller's hands. */
export async function createApiKey(
  db: Db,
  input: { accountId: string; name: string; scopes: Scope[] },
): Promise<KeyView & { key: string }> {
  await getAccount(db, input.accountId)
  const name = input.name.trim()
  if (name.length === 0 || name.length > 120) throw new AdminError('key name must be 1 to 120 characters')
  const { row, key } = await insertApiKey(db, { ...input, name })
  return { ...keyView(row), key }
}

/** Stores a new key of the account; its secret (`key`) exists only in the answer. */
export async function insertApiKey(db: Db, input: { accountId: string; name: string; scopes: Scope[] }) {
  const secret = generateApiKey()
  const [row] = await db
    .insert(apiKeys)
    .values({
      accountId: input.accountId,
      id: randomUUID(),
      name: input.name,
      prefix: secret.prefix,
      keyHash: secret.hash,
      scopes: input.scopes,
    })
    .returning()
  return { row, key: secret.key }
}

export async function listApiKeys(db: Db, accountId: string): Promise<KeyView[]> {
  await getAccount(db, accountId)
  return (await keysOfAccount(db, accountId)).map(keyView)
}

/** Every key of the account, newest first, revoked ones too. */
export function keysOfAccount(db: Db, accountId: string) {
  return db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.accountId, accountId))
    .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
}

export async function revokeApiKey(db: Db, id: string): Promise<KeyView> {
  if (!isUuid(id)) throw new AdminError(`no key ${id}`)
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
    .returning()
  credentialsChangedHere()
  if (row) return keyView(row)
  const [existing] = await db.select().from(apiKeys).where(eq(apiKeys.id, id))
  if (!existing) throw new AdminError(`no key ${id}`)
  return keyView(existing)
}

/** Issues a tool-server access token (used by the OAuth flow of the tool server). */
export async function createOAuthAccessToken(
  db: Db,
  input: { accountId: string; scopes: Scope[]; expiresAt: Date },
): Promise<{ token: string }> {
  const { token, hash } = generateOAuthToken()
  await db.insert(oauthAccessTokens).values({
    accountId: input.accountId,
    id: randomUUID(),
    tokenHash: hash,
    scopes: input.scopes,
    expiresAt: input.expiresAt,
  })
  return { token }
}

export function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)
}
