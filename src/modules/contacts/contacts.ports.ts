import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { ContactRow } from './contacts.repository.ts'
import { type ContactTag, displayTags } from './contacts.rules.ts'

/** What the contacts service needs of the tenant: the account, its plan and language. */
export type ContactsTenant = Pick<TenantContext, 'accountId'> & {
  account: Pick<TenantContext['account'], 'plan' | 'language'> & Partial<Pick<TenantContext['account'], 'timezone'>>
}

export type Acquisition = 'marketing' | 'automation' | 'service'

/** The Contact of section 2, plus `acquisition`. */
export function contactView(row: ContactRow, tags: ContactTag[]) {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    optin_chat: row.optinChat,
    optin_email: row.optinEmail,
    tags: displayTags(tags).map((t) => t.name),
    language: row.language,
    source: row.source,
    acquisition: row.acquisition,
    /** custom field values by key, only the set ones */
    fields: row.fields,
    // already in wire form: the serializer then walks a page of contacts without copying it
    created_at: row.createdAt.toISOString(),
  }
}
export type ContactView = ReturnType<typeof contactView>

/** The data of `contact.created`: the Contact fields of section 2, and the custom field values (`fields`). */
export function contactEventData(view: ContactView): Record<string, unknown> {
  const { acquisition: _acquisition, created_at, ...rest } = view
  return { ...rest, created_at }
}

/** Removes one module's rows about a contact inside the deletion's transaction; returns rows removed per table. */
export type ContactCleanup = (tx: Db, accountId: string, contactId: string) => Promise<Record<string, number>>

/**
 * Enqueues the deletion confirmation to the end customer (a durable job in `tx`, so it goes out after the commit)
 * and answers whether it will be sent; given the contact as it was before deletion.
 */
export type DeletionConfirmation = (tx: Db, clock: Clock, accountId: string, contact: ContactView) => Promise<boolean>

export interface ContactDeletionHooks {
  cleanups: ContactCleanup[]
  confirmation: DeletionConfirmation | null
}

export interface ContactsServiceDeps {
  db: Db
  clock: Clock
  deletion: ContactDeletionHooks
  /** the CSV import's batch size on this kind of database (importBatchSize); default PostgreSQL's */
  importBatch?: number
}

export interface ContactInput {
  name?: string
  email?: string | null
  phone?: string | null
  acquisition?: Acquisition
  /** custom field values by key; null clears one, keys not given stay */
  fields?: Record<string, unknown>
}
