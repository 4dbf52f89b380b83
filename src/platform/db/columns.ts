import { timestamp } from 'drizzle-orm/pg-core'

// The column shapes every table writes the same way.

/** A point in time: timestamptz, read as a Date. */
export const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

/** created_at, set by the database when the row is inserted. */
export const createdAt = () => at('created_at').notNull().defaultNow()

/** updated_at, set by the database when the row is inserted and by the writer when it changes it. */
export const updatedAt = () => at('updated_at').notNull().defaultNow()

/** created_at and updated_at, both set by the writer. */
export const timestamps = () => ({ createdAt: at('created_at').notNull(), updatedAt: at('updated_at').notNull() })
