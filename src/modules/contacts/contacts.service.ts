import type { SQL } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { anonymizeContactEvents, recordEvent } from '../../platform/events/events.ts'
import { emitSignals } from '../../platform/events/signals.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { timeOrderedId } from '../../platform/ids.ts'
import { contactsBulkService } from './contacts.bulk.service.ts'
import {
  assertFieldConditions,
  fieldConditionContext,
  fieldConditionsSql,
  parseFieldConditionsParam,
} from './contacts.field-conditions.ts'
import { applyFieldChange, type FieldValueChange, sameFieldValues } from './contacts.fields.rules.ts'
import { checkedFieldChange, contactFieldsService } from './contacts.fields.service.ts'
import { importBatchSize } from './contacts.import.ts'
import {
  type ContactInput,
  type ContactsServiceDeps,
  type ContactsTenant,
  type ContactView,
  contactEventData,
  contactView,
} from './contacts.ports.ts'
import * as repo from './contacts.repository.ts'
import {
  displayTags,
  isSystemTagName,
  normalizeEmail,
  normalizePhone,
  optinResets,
  planTagAddition,
  searchTerms,
  TAG_COUNT_SAMPLE,
} from './contacts.rules.ts'

const EMAIL_OR_PHONE = 'A contact needs an email or a phone'

function phoneOrThrow(raw: string | null | undefined, field = 'phone'): string {
  if (raw === undefined || raw === null || raw.trim() === '') return ''
  const phone = normalizePhone(raw)
  if (phone === null) {
    throw badRequest(
      `${field} must be a valid phone number in international format, such as +49 151 23456789`,
      'bad_request',
      {
        field,
      },
    )
  }
  return phone
}

const emailOf = (raw: string | null | undefined) => (raw ? normalizeEmail(raw) : '')

function duplicateError(contactId: string, by: { email: boolean; phone: boolean }): AppError {
  const key = by.email && by.phone ? 'kontakt_doppelt' : by.email ? 'kontakt_email_doppelt' : 'kontakt_nummer_doppelt'
  const what = by.email && by.phone ? 'email and phone' : by.email ? 'email' : 'phone'
  return new AppError(409, 'contact_exists', `A contact with this ${what} already exists`, {
    key,
    details: { contact_id: contactId },
  })
}

/** A unique index refused a write that a concurrent request won; the loser reports the winner like any duplicate. */
function uniqueViolation(error: unknown): 'email' | 'phone' | null {
  for (let e = error as { code?: string; constraint?: string; message?: string; cause?: unknown } | undefined; e; ) {
    if (e.code === '23505') {
      const text = `${e.constraint ?? ''} ${e.message ?? ''}`
      return text.includes('contacts_phone_uq') ? 'phone' : text.includes('contacts_email_uq') ? 'email' : null
    }
    e = e.cause as typeof e
  }
  return null
}

export function contactsService(deps: ContactsServiceDeps) {
  const { db, clock } = deps

  async function withTags(tx: Db, accountId: string, rows: repo.ContactRow[]): Promise<ContactView[]> {
    const tags = await repo.tagsOf(
      tx,
      accountId,
      rows.map((r) => r.id),
    )
    return rows.map((row) =>
      contactView(
        row,
        tags.filter((t) => t.contactId === row.id),
      ),
    )
  }

  async function lockedContact(tx: Db, accountId: string, id: string): Promise<repo.ContactRow> {
    const row = await repo.findContact(tx, accountId, id, { lock: true })
    if (!row) throw notFound('contact')
    return row
  }

  /** Runs a write; a unique violation it lost to a concurrent request becomes 409 contact_exists. */
  async function guardDuplicates<T>(
    tenant: ContactsTenant,
    address: { email: string; phone: string },
    write: () => Promise<T>,
  ): Promise<T> {
    try {
      return await write()
    } catch (error) {
      const field = uniqueViolation(error)
      if (!field) throw error
      const [holder] = await repo.findByAddress(db, tenant.accountId, {
        email: field === 'email' ? address.email : '',
        phone: field === 'phone' ? address.phone : '',
      })
      if (!holder) throw error
      throw duplicateError(holder.id, { email: field === 'email', phone: field === 'phone' })
    }
  }

  /** Applies new addresses and name to a locked contact; resets the opt-in of a changed address. */
  async function applyChange(
    tx: Db,
    row: repo.ContactRow,
    next: { name: string; email: string; phone: string },
    source: string,
    fieldChange: FieldValueChange | null,
  ): Promise<{ row: repo.ContactRow; updated: boolean }> {
    const resets = optinResets(row, next)
    const fields = fieldChange ? applyFieldChange(row.fields, fieldChange) : row.fields
    const fieldsChanged = !sameFieldValues(fields, row.fields)
    const updated =
      resets.length > 0 ||
      fieldsChanged ||
      next.name !== row.name ||
      next.email !== row.email ||
      next.phone !== row.phone
    if (!updated) return { row, updated }
    const change: Parameters<typeof repo.updateContact>[3] = { ...next, ...(fieldsChanged ? { fields } : {}) }
    for (const reset of resets) change[reset.channel === 'chat' ? 'optinChat' : 'optinEmail'] = 'none'
    const saved = await repo.updateContact(tx, row.accountId, row.id, change)
    await repo.insertConsentRecords(
      tx,
      resets.map((reset) => ({
        accountId: row.accountId,
        contactId: row.id,
        channel: reset.channel,
        fromState: reset.from,
        toState: 'none' as const,
        source,
        address: reset.address,
        evidence: { reason: reset.channel === 'chat' ? 'phone_changed' : 'email_changed' },
        recordedAt: clock.now(),
      })),
    )
    return { row: saved, updated }
  }

  /** GET /contacts?fields=: the conditions (a JSON array) as SQL on `contacts`, checked (400); null without any. */
  async function fieldFilter(tenant: ContactsTenant, raw: string | undefined): Promise<SQL | null> {
    if (raw === undefined) return null
    const conditions = parseFieldConditionsParam(raw, 'query.fields')
    if (conditions.length === 0) return null
    const context = await fieldConditionContext(db, tenant.accountId, clock.now(), tenant.account.timezone)
    assertFieldConditions(conditions, context.definitions, 'query.fields')
    return fieldConditionsSql(conditions, context, 'contacts')
  }

  const service = {
    /** the account's custom field definitions (/v1/contact-fields) */
    fields: contactFieldsService({ db, clock }),
    /** the account-wide work: lookups, counts, tags by name, bulk changes by filter, export, consent history, import */
    bulk: contactsBulkService(
      { db, clock, importBatch: deps.importBatch ?? importBatchSize('postgres') },
      (tenant, id, options): Promise<unknown> => service.delete(tenant, id, options),
    ),

    async list(
      tenant: ContactsTenant,
      query: { q?: string; limit: number; offset: number; created_after?: string; fields?: string },
    ): Promise<ReturnType<typeof toPage<ContactView>> & { q?: string }> {
      const terms = query.q === undefined ? null : searchTerms(query.q)
      const byFields = await fieldFilter(tenant, query.fields)
      if (!terms && !byFields) {
        const rows = await repo.pageOfContacts(db, tenant.accountId, {
          createdAfter: query.created_after ? new Date(query.created_after) : undefined,
          limit: query.limit,
          offset: query.offset,
        })
        const page = toPage(rows, query.limit, query.offset)
        const items = page.items.map((r) => contactView(r.contact, r.tags))
        return { ...page, items, ...(query.q === undefined ? {} : { q: query.q.trim() }) }
      }
      const rows = await repo.listContacts(db, tenant.accountId, {
        terms,
        byFields,
        createdAfter: query.created_after ? new Date(query.created_after) : undefined,
        limit: query.limit,
        offset: query.offset,
      })
      const page = toPage(rows, query.limit, query.offset)
      const items = await withTags(db, tenant.accountId, page.items)
      return { ...page, items, ...(query.q === undefined ? {} : { q: query.q.trim() }) }
    },

    /**
     * list's response body as JSON text, the contacts written by the database (pageOfContactsJson), for GET /contacts
     * without a search; null when q searches (list answers that).
     */
    async listJson(
      tenant: ContactsTenant,
      query: { q?: string; limit: number; offset: number; created_after?: string; fields?: string },
    ): Promise<string | null> {
      if (query.q !== undefined && searchTerms(query.q)) return null
      if (query.fields !== undefined) return null
      const { json, hasMore } = await repo.pageOfContactsJson(db, tenant.accountId, {
        createdAfter: query.created_after ? new Date(query.created_after) : undefined,
        limit: query.limit,
        offset: query.offset,
      })
      const rest = {
        limit: query.limit,
        offset: query.offset,
        has_more: hasMore,
        next_offset: hasMore ? query.offset + query.limit : null,
        ...(query.q === undefined ? {} : { q: query.q.trim() }),
      }
      return `{"contacts":${json},${JSON.stringify(rest).slice(1)}`
    },

    /** GET /contacts/{id}'s body as JSON text, the contact written by the database (repo.contactJson). */
    async getJson(tenant: ContactsTenant, id: string): Promise<string> {
      const json = await repo.contactJson(db, tenant.accountId, id)
      if (json === undefined) throw notFound('contact')
      return `{"contact":${json}}`
    },

    /** One contact; the lookups of requests that arrive together are one statement. */
    async get(tenant: ContactsTenant, id: string): Promise<ContactView> {
      const found = await repo.contactWithTagsBatched(db, tenant.accountId, id)
      if (!found) throw notFound('contact')
      return contactView(found.contact, found.tags)
    },

    /**
     * Creates a contact, or with `upsert` updates the one holding the email or phone. A unique index decides
     * between concurrent creates of one address: the loser sees the winner's row and answers like a duplicate.
     */
    async create(
      tenant: ContactsTenant,
      input: ContactInput,
      options: { upsert: boolean; source?: string },
    ): Promise<{ created: boolean; updated: boolean; contact: ContactView }> {
      const email = emailOf(input.email)
      const phone = phoneOrThrow(input.phone)
      if (email === '' && phone === '') throw badRequest(EMAIL_OR_PHONE, 'email_or_phone_required')
      const source = options.source ?? 'api'
      return guardDuplicates(tenant, { email, phone }, () =>
        db.transaction(async (tx) => {
          const fieldChange = await checkedFieldChange(tx, tenant.accountId, input.fields)
          for (let attempt = 1; ; attempt++) {
            const matches = await repo.findByAddress(tx, tenant.accountId, { email, phone })
            const byEmail = email === '' ? undefined : matches.find((m) => m.email === email)
            const byPhone = phone === '' ? undefined : matches.find((m) => m.phone === phone)
            if (byEmail && byPhone && byEmail.id !== byPhone.id) {
              throw new AppError(409, 'contact_conflict', 'The email and the phone belong to two different contacts', {
                key: 'contact_conflict',
                details: { contact_ids: [byEmail.id, byPhone.id] },
              })
            }
            const existing = byEmail ?? byPhone
            if (existing && !options.upsert) {
              throw duplicateError(existing.id, { email: byEmail !== undefined, phone: byPhone !== undefined })
            }
            if (existing) {
              const next = {
                name: input.name ?? existing.name,
                email: email || existing.email,
                phone: phone || existing.phone,
              }
              const { row, updated } = await applyChange(tx, existing, next, source, fieldChange)
              const [contact] = await withTags(tx, tenant.accountId, [row])
              return { created: false, updated, contact }
            }
            const inserted = await repo.insertContact(tx, {
              accountId: tenant.accountId,
              id: timeOrderedId(),
              name: input.name ?? '',
              email,
              phone,
              language: tenant.account.language,
              source,
              acquisition: input.acquisition ?? 'marketing',
              fields: fieldChange?.set ?? {},
              createdAt: clock.now(),
            })
            // A concurrent create committed this address after our look-up: look again and treat it as existing.
            if (!inserted && attempt < 3) continue
            if (!inserted) throw new AppError(409, 'contact_exists', 'A concurrent request created this contact')
            const limit = await repo.contactsLimitOf(tx, tenant.account.plan)
            if (!(await repo.reserveContacts(tx, tenant.accountId, 1, limit))) {
              throw new AppError(403, 'limit_reached', `The plan's limit of ${limit} contacts is reached`)
            }
            const contact = contactView(inserted, [])
            await recordEvent(tx, clock, {
              accountId: tenant.accountId,
              name: 'contact.created',
              contactId: inserted.id,
              data: contactEventData(contact),
            })
            return { created: true, updated: false, contact }
          }
        }),
      )
    },

    /**
     * The public sign-up's write, which no one signed in vouches for: an address that already belongs to a contact
     * changes nothing on that contact (name, the other address and fields stay as they are); the addresses that
     * belong to no contact become one new contact with the given name. Answers which contact holds each given
     * address (null for an address not given). Bad input is a 400 as in create.
     */
    async createOrKeep(
      tenant: ContactsTenant,
      input: { name?: string; email?: string; phone?: string },
      source: string,
    ): Promise<{ email: string | null; phone: string | null }> {
      const email = emailOf(input.email)
      const phone = phoneOrThrow(input.phone)
      if (email === '' && phone === '') throw badRequest(EMAIL_OR_PHONE, 'email_or_phone_required')
      for (let attempt = 1; ; attempt++) {
        const matches = await repo.findByAddress(db, tenant.accountId, { email, phone })
        const byEmail = email === '' ? undefined : matches.find((m) => m.email === email)
        const byPhone = phone === '' ? undefined : matches.find((m) => m.phone === phone)
        const fresh = { email: byEmail ? '' : email, phone: byPhone ? '' : phone }
        let created: string | null = null
        if (fresh.email !== '' || fresh.phone !== '') {
          try {
            const result = await this.create(
              tenant,
              {
                ...(input.name ? { name: input.name } : {}),
                ...(fresh.email ? { email: fresh.email } : {}),
                ...(fresh.phone ? { phone: fresh.phone } : {}),
              },
              { upsert: false, source },
            )
            created = result.contact.id
          } catch (error) {
            // a concurrent sign-up created one of the addresses after the look-up: look again
            if (error instanceof AppError && error.code === 'contact_exists' && attempt < 3) continue
            throw error
          }
        }
        return {
          email: email === '' ? null : (byEmail?.id ?? created),
          phone: phone === '' ? null : (byPhone?.id ?? created),
        }
      }
    },

    /** Only given fields change; null clears email or phone, but one of them must remain. */
    async update(
      tenant: ContactsTenant,
      id: string,
      input: {
        name?: string | null
        email?: string | null
        phone?: string | null
        fields?: Record<string, unknown>
      },
    ) {
      const email = input.email === undefined ? undefined : emailOf(input.email)
      const phone = input.phone === undefined ? undefined : phoneOrThrow(input.phone)
      return guardDuplicates(tenant, { email: email ?? '', phone: phone ?? '' }, () =>
        db.transaction(async (tx) => {
          const row = await lockedContact(tx, tenant.accountId, id)
          const fieldChange = await checkedFieldChange(tx, tenant.accountId, input.fields)
          const next = {
            name: input.name === undefined ? row.name : (input.name ?? ''),
            email: email ?? row.email,
            phone: phone ?? row.phone,
          }
          if (next.email === '' && next.phone === '') throw badRequest(EMAIL_OR_PHONE, 'email_or_phone_required')
          const others = (
            await repo.findByAddress(tx, tenant.accountId, {
              email: next.email === row.email ? '' : next.email,
              phone: next.phone === row.phone ? '' : next.phone,
            })
          ).filter((m) => m.id !== row.id)
          const other = others[0]
          if (other) {
            const byEmail = next.email !== '' && other.email === next.email
            const byPhone = next.phone !== '' && other.phone === next.phone
            throw duplicateError(other.id, { email: byEmail, phone: byPhone })
          }
          const { row: saved } = await applyChange(tx, row, next, 'api', fieldChange)
          const [contact] = await withTags(tx, tenant.accountId, [saved])
          return contact
        }),
      )
    },

    /**
     * Removes what the other modules' cleanups remove (their reactions.contactCleanup: send jobs, conversations and
     * messages, automation runs…), the tags, then the contact, in one transaction; events and consent records stay,
     * anonymized.
     */
    async delete(tenant: ContactsTenant, id: string, options: { requestedByContact: boolean }) {
      return db.transaction(async (tx) => {
        const row = await lockedContact(tx, tenant.accountId, id)
        const [contact] = await withTags(tx, tenant.accountId, [row])
        const removed: Record<string, number> = {}
        for (const cleanup of deps.deletion.cleanups) {
          for (const [table, count] of Object.entries(await cleanup(tx, tenant.accountId, id))) {
            removed[table] = (removed[table] ?? 0) + count
          }
        }
        removed.contact_tags = await repo.deleteAllTags(tx, tenant.accountId, id)
        const confirmation = deps.deletion.confirmation
        const confirmationSent =
          options.requestedByContact && confirmation
            ? await confirmation(tx, deps.clock, tenant.accountId, contact)
            : false
        removed.contacts = await repo.deleteContactRow(tx, tenant.accountId, id)
        await repo.releaseContacts(tx, tenant.accountId, removed.contacts)
        const anonymized = {
          events: await anonymizeContactEvents(tx, tenant.accountId, id),
          consent_records: await repo.anonymizeConsentRecords(tx, tenant.accountId, id),
        }
        return { removed, confirmationSent, anonymized }
      })
    },

    async addTags(tenant: ContactsTenant, id: string, names: string[]) {
      if (names.length === 0) throw badRequest('Give a tag or tags', 'tag_required')
      const system = names.filter(isSystemTagName)
      if (system.length > 0) {
        throw badRequest(`System tags cannot be added through the API: ${system.join(', ')}`, 'system_tag', {
          tags: system,
        })
      }
      return db.transaction(async (tx) => {
        await lockedContact(tx, tenant.accountId, id)
        const existing = await repo.tagsOf(tx, tenant.accountId, [id])
        const plan = planTagAddition(
          displayTags(existing).map((t) => t.name),
          names,
        )
        const added = plan.added.map((name) => ({
          accountId: tenant.accountId,
          contactId: id,
          name,
          origin: 'manuell' as const,
        }))
        await repo.insertTags(tx, added)
        await emitSignals(
          tx,
          clock,
          added.map((tag) => ({
            accountId: tenant.accountId,
            name: 'tag.added',
            contactId: id,
            data: { tag: tag.name },
          })),
        )
        return { tags: displayTags([...existing, ...added]), added: plan.added, rejected: plan.rejected }
      })
    },

    async removeTag(tenant: ContactsTenant, id: string, name: string) {
      return db.transaction(async (tx) => {
        await lockedContact(tx, tenant.accountId, id)
        const existing = await repo.tagsOf(tx, tenant.accountId, [id])
        if (isSystemTagName(name) || existing.some((t) => t.name === name && t.origin === 'system')) {
          throw badRequest(`The system tag ${name} cannot be removed through the API`, 'system_tag', { tags: [name] })
        }
        const count = await repo.deleteTag(tx, tenant.accountId, id, name)
        return { removed: count > 0, tags: displayTags(existing.filter((t) => t.name !== name)) }
      })
    },

    /** Tag counts over the newest 1000 contacts; never counts the whole table. */
    async tagCounts(tenant: ContactsTenant) {
      const ids = await repo.newestContactIds(db, tenant.accountId, TAG_COUNT_SAMPLE)
      const sample = ids.slice(0, TAG_COUNT_SAMPLE)
      const counts = await repo.countTags(db, tenant.accountId, sample)
      counts.sort((a, b) => b.count - a.count || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      return { tags: counts, checked: sample.length, capped: ids.length > TAG_COUNT_SAMPLE }
    },
  }
  return service
}

export type ContactsService = ReturnType<typeof contactsService>
