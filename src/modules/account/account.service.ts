import { eq } from 'drizzle-orm'
import { type Static, Type } from 'typebox'
import { type Account, accountView, getAccount } from '../../platform/auth/accounts.service.ts'
import { accounts, plans } from '../../platform/auth/auth.tables.ts'
import { isCountry } from '../../platform/auth/countries.ts'
import { credentialsChangedHere } from '../../platform/auth/credential-cache.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { contactCount } from '../contacts/index.ts'
import { messagesUsedIn, monthIn } from '../messaging/index.ts'
import { countWebhookSubscriptions } from '../webhooks/index.ts'

/** The account's own settings (name, language, timezone) and its usage against the plan. */

export const AccountSettingsBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120, description: 'the account’s name' })),
    language: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 10,
        pattern: '^[a-z]{2,3}(_[A-Z]{2})?$',
        description: 'the default language of new contacts and templates, such as de, en or en_US',
      }),
    ),
    timezone: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'IANA timezone such as Europe/Berlin' }),
    ),
    country: Type.Optional(
      Type.Union([Type.String({ minLength: 2, maxLength: 2, pattern: '^[A-Za-z]{2}$' }), Type.Null()], {
        description:
          'ISO 3166-1 alpha-2 country national phone numbers are read in (imports, the contact form), such as DE; null: the time zone’s',
      }),
    ),
  },
  { additionalProperties: false },
)

export const AccountSettings = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    plan: Type.String(),
    language: Type.String(),
    timezone: Type.String(),
    country: Type.Union([Type.String(), Type.Null()], {
      description: 'the country national phone numbers are read in: the one set, else the time zone’s (null: none)',
    }),
    country_set: Type.Boolean({ description: 'false: the country follows the time zone' }),
    sending_paused: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'AccountSettings' },
)

const Quota = (what: string) =>
  Type.Object({
    used: Type.Integer({ description: `${what} used` }),
    limit: Type.Integer({ description: 'the plan’s limit' }),
    left: Type.Integer({ description: 'what is left (never below 0)' }),
  })

export const Usage = Type.Object(
  {
    plan: Type.String(),
    month: Type.String({ description: 'the calendar month (YYYY-MM) in the account’s timezone' }),
    messages: Quota('messages this month'),
    contacts: Quota('contacts'),
    webhook_subscriptions: Quota('webhook subscriptions'),
    requests_per_minute: Type.Integer({ description: 'the API rate limit per credential' }),
  },
  { title: 'Usage' },
)

function settingsView(account: Account): Static<typeof AccountSettings> {
  const { id, name, plan, language, timezone, country, country_set, sending_paused, created_at } = accountView(account)
  return { id, name, plan, language, timezone, country, country_set, sending_paused, created_at }
}

function isTimezone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name })
    return name.includes('/') || name === 'UTC'
  } catch {
    return false
  }
}

export async function accountSettings(db: Db, accountId: string) {
  return settingsView(await getAccount(db, accountId))
}

/** Changes the given fields; every process sees the change at once (the credential cache is told). */
export async function updateAccountSettings(db: Db, accountId: string, change: Static<typeof AccountSettingsBody>) {
  const { country } = change
  if (change.name === undefined && change.language === undefined && change.timezone === undefined) {
    if (country === undefined) throw badRequest('Give name, language, timezone or country')
  }
  const code = typeof country === 'string' ? country.toUpperCase() : country
  if (typeof code === 'string' && !isCountry(code)) {
    throw badRequest('country must be an ISO 3166-1 alpha-2 code such as DE', 'country_invalid', { field: 'country' })
  }
  const name = change.name?.trim()
  if (name === '') throw badRequest('name must not be blank', 'bad_request', { field: 'name' })
  if (change.timezone !== undefined && !isTimezone(change.timezone)) {
    throw badRequest('timezone must be an IANA name such as Europe/Berlin', 'timezone_invalid', { field: 'timezone' })
  }
  const [row] = await db
    .update(accounts)
    .set({
      ...(name === undefined ? {} : { name }),
      ...(change.language === undefined ? {} : { language: change.language }),
      ...(change.timezone === undefined ? {} : { timezone: change.timezone }),
      ...(code === undefined ? {} : { country: code }),
    })
    .where(eq(accounts.id, accountId))
    .returning()
  credentialsChangedHere()
  return settingsView(row)
}

/** Messages this month, contacts and webhook subscriptions against the plan's limits. */
export async function usage(db: Db, clock: Clock, accountId: string): Promise<Static<typeof Usage>> {
  const account = await getAccount(db, accountId)
  const [plan] = await db.select().from(plans).where(eq(plans.name, account.plan))
  const month = monthIn(clock.now(), account.timezone)
  const quota = (used: number, limit: number) => ({ used, limit, left: Math.max(0, limit - used) })
  return {
    plan: account.plan,
    month,
    messages: quota(await messagesUsedIn(db, accountId, month), plan?.messagesPerMonth ?? 0),
    contacts: quota(await contactCount(db, accountId), plan?.contactsLimit ?? 0),
    webhook_subscriptions: quota(await countWebhookSubscriptions(db, accountId), plan?.webhooksLimit ?? 0),
    requests_per_minute: plan?.requestsPerMinute ?? 120,
  }
}
