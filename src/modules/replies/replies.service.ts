import { randomUUID } from 'node:crypto'
import { asc, sql } from 'drizzle-orm'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import { accountRowById, findAccountRow, inAccount } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { UUID } from '../../platform/tools/common.ts'
import { fieldDefinitionsOf } from '../contacts/index.ts'
import { customFieldTexts, extractVariables, renderTemplate, unfilledVariables } from '../templates/index.ts'
import { unknownVariables } from './replies.rules.ts'
import { type SavedReplyRow, savedReplies } from './replies.tables.ts'

/** At most this many saved replies per account: the reply box's picker lists them all. */
export const MAX_SAVED_REPLIES = 500

export type RepliesTenant = Pick<TenantContext, 'accountId' | 'account'>

export interface RepliesDeps {
  db: Db
  clock: Clock
  /** HEROLD_PUBLIC_URL: a media file's address is `<publicUrl>/public/media/<storage key>` */
  publicUrl: string
}

interface MediaRef {
  media_id: string
  url: string
  mime_type: string
  kind: string
  filename: string | null
}

export interface SavedReplyView {
  id: string
  code: string
  title: string
  text: string
  variables: string[]
  media: MediaRef | null
  created_at: string
  updated_at: string
}

export interface SavedReplyInput {
  code: string
  title: string
  text: string
  media_id?: string | null
}

const rowsOf = <T>(result: unknown) => (result as { rows: T[] }).rows

/** The code as stored: without a leading slash (`/danke` and `danke` are the same code). */
const codeOf = (code: string) => code.replace(/^\//, '')

/** A unique index refused the code: another saved reply of the account has it. */
function isUniqueViolation(error: unknown): boolean {
  for (let e = error as { code?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === '23505') return true
  }
  return false
}

const codeTaken = (code: string) =>
  new AppError(409, 'saved_reply_code_taken', `A saved reply with the code /${code} exists already`, {
    details: { taken_code: code },
  })

export function repliesService(deps: RepliesDeps) {
  const { db, clock, publicUrl } = deps

  /** The media library files of the account by id (one read). */
  async function mediaOf(accountId: string, ids: string[]): Promise<Map<string, MediaRef>> {
    const wanted = [...new Set(ids)].filter((id) => UUID.test(id))
    if (wanted.length === 0) return new Map()
    const found = await db.execute(sql`SELECT id, kind, mime, filename, storage_key FROM media
      WHERE account_id = ${accountId} AND id IN (${sql.join(
        wanted.map((id) => sql`${id}::uuid`),
        sql`, `,
      )})`)
    const rows = rowsOf<{ id: string; kind: string; mime: string; filename: string | null; storage_key: string }>(found)
    return new Map(
      rows.map((m) => [
        m.id,
        {
          media_id: m.id,
          url: `${publicUrl}/public/media/${m.storage_key}`,
          mime_type: m.mime,
          kind: m.kind,
          filename: m.filename,
        },
      ]),
    )
  }

  async function views(accountId: string, rows: SavedReplyRow[]): Promise<SavedReplyView[]> {
    const media = await mediaOf(
      accountId,
      rows.flatMap((r) => (r.mediaId ? [r.mediaId] : [])),
    )
    return rows.map((r) => ({
      id: r.id,
      code: r.code,
      title: r.title,
      text: r.text,
      variables: extractVariables(r.text),
      media: r.mediaId ? (media.get(r.mediaId) ?? null) : null,
      created_at: r.createdAt.toISOString(),
      updated_at: r.updatedAt.toISOString(),
    }))
  }

  async function find(tenant: RepliesTenant, id: string): Promise<SavedReplyRow> {
    const row = UUID.test(id) ? await findAccountRow(db, savedReplies, tenant.accountId, id) : null
    if (!row) throw notFound('saved reply')
    return row
  }

  /** 400 naming every variable that no contact can fill (neither a contact variable nor a custom field). */
  async function checkText(tenant: RepliesTenant, text: string) {
    const fields = (await fieldDefinitionsOf(db, tenant.accountId)).map((f) => f.key)
    const unknown = unknownVariables(text, fields)
    if (unknown.length > 0) {
      throw badRequest(
        `Unknown variables: ${unknown.map((u) => u.name).join(', ')}; a saved reply can use name, full_name, email, phone and the account's custom fields`,
        'saved_reply_unknown_variable',
        { variables: unknown },
      )
    }
  }

  /** 404 media_not_found for a media id that is no file of the account's media library. */
  async function checkMedia(tenant: RepliesTenant, mediaId: string | null | undefined) {
    if (!mediaId) return
    if (!(await mediaOf(tenant.accountId, [mediaId])).has(mediaId)) {
      throw new AppError(404, 'not_found', `media ${mediaId} not found`, {
        key: 'media_not_found',
        details: { media_id: mediaId },
      })
    }
  }

  /** The contact a render is for: the conversation's, or the one named; 404 for another account's. */
  async function contactFor(tenant: RepliesTenant, target: { conversation_id?: string; contact_id?: string }) {
    if ((target.conversation_id === undefined) === (target.contact_id === undefined)) {
      throw badRequest('Give exactly one of conversation_id and contact_id', 'conversation_or_contact')
    }
    let contactId = target.contact_id
    if (target.conversation_id !== undefined) {
      if (!UUID.test(target.conversation_id)) throw notFound('conversation')
      const found = await db.execute(sql`SELECT contact_id FROM conversations
        WHERE account_id = ${tenant.accountId} AND id = ${target.conversation_id}`)
      const [conversation] = rowsOf<{ contact_id: string }>(found)
      if (!conversation) throw notFound('conversation')
      contactId = conversation.contact_id
    }
    if (!contactId || !UUID.test(contactId)) throw notFound('contact')
    const found = await db.execute(sql`SELECT id, name, email, phone, language, fields FROM contacts
      WHERE account_id = ${tenant.accountId} AND id = ${contactId}`)
    const [contact] = rowsOf<{
      id: string
      name: string | null
      email: string | null
      phone: string | null
      language: string | null
      fields: Record<string, unknown> | null
    }>(found)
    if (!contact) throw notFound('contact')
    return contact
  }

  return {
    /** GET /app/saved-replies: by code; `q` finds a part of the code or the title, ignoring case. */
    async list(tenant: RepliesTenant, query: { q?: string }) {
      const q = query.q?.trim().replace(/^\//, '').toLowerCase() ?? ''
      const like = `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
      const rows = await db
        .select()
        .from(savedReplies)
        .where(
          inAccount(
            savedReplies,
            tenant.accountId,
            q === ''
              ? undefined
              : sql`(${savedReplies.code} LIKE ${like} OR lower(${savedReplies.title}) LIKE ${like})`,
          ),
        )
        .orderBy(asc(savedReplies.code))
      return { saved_replies: await views(tenant.accountId, rows) }
    },

    async get(tenant: RepliesTenant, id: string) {
      const [view] = await views(tenant.accountId, [await find(tenant, id)])
      return view
    },

    async create(tenant: RepliesTenant, input: SavedReplyInput) {
      const code = codeOf(input.code)
      await checkText(tenant, input.text)
      await checkMedia(tenant, input.media_id)
      const [{ n }] = rowsOf<{ n: number }>(
        await db.execute(sql`SELECT count(*)::int AS n FROM saved_replies WHERE account_id = ${tenant.accountId}`),
      )
      if (n >= MAX_SAVED_REPLIES) {
        throw new AppError(
          409,
          'saved_reply_limit_reached',
          `An account has at most ${MAX_SAVED_REPLIES} saved replies`,
        )
      }
      const now = clock.now()
      const row = {
        accountId: tenant.accountId,
        id: randomUUID(),
        code,
        title: input.title,
        text: input.text,
        mediaId: input.media_id ?? null,
        createdAt: now,
        updatedAt: now,
      }
      try {
        await db.insert(savedReplies).values(row)
      } catch (error) {
        if (isUniqueViolation(error)) throw codeTaken(code)
        throw error
      }
      const [view] = await views(tenant.accountId, [row])
      return view
    },

    async update(tenant: RepliesTenant, id: string, change: Partial<SavedReplyInput>) {
      const row = await find(tenant, id)
      if (change.text !== undefined) await checkText(tenant, change.text)
      if (change.media_id) await checkMedia(tenant, change.media_id)
      const set = {
        ...(change.code !== undefined ? { code: codeOf(change.code) } : {}),
        ...(change.title !== undefined ? { title: change.title } : {}),
        ...(change.text !== undefined ? { text: change.text } : {}),
        ...(change.media_id !== undefined ? { mediaId: change.media_id } : {}),
        updatedAt: clock.now(),
      }
      try {
        await db
          .update(savedReplies)
          .set(set)
          .where(accountRowById(savedReplies, tenant.accountId, id))
      } catch (error) {
        if (isUniqueViolation(error)) throw codeTaken(set.code ?? row.code)
        throw error
      }
      return this.get(tenant, id)
    },

    async remove(tenant: RepliesTenant, id: string) {
      await find(tenant, id)
      await db.delete(savedReplies).where(accountRowById(savedReplies, tenant.accountId, id))
      return { id, deleted: true as const }
    },

    /**
     * POST /app/saved-replies/{id}/render: the text for one contact (the conversation's, or the one named), its
     * variables filled as a template's are (templates' renderTemplate: `name` is the first name, custom fields their
     * value or default in the contact's language). A variable without a value is 422 invalid_variables naming it:
     * nothing is ever sent with an empty value. `sending`: the reply is about to be sent, so a media file that is no
     * longer in the library is 409 saved_reply_media_missing (a preview shows the reply without it).
     */
    async render(
      tenant: RepliesTenant,
      id: string,
      target: { conversation_id?: string; contact_id?: string },
      options: { sending?: boolean } = {},
    ) {
      const row = await find(tenant, id)
      const [reply] = await views(tenant.accountId, [row])
      if (options.sending && row.mediaId && !reply.media) {
        // the file left the media library after the reply was saved (a delete racing the usage check, an account
        // clean-up): the reply is not sent without it
        throw new AppError(
          409,
          'saved_reply_media_missing',
          `The file of saved reply /${row.code} is no longer in the media library; nothing was sent`,
          { key: 'media_not_found', details: { media_id: row.mediaId, saved_reply_id: row.id } },
        )
      }
      const contact = await contactFor(tenant, target)
      const language = contact.language?.trim() || tenant.account.language
      const definitions = await fieldDefinitionsOf(db, tenant.accountId)
      const rendered = renderTemplate({
        texts: reply.text,
        language,
        contact: {
          name: contact.name ?? '',
          email: contact.email ?? '',
          phone: contact.phone ?? '',
          customFields: customFieldTexts(definitions, contact.fields, language),
        },
        values: {},
        customFields: definitions.map((d) => d.key),
      })
      if (!rendered.ok) {
        const names = unfilledVariables(rendered)
        throw new AppError(
          422,
          'invalid_variables',
          `Invalid variables: ${names.join(', ')} would stay unfilled (the contact has no value for it); nothing is sent`,
          { key: 'invalid_variables', details: { variables: names.map((name) => ({ name, problem: 'no_value' })) } },
        )
      }
      return {
        saved_reply_id: reply.id,
        contact_id: contact.id,
        text: rendered.texts[0],
        media: reply.media,
      }
    },
  }
}

export type RepliesService = ReturnType<typeof repliesService>
