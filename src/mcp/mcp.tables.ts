import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountId, accountTable } from '../platform/auth/auth.tables.ts'
import { users } from '../platform/auth/people.tables.ts'
import { at, createdAt } from '../platform/db/columns.ts'

/**
 * Confirm tokens of two-step tools (migration 0033): only the token's hash is kept; a token is bound to its account,
 * credential, tool and argument hash, expires, and is used once.
 */
export const toolConfirmations = accountTable(
  'tool_confirmations',
  {
    tokenHash: text('token_hash').notNull(),
    credentialId: uuid('credential_id').notNull(),
    tool: text('tool').notNull(),
    argumentsHash: text('arguments_hash').notNull(),
    expiresAt: at('expires_at').notNull(),
    usedAt: at('used_at'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('tool_confirmations_token_uq').on(t.tokenHash),
    index('tool_confirmations_expires_idx').on(t.expiresAt),
  ],
)

/** OAuth clients registered dynamically (RFC 7591): public clients, PKCE only; not tied to an account. */
export const oauthClients = pgTable('oauth_clients', {
  clientId: text('client_id').primaryKey(),
  clientName: text('client_name').notNull(),
  redirectUris: text('redirect_uris').array().notNull(),
  createdAt: createdAt(),
})

/** One approval: a member let a client act for an account with these scopes at this resource. */
export const oauthGrants = accountTable(
  'oauth_grants',
  {
    clientId: text('client_id').notNull(),
    scopes: text('scopes').array().notNull(),
    resource: text('resource').notNull(),
    /** the member who approved it (migration 0041): the tokens live only while they are an active member */
    userId: uuid('user_id').references(() => users.id, { onDelete: 'cascade' }),
    revokedAt: at('revoked_at'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('oauth_grants_id_uq').on(t.id)],
)

export const oauthCodes = pgTable('oauth_codes', {
  codeHash: text('code_hash').primaryKey(),
  accountId: accountId(),
  grantId: uuid('grant_id').notNull(),
  clientId: text('client_id').notNull(),
  redirectUri: text('redirect_uri').notNull(),
  codeChallenge: text('code_challenge').notNull(),
  expiresAt: at('expires_at').notNull(),
  usedAt: at('used_at'),
})

export const oauthRefreshTokens = pgTable(
  'oauth_refresh_tokens',
  {
    tokenHash: text('token_hash').primaryKey(),
    accountId: accountId(),
    grantId: uuid('grant_id').notNull(),
    expiresAt: at('expires_at').notNull(),
    usedAt: at('used_at'),
    createdAt: createdAt(),
  },
  (t) => [index('oauth_refresh_tokens_grant_idx').on(t.accountId, t.grantId)],
)
