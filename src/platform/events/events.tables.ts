import { index, jsonb, text, uuid } from 'drizzle-orm/pg-core'
import { accountTable } from '../auth/auth.tables.ts'
import { createdAt } from '../db/columns.ts'

/** The outbox: every domain event, written in the same transaction as the change it reports. */
export const events = accountTable(
  'events',
  {
    /** `contact.created`, `message.received`, `conversation.created` */
    name: text('name').notNull(),
    /** the contact the event is about, so a contact's deletion can anonymize its events */
    contactId: uuid('contact_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index('events_contact_idx').on(t.accountId, t.contactId),
    index('events_created_idx').on(t.accountId, t.createdAt),
  ],
)
