import { index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { accounts } from '../auth/auth.tables.ts'

/** The outbox: every domain event, written in the same transaction as the change it reports. */
export const events = pgTable(
  'events',
  {
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    id: uuid('id').notNull(),
    /** `contact.created`, `message.received`, `conversation.created` */
    name: text('name').notNull(),
    /** the contact the event is about, so a contact's deletion can anonymize its events */
    contactId: uuid('contact_id'),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.id] }),
    index('events_contact_idx').on(t.accountId, t.contactId),
    index('events_created_idx').on(t.accountId, t.createdAt),
  ],
)
