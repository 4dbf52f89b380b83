import { type BuildExtraConfigColumns, sql } from 'drizzle-orm'
import {
  type AnyPgColumn,
  boolean,
  index,
  integer,
  jsonb,
  type PgColumnBuilderBase,
  type PgTableExtraConfigValue,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'
import { at, createdAt } from '../db/columns.ts'

export const plans = pgTable('plans', {
  name: text('name').primaryKey(),
  contactsLimit: integer('contacts_limit').notNull(),
  messagesPerMonth: integer('messages_per_month').notNull(),
  webhooksLimit: integer('webhooks_limit').notNull(),
  requestsPerMinute: integer('requests_per_minute').notNull().default(120),
  createdAt: createdAt(),
})

export const accounts = pgTable(
  'accounts',
  {
    id: uuid('id').primaryKey(),
    name: text('name').notNull(),
    plan: text('plan')
      .notNull()
      .references(() => plans.name),
    status: text('status', { enum: ['active', 'blocked'] })
      .notNull()
      .default('active'),
    sendingPaused: boolean('sending_paused').notNull().default(false),
    language: text('language').notNull().default('de'),
    timezone: text('timezone').notNull().default('Europe/Berlin'),
    /** ISO 3166-1 alpha-2, for national phone numbers; null: the time zone's country (countries.ts) */
    country: text('country'),
    createdAt: createdAt(),
  },
  (t) => [index('accounts_created_idx').on(t.createdAt.desc(), t.id.desc())],
)

/** account_id: the account a row belongs to, deleted with it. */
export const accountId = () =>
  uuid('account_id')
    .notNull()
    .references(() => accounts.id, { onDelete: 'cascade' })

/** account_id and id, the columns of a row an account owns; the table's key is accountRowKey. */
export const accountRow = () => ({ accountId: accountId(), id: uuid('id').notNull() })
type AccountRowColumns = ReturnType<typeof accountRow>

/** The primary key (account_id, id) of a table of account rows: an id is looked up within its account. */
export const accountRowKey = (t: { accountId: AnyPgColumn; id: AnyPgColumn }) =>
  primaryKey({ columns: [t.accountId, t.id] })

/** A table of rows an account owns: account_id and id come first and are its key (accountRowKey). */
export function accountTable<N extends string, C extends Record<string, PgColumnBuilderBase>>(
  name: N,
  columns: C,
  extraConfig?: (t: BuildExtraConfigColumns<N, AccountRowColumns & C, 'pg'>) => PgTableExtraConfigValue[],
) {
  return pgTable(name, { ...accountRow(), ...columns }, (t) => [accountRowKey(t), ...(extraConfig?.(t) ?? [])])
}

/** account_id as the key of a table with one row per account, deleted with it. */
export const accountIdPrimaryKey = () =>
  uuid('account_id')
    .primaryKey()
    .references(() => accounts.id, { onDelete: 'cascade' })

export const apiKeys = accountTable(
  'api_keys',
  {
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    keyHash: text('key_hash').notNull(),
    scopes: text('scopes').array().notNull(),
    createdAt: createdAt(),
    revokedAt: at('revoked_at'),
  },
  (t) => [uniqueIndex('api_keys_hash_uq').on(t.keyHash), uniqueIndex('api_keys_id_uq').on(t.id)],
)

/** Access tokens of the tool server's OAuth flow; the REST API refuses them. */
export const oauthAccessTokens = accountTable(
  'oauth_access_tokens',
  {
    tokenHash: text('token_hash').notNull(),
    scopes: text('scopes').array().notNull(),
    expiresAt: at('expires_at').notNull(),
    /** the OAuth grant it was issued under (src/mcp/oauth.ts); revoking the grant ends it */
    grantId: uuid('grant_id'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('oauth_access_tokens_hash_uq').on(t.tokenHash)],
)

/** Process-wide facts that must survive restarts (for example: the first-start key was printed). */
export const systemState = pgTable('system_state', {
  key: text('key').primaryKey(),
  value: jsonb('value').notNull(),
  updatedAt: at('updated_at').notNull().default(sql`now()`),
})
