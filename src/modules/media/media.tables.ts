import { bigint, index, integer, text } from 'drizzle-orm/pg-core'
import { accountTable } from '../../platform/auth/auth.tables.ts'
import { at } from '../../platform/db/columns.ts'

export const MEDIA_KINDS = ['image', 'video', 'document'] as const
export type MediaKind = (typeof MEDIA_KINDS)[number]
export const MEDIA_USAGES = ['generic', 'landing', 'newsletter', 'template', 'logo', 'avatar', 'blog'] as const
export type MediaUsage = (typeof MEDIA_USAGES)[number]

/** A file of the media library; its bytes are in the storage under storageKey. */
export const media = accountTable(
  'media',
  {
    kind: text('kind', { enum: MEDIA_KINDS }).notNull(),
    usage: text('usage', { enum: MEDIA_USAGES }).notNull(),
    mime: text('mime').notNull(),
    size: bigint('size', { mode: 'number' }).notNull(),
    width: integer('width'),
    height: integer('height'),
    filename: text('filename'),
    /** how it came: file (multipart), url, base64 */
    source: text('source').notNull(),
    storageKey: text('storage_key').notNull(),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    index('media_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
    index('media_kind_created_idx').on(t.accountId, t.kind, t.createdAt.desc(), t.id.desc()),
  ],
)
