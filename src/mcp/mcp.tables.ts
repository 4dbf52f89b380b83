import { index, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accounts } from '../platform/auth/auth.tables.ts'

const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

/**
 * Confirm tokens of two-step tools (migration 0033): only the token's hash is kept; a token is bound to its account,
 * credential, tool and argument hash, expires, and is used once.
 */
export const toolConfirmations = pgTable(
  'tool_confirmations',
  {
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    id: uuid('id').notNull(),
    tokenHash: text('token_hash').notNull(),
    credentialId: uuid('credential_id').notNull(),
    tool: text('tool').notNull(),
    argumentsHash: text('arguments_hash').notNull(),
    expiresAt: at('expires_at').notNull(),
    usedAt: at('used_at'),
    createdAt: at('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.id] }),
    uniqueIndex('tool_confirmations_token_uq').on(t.tokenHash),
    index('tool_confirmations_expires_idx').on(t.expiresAt),
  ],
)
