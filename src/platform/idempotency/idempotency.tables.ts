import { index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { accountId } from '../auth/auth.tables.ts'
import { at, createdAt } from '../db/columns.ts'

/** The answers kept for an Idempotency-Key (by account, API key and key), written only by platform/idempotency. */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    accountId: accountId(),
    apiKeyId: uuid('api_key_id').notNull(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    /** null while the first request runs */
    responseStatus: integer('response_status'),
    responseHeaders: jsonb('response_headers').$type<Record<string, string>>(),
    responseBody: text('response_body'),
    lockedUntil: at('locked_until').notNull(),
    expiresAt: at('expires_at').notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.apiKeyId, t.key] }),
    index('idempotency_keys_expires_idx').on(t.expiresAt),
  ],
)
