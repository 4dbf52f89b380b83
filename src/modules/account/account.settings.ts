import { eq } from 'drizzle-orm'
import type { Static } from 'typebox'
import { type Account, accountView, getAccount } from '../../platform/auth/accounts.service.ts'
import { accounts } from '../../platform/auth/auth.tables.ts'
import { isCountry } from '../../platform/auth/countries.ts'
import { credentialsChangedHere } from '../../platform/auth/credential-cache.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest } from '../../platform/http/errors.ts'
import type { AccountSettings, AccountSettingsBody } from './account.schemas.ts'

/** The account's own settings: name, language, timezone and the country national phone numbers are read in. */

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
