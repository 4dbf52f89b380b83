import { badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { sendRecordView } from '../../platform/http/statistics.ts'
import { checkFieldConditions, fieldDefinitionsOf } from '../contacts/index.ts'
import {
  customFieldTexts,
  mayUseCustomFields,
  renderTemplate,
  unfilledVariables,
  valueLanguage,
} from '../templates/index.ts'
import { type NewslettersDeps, type NewslettersTenant, segmentFields } from './newsletters.context.ts'
import * as repo from './newsletters.repository.ts'
import type { NewsletterSegment } from './newsletters.tables.ts'
import { templateBody } from './newsletters.view.ts'

// Who a newsletter reaches: the segment's check, the estimate, one contact's preview and the recipients snapshot.

/** 400 naming the segment's tags that no contact of the account carries, or a field condition that does not fit. */
export async function assertSegment(deps: NewslettersDeps, accountId: string, segment: NewsletterSegment) {
  await assertTagsExist(deps, accountId, segment)
  await checkFieldConditions(deps.db, accountId, segment.fields, 'segment.fields')
}

/** 400 naming the segment's tags that no contact of the account carries. */
async function assertTagsExist(deps: NewslettersDeps, accountId: string, segment: NewsletterSegment) {
  const named = [
    ...new Set([...(segment.tags_any ?? []), ...(segment.tags_all ?? []), ...(segment.tags_exclude ?? [])]),
  ]
  if (named.length === 0) return
  const known = await repo.knownTags(deps.db, accountId, named)
  const unknown = named.filter((n) => !known.has(n))
  if (unknown.length > 0) {
    throw badRequest(`The segment names tags that do not exist: ${unknown.join(', ')}`, 'segment_unknown_tags', {
      tags: unknown,
    })
  }
}

/** POST /app/newsletters/estimate: how many contacts a segment selects now, before it is saved. Reads only. */
export async function estimateRecipients(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  segment: NewsletterSegment | null,
) {
  if (segment) await assertSegment(deps, tenant.accountId, segment)
  const fields = await segmentFields(deps, tenant, segment)
  return { recipients_estimate: await repo.countRecipients(deps.db, tenant.accountId, segment, fields), segment }
}

/**
 * GET /newsletters/{id}/preview: the text one contact would get (variables filled as the send fills them), its
 * button and whether the contact is a recipient now. Reads only.
 */
export async function previewForContact(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  id: string,
  contactId: string,
) {
  const { db } = deps
  const row = await repo.requireNewsletter(db, tenant.accountId, id)
  if (!repo.isUuid(contactId)) throw notFound('contact')
  const segment = row.segment ?? null
  const contact = await repo.previewContact(
    db,
    tenant.accountId,
    contactId,
    segment,
    await segmentFields(deps, tenant, segment),
  )
  if (!contact) throw notFound('contact')
  const texts = [templateBody(row)]
  const definitions = mayUseCustomFields(texts) ? await fieldDefinitionsOf(db, tenant.accountId) : []
  const language = tenant.account.language
  const rendered = renderTemplate({
    texts,
    language,
    contact: {
      name: contact.name,
      email: contact.email,
      phone: contact.phone,
      customFields: customFieldTexts(definitions, contact.fields, valueLanguage(contact.language, language)),
    },
    values: {},
    customFields: definitions.map((d) => d.key),
  })
  const selected = contact.selected === true || contact.selected === 't'
  const reason = contact.optin_chat !== 'confirmed' ? 'optin_not_confirmed' : selected ? null : 'not_in_segment'
  return {
    newsletter_id: row.id,
    contact_id: contactId,
    text: rendered.ok ? rendered.texts[0] : null,
    missing_variables: rendered.ok ? [] : unfilledVariables(rendered),
    cta: row.cta ?? null,
    header_media: row.headerMedia
      ? { url: row.headerMedia.url, ...(row.headerMedia.media_id ? { media_id: row.headerMedia.media_id } : {}) }
      : null,
    would_receive: reason === null,
    reason,
  }
}

/** GET /newsletters/{id}/recipients: its send records (the recipients snapshot) with their status, by contact. */
export async function listRecipients(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  id: string,
  query: { status?: string; limit: number; offset: number },
) {
  const row = await repo.requireNewsletter(deps.db, tenant.accountId, id)
  const page = toPage(await repo.listRecipients(deps.db, row, query), query.limit, query.offset)
  return { ...page, items: page.items.map(sendRecordView) }
}
