import type { SQL } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { recordEvent } from '../../platform/events/events.ts'
import { AppError, badRequest } from '../../platform/http/errors.ts'
import { timeOrderedId } from '../../platform/ids.ts'
import { contactEventData, contactView } from './contacts.ports.ts'
import * as repo from './contacts.repository.ts'
import { normalizeEmail, normalizePhone } from './contacts.rules.ts'

// The contacts other modules' inbound messages and lists are about.

/**
 * The contact an inbound message comes from, by E.164 phone or e-mail, created when unknown (opt-ins `none`,
 * source `inbound`, `contact.created` recorded) in the caller's transaction. A customer's message is never
 * refused for the plan's contact limit: the contact is counted, but the limit is not enforced here.
 */
export async function findOrCreateInboundContact(
  tx: Db,
  clock: Clock,
  input: { accountId: string; language: string; phone?: string; email?: string; name: string },
): Promise<{ contactId: string; created: boolean }> {
  const phone = input.phone ? (normalizePhone(input.phone) ?? '') : ''
  const email = input.email ? normalizeEmail(input.email) : ''
  if (phone === '' && email === '') throw badRequest('An inbound message needs a valid phone or e-mail sender')
  for (let attempt = 1; attempt <= 3; attempt++) {
    const [existing] = await repo.findByAddress(
      tx,
      input.accountId,
      phone ? { email: '', phone } : { email, phone: '' },
    )
    if (existing) return { contactId: existing.id, created: false }
    const inserted = await repo.insertContact(tx, {
      accountId: input.accountId,
      id: timeOrderedId(),
      name: input.name.slice(0, 120),
      email,
      phone,
      language: input.language,
      source: 'inbound',
      acquisition: 'service',
      createdAt: clock.now(),
    })
    if (!inserted) continue
    await repo.reserveContacts(tx, input.accountId, 1, 2_147_483_647)
    await recordEvent(tx, clock, {
      accountId: input.accountId,
      name: 'contact.created',
      contactId: inserted.id,
      data: contactEventData(contactView(inserted, [])),
    })
    return { contactId: inserted.id, created: true }
  }
  throw new AppError(409, 'contact_exists', 'A concurrent request created this contact')
}

/**
 * The contacts inbound messages are from, as SQL for the inbox's first statement of a batch of messages (a CTE body
 * with the columns `ord`, the sender's position in `senders`, and `id`, locked as findOrCreateInboundContact locks
 * it). A sender with no contact, or with no valid address (findOrCreateInboundContact then says why), has no row.
 */
export function inboundContactsSql(accountId: string, senders: Array<{ phone?: string; email?: string }>): SQL {
  return repo.idsByAddressesSql(
    accountId,
    senders.map((input) => {
      const phone = input.phone ? (normalizePhone(input.phone) ?? '') : ''
      const email = input.email ? normalizeEmail(input.email) : ''
      return phone ? { email: '', phone } : { email, phone: '' }
    }),
  )
}

/** Names of the given contacts (for lists of other modules that show who a row is about). */
export async function contactNames(db: Db, accountId: string, ids: string[]): Promise<Map<string, string>> {
  const names = new Map<string, string>()
  for (const id of new Set(ids)) {
    const row = await repo.findContact(db, accountId, id)
    if (row) names.set(id, row.name)
  }
  return names
}
