import { index, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { at, createdAt } from '../db/columns.ts'
import { accountId, accounts } from './auth.tables.ts'

export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const
export type Role = (typeof ROLES)[number]

/** A person who signs in to the web app; an invited person has no password until they accept. */
export const users = pgTable('users', {
  id: uuid('id').primaryKey(),
  email: text('email').notNull(),
  name: text('name').notNull().default(''),
  passwordHash: text('password_hash'),
  language: text('language'),
  passwordChangedAt: at('password_changed_at'),
  createdAt: createdAt(),
})

export const memberships = pgTable(
  'memberships',
  {
    accountId: accountId(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ROLES }).notNull(),
    status: text('status', { enum: ['invited', 'active'] }).notNull(),
    lastActiveAt: at('last_active_at'),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.userId] }),
    index('memberships_user_idx').on(t.userId),
    index('memberships_created_idx').on(t.accountId, t.createdAt, t.userId),
  ],
)

/** Server-side sessions: the cookie holds a random token, the table its hash, so a session can be revoked. */
export const sessions = pgTable(
  'sessions',
  {
    id: uuid('id').primaryKey(),
    tokenHash: text('token_hash').notNull(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    accountId: accountId(),
    createdAt: at('created_at').notNull(),
    lastSeenAt: at('last_seen_at').notNull(),
    expiresAt: at('expires_at').notNull(),
    revokedAt: at('revoked_at'),
  },
  (t) => [uniqueIndex('sessions_token_hash_uq').on(t.tokenHash), index('sessions_user_idx').on(t.userId)],
)

/** Single-use links: first-start setup, invitations and password resets (only the hash is kept). */
export const userTokens = pgTable('user_tokens', {
  tokenHash: text('token_hash').primaryKey(),
  kind: text('kind', { enum: ['setup', 'invite', 'reset'] }).notNull(),
  accountId: uuid('account_id').references(() => accounts.id, { onDelete: 'cascade' }),
  userId: uuid('user_id').references(() => users.id, { onDelete: 'cascade' }),
  email: text('email'),
  role: text('role', { enum: ROLES }),
  expiresAt: at('expires_at').notNull(),
  usedAt: at('used_at'),
  createdAt: at('created_at').notNull(),
})
