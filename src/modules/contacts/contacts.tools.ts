import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Type } from 'typebox'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { ContactId, paging, UUID } from '../../platform/tools/common.ts'
import { obj, ok } from '../../platform/tools/outputs.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import {
  BulkDeleteResponse,
  BulkTagResponse,
  BulkUntagResponse,
  ConsentChange,
  ContactFilterSchema,
  DeleteTagResponse,
  ImportReportSchema,
  MatchingResponse,
  RenameTagBody,
  RenameTagResponse,
  TagInfo,
  TagParams as TagNameParams,
} from './contacts.app.schemas.ts'
import {
  BULK_DELETE_MAX,
  contactsWithTag,
  countMatching,
  deleteMatching,
  deleteTag,
  exportCsv,
  getTag,
  hasCriterion,
  lookupContact,
  renameTag,
  tagMatching,
  untagMatching,
} from './contacts.bulk.ts'
import { consentHistory } from './contacts.consent.ts'
import { MAX_FIELDS } from './contacts.fields.rules.ts'
import {
  ContactFieldSchema,
  CreateFieldBody,
  FieldListResponse,
  FieldResponse,
  FieldValueInput,
  UpdateFieldBody,
} from './contacts.fields.schemas.ts'
import { ImportError, importContacts } from './contacts.import.ts'
import { findContact as findContactRow } from './contacts.repository.ts'
import { isSystemTagName } from './contacts.rules.ts'
import {
  AddTagsBody,
  AddTagsResponse,
  Contact,
  ContactResponse,
  ContactTag,
  CreateBody,
  CreatedResponse,
  DeleteResponse,
  ListQuery,
  ListResponse,
  RemoveTagResponse,
  TagCount,
  TagCountsResponse,
  TagParams,
  UpdateBody,
  UpdatedResponse,
} from './contacts.schemas.ts'
import type { ContactsService } from './contacts.service.ts'
import { CUSTOM_FIELD_TYPES } from './contacts.tables.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  contacts: ContactsService
}

// the schemas its routes register (app.addSchema), named with Type.Ref in the outputs
const defineTool = toolsUsing<Services>([Contact, ContactTag, TagCount, ContactFieldSchema])

const FieldsArgument = Type.Record(Type.String({ maxLength: 40 }), FieldValueInput, {
  maxProperties: 50,
  description:
    'custom field values by key (list_contact_fields): a string for text, choice and date (YYYY-MM-DD), a number, true/false; null clears one; keys not given stay',
})

const Acquisition = Type.Union([Type.Literal('marketing'), Type.Literal('automation'), Type.Literal('service')], {
  description: 'how the contact was acquired; default marketing',
})

const db = (ctx: ToolContext<Services>) => ctx.platform.database.orm

const Filter = Type.Object(ContactFilterSchema.properties, {
  additionalProperties: false,
  description:
    'which contacts: tag (carrying it), optin_chat / optin_email (none, pending, confirmed, opted_out), source, fields (conditions on custom fields such as [{"field": "level", "op": "equals", "value": "gold"}] or [{"field": "birthday", "op": "within_next_days", "days": 7, "ignore_year": true}]); every criterion given must hold; {} is every contact',
})

const TagName = Type.String({ minLength: 1, maxLength: 60, description: 'the tag’s name as list_tags shows it' })

function refuseSystemTag(name: string): void {
  if (isSystemTagName(name)) {
    throw badRequest(`The system tag ${name} cannot be changed through the API`, 'system_tag', { tags: [name] })
  }
}

/** The largest CSV text a tool call takes (the web app uploads files up to 200 MB; an assistant pastes text). */
export const IMPORT_TOOL_MAX_CHARS = 1_000_000

export const searchContacts = defineTool({
  name: 'search_contacts',
  title: 'Search contacts',
  description:
    'Find contacts by a partial, case-insensitive match on name, e-mail or phone (spaces and hyphens in phone numbers do not matter), newest first. An empty query lists the newest contacts.',
  scope: 'contacts:read',
  rest: 'GET /contacts',
  output: ListResponse,
  kind: 'read',
  input: Type.Object({
    query: Type.Optional(Type.String({ maxLength: 100, description: 'search term; empty: no filter' })),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'how many contacts (1-100)' }),
    ),
  }),
  async run(ctx, args) {
    const query = restRule(ListQuery, { q: args.query, limit: args.limit, offset: 0 }, 'query')
    const { items, ...page } = await ctx.services.contacts.list(ctx.tenant, query)
    return { contacts: items, ...page }
  },
})

export const getContact = defineTool({
  name: 'get_contact',
  title: 'Get a contact',
  description:
    'One contact with its tags, opt-in states (optin_chat, optin_email), source and custom field values (fields, by key).',
  scope: 'contacts:read',
  rest: 'GET /contacts/{id}',
  output: ContactResponse,
  kind: 'read',
  input: Type.Object({ contact_id: ContactId }),
  async run(ctx, args) {
    return { contact: await ctx.services.contacts.get(ctx.tenant, args.contact_id) }
  },
})

export const createContact = defineTool({
  name: 'create_contact',
  title: 'Create a contact',
  description:
    'Create a contact with a name and an e-mail address or a phone number in international format (+49...). Opt-ins start at none: this never subscribes anyone. A duplicate e-mail or phone answers contact_exists with the existing contact_id.',
  scope: 'contacts:write',
  rest: 'POST /contacts',
  output: CreatedResponse,
  kind: 'write',
  input: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 120 }),
    phone: Type.Optional(Type.String({ maxLength: 40, description: 'international format, such as +4915112345678' })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    acquisition: Type.Optional(Acquisition),
    fields: Type.Optional(FieldsArgument),
  }),
  async run(ctx, args) {
    const body = restRule(
      CreateBody,
      { name: args.name, email: args.email, phone: args.phone, acquisition: args.acquisition, fields: args.fields },
      'body',
    )
    const result = await ctx.services.contacts.create(ctx.tenant, body, { upsert: false })
    return { ok: true, created: result.created, contact: result.contact }
  },
})

export const updateContact = defineTool({
  name: 'update_contact',
  title: 'Update a contact',
  description:
    'Change the name, phone or e-mail of a contact; only the given fields change. A changed phone resets the chat opt-in, a changed e-mail the e-mail opt-in, to none.',
  scope: 'contacts:write',
  rest: 'PATCH /contacts/{id}',
  output: UpdatedResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    contact_id: ContactId,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    phone: Type.Optional(Type.String({ maxLength: 40 })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    fields: Type.Optional(FieldsArgument),
  }),
  async run(ctx, args) {
    const { contact_id, ...change } = args
    const body = restRule(UpdateBody, change, 'body')
    return { ok: true, contact: await ctx.services.contacts.update(ctx.tenant, contact_id, body) }
  },
})

export const addContactTag = defineTool({
  name: 'add_contact_tag',
  title: 'Tag a contact',
  description:
    'Add a tag to a contact (at most 30 tags per contact; a tag it already has changes nothing). System tags such as kauf, marketing or herkunft:... cannot be added.',
  scope: 'contacts:write',
  rest: 'POST /contacts/{id}/tags',
  output: AddTagsResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    contact_id: ContactId,
    tag: Type.String({ minLength: 1, maxLength: 60, description: 'the tag; the API accepts at most 40 characters' }),
  }),
  async run(ctx, args) {
    const body = restRule(AddTagsBody, { tag: args.tag }, 'body')
    const result = await ctx.services.contacts.addTags(ctx.tenant, args.contact_id, [body.tag as string])
    return { ok: true, ...result }
  },
})

export const listContacts = defineTool({
  name: 'list_contacts',
  title: 'List contacts (paged)',
  description:
    'Contacts newest first with full paging: an optional search term, limit up to 200, offset, and created_after to fetch only contacts created strictly after a time.',
  scope: 'contacts:read',
  rest: 'GET /contacts',
  output: ListResponse,
  kind: 'read',
  input: Type.Object({
    q: Type.Optional(Type.String({ maxLength: 100, description: 'search term on name, e-mail and phone' })),
    ...paging(200, 50),
    created_after: Type.Optional(Type.String({ format: 'date-time', maxLength: 40 })),
  }),
  async run(ctx, args) {
    const query = restRule(ListQuery, args, 'query')
    const { items, ...page } = await ctx.services.contacts.list(ctx.tenant, query)
    return { contacts: items, ...page }
  },
})

export const upsertContact = defineTool({
  name: 'upsert_contact',
  title: 'Create or update a contact',
  description:
    'Create a contact, or update the one that already has this e-mail or phone (name, email, phone). Never raises an opt-in; a changed phone or e-mail resets its opt-in to none. An e-mail and a phone of two different contacts answer contact_conflict.',
  scope: 'contacts:write',
  rest: 'POST /contacts?upsert=true',
  output: CreatedResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    phone: Type.Optional(Type.String({ maxLength: 40 })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    acquisition: Type.Optional(
      Type.Union([Type.Literal('marketing'), Type.Literal('automation'), Type.Literal('service')]),
    ),
    fields: Type.Optional(FieldsArgument),
  }),
  async run(ctx, args) {
    const body = restRule(CreateBody, args, 'body')
    const result = await ctx.services.contacts.create(ctx.tenant, body, { upsert: true })
    return result.created
      ? { ok: true, created: true, contact: result.contact }
      : { ok: true, created: false, updated: result.updated, contact: result.contact }
  },
})

export const clearContactField = defineTool({
  name: 'clear_contact_field',
  title: 'Remove a contact’s e-mail or phone',
  description:
    'Remove the e-mail address or the phone number of a contact (its opt-in on that channel becomes none). The contact must keep one of them.',
  scope: 'contacts:write',
  rest: 'PATCH /contacts/{id} with null',
  output: UpdatedResponse,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({
    contact_id: ContactId,
    field: Type.Union([Type.Literal('email'), Type.Literal('phone')]),
  }),
  async run(ctx, args) {
    const body = restRule(UpdateBody, { [args.field]: null }, 'body')
    return { ok: true, contact: await ctx.services.contacts.update(ctx.tenant, args.contact_id, body) }
  },
})

export const addContactTags = defineTool({
  name: 'add_contact_tags',
  title: 'Tag a contact with several tags',
  description:
    'Add several tags at once (each at most 40 characters, at most 30 tags per contact). Tags it already has change nothing; refused names are listed in rejected.',
  scope: 'contacts:write',
  rest: 'POST /contacts/{id}/tags',
  output: AddTagsResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    contact_id: ContactId,
    tags: Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { minItems: 1, maxItems: 30 }),
  }),
  async run(ctx, args) {
    const body = restRule(AddTagsBody, { tags: args.tags }, 'body')
    return { ok: true, ...(await ctx.services.contacts.addTags(ctx.tenant, args.contact_id, body.tags ?? [])) }
  },
})

export const removeContactTag = defineTool({
  name: 'remove_contact_tag',
  title: 'Remove a tag from a contact',
  description:
    'Remove a tag from a contact. System tags cannot be removed. Removing a tag the contact does not carry answers removed false.',
  scope: 'contacts:write',
  rest: 'DELETE /contacts/{id}/tags/{tag}',
  output: RemoveTagResponse,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ contact_id: ContactId, tag: Type.String({ minLength: 1, maxLength: 60 }) }),
  // a delete like every other: the first call shows what goes and issues the confirm_token
  async preview(ctx, args) {
    restRule(TagParams, { id: args.contact_id, tag: args.tag }, 'path')
    if (isSystemTagName(args.tag)) {
      throw badRequest(`The system tag ${args.tag} cannot be removed through the API`, 'system_tag', {
        tags: [args.tag],
      })
    }
    const contact = await ctx.services.contacts.get(ctx.tenant, args.contact_id)
    const carried = contact.tags.includes(args.tag)
    return {
      action: carried
        ? `remove the tag ${args.tag} from the contact`
        : `nothing: the contact does not carry the tag ${args.tag} (removed false)`,
      contact: { id: contact.id, name: contact.name, tags: contact.tags },
      tag: args.tag,
      carried,
    }
  },
  async run(ctx, args) {
    restRule(TagParams, { id: args.contact_id, tag: args.tag }, 'path')
    const result = await ctx.services.contacts.removeTag(ctx.tenant, args.contact_id, args.tag)
    return { ok: true, removed: result.removed, tags: result.tags }
  },
})

export const listTags = defineTool({
  name: 'list_tags',
  title: 'Tags in use',
  description:
    'The tags of the newest 1000 contacts with how many carry each, strongest origin first; capped true means more contacts exist and the counts are incomplete.',
  scope: 'contacts:read',
  rest: 'GET /contacts/tags',
  output: TagCountsResponse,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...(await ctx.services.contacts.tagCounts(ctx.tenant)) }
  },
})

export const deleteContact = defineTool({
  name: 'delete_contact',
  title: 'Delete a contact',
  description:
    'Permanently delete a contact with its conversations, messages, pending sends and automation runs; consent records and events stay anonymized. requested_by_contact: the person asked for it, and gets a deletion confirmation by e-mail.',
  scope: 'contacts:delete',
  rest: 'DELETE /contacts/{id}',
  output: DeleteResponse,
  kind: 'destructive',
  input: Type.Object({
    contact_id: ContactId,
    requested_by_contact: Type.Optional(Type.Boolean({ default: false })),
  }),
  async preview(ctx, args) {
    const contact = await ctx.services.contacts.get(ctx.tenant, args.contact_id)
    return {
      action: 'permanently delete a contact and everything personal about it',
      contact: { id: contact.id, name: contact.name, email: contact.email, phone: contact.phone, tags: contact.tags },
      removes: ['conversations and messages', 'pending sends', 'personal automation runs', 'tags', 'the contact'],
      keeps: ['consent records and events, anonymized'],
      deletion_confirmation: args.requested_by_contact && contact.email !== '',
    }
  },
  async run(ctx, args) {
    const result = await ctx.services.contacts.delete(ctx.tenant, args.contact_id, {
      requestedByContact: args.requested_by_contact === true,
    })
    return {
      ok: true,
      removed: result.removed,
      anonymized: result.anonymized,
      confirmation_sent: result.confirmationSent,
    }
  },
})

export const findContact = defineTool({
  name: 'find_contact',
  title: 'Find a contact by e-mail or phone',
  description:
    'The contact holding exactly this e-mail address or phone number (any phone format in international form, e.g. +49 151 2345678); 404 not_found when nobody has it. Unlike search_contacts it never answers a partial match.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/lookup',
  output: ContactResponse,
  kind: 'read',
  input: Type.Object({
    address: Type.String({
      minLength: 3,
      maxLength: 254,
      description: 'an e-mail address, or a phone number in international format',
    }),
  }),
  async run(ctx, args) {
    const address = args.address.trim()
    const lookup = address.includes('@') ? { email: address } : { phone: address }
    return { contact: await lookupContact(db(ctx), ctx.tenant.accountId, lookup) }
  },
})

export const countContacts = defineTool({
  name: 'count_contacts',
  title: 'Count contacts by filter',
  description:
    'How many contacts match: by tag, chat or e-mail opt-in state, source and custom fields, every contact counted (e.g. how many have a confirmed chat opt-in and carry the tag vip). {} counts all.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/count',
  output: MatchingResponse,
  kind: 'read',
  input: Type.Object({ filter: Type.Optional(Filter) }),
  async run(ctx, args) {
    return { matching: await countMatching(db(ctx), ctx.tenant.accountId, args.filter ?? {}, ctx.platform.clock.now()) }
  },
})

export const exportContactsCsv = defineTool({
  name: 'export_contacts_csv',
  title: 'Export contacts as CSV',
  description:
    'The matching contacts as CSV text (header id, name, email, phone, optin_chat, optin_email, tags separated by ;, language, source, created_at, then one column per custom field named by its key), oldest first, at most 2000 rows per call: page with offset while has_more. import_contacts_csv reads the same columns.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/export',
  output: obj({
    csv: Type.String({ description: 'the CSV text, header line first' }),
    rows: Type.Integer({ description: 'contacts in this page' }),
    has_more: Type.Boolean(),
    next_offset: Type.Union([Type.Integer(), Type.Null()]),
  }),
  kind: 'read',
  input: Type.Object({
    filter: Type.Optional(Filter),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000, default: 500 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 })),
  }),
  async run(ctx, args) {
    return exportCsv(
      db(ctx),
      ctx.tenant.accountId,
      args.filter ?? {},
      { limit: args.limit ?? 500, offset: args.offset ?? 0 },
      ctx.platform.clock.now(),
    )
  },
})

export const getTagTool = defineTool({
  name: 'get_tag',
  title: 'One tag with its contact count',
  description:
    'How many contacts carry a tag (every contact counted, unlike the sample of list_tags), under which origins (system, ki, manuell), and whether it is a system tag that cannot be changed. 404 when no contact has it.',
  scope: 'contacts:read',
  rest: 'GET /app/tags/{tag}',
  output: obj({ tag: TagInfo }),
  kind: 'read',
  input: Type.Object({ tag: TagName }),
  async run(ctx, args) {
    return { tag: await getTag(db(ctx), ctx.tenant.accountId, args.tag) }
  },
})

export const renameTagTool = defineTool({
  name: 'rename_tag',
  title: 'Rename a tag on every contact',
  description:
    'Rename a tag on every contact that carries it, keeping each one’s origin; a contact with both names keeps one. System tags cannot be renamed or made (400 system_tag); the new name is at most 40 characters.',
  scope: 'contacts:write',
  rest: 'POST /app/tags/{tag}/rename',
  output: RenameTagResponse,
  kind: 'write',
  input: Type.Object({ tag: TagName, new_name: Type.String({ minLength: 1, maxLength: 40 }) }),
  async preview(ctx, args) {
    restRule(RenameTagBody, { new_name: args.new_name }, 'body')
    refuseSystemTag(args.tag)
    refuseSystemTag(args.new_name)
    const contacts = await contactsWithTag(db(ctx), ctx.tenant.accountId, args.tag.trim())
    if (contacts === 0) throw notFound('tag')
    return { action: `rename the tag ${args.tag} to ${args.new_name} on every contact`, contacts }
  },
  async run(ctx, args) {
    restRule(TagNameParams, { tag: args.tag }, 'path')
    return renameTag(db(ctx), ctx.tenant.accountId, args.tag, args.new_name)
  },
})

export const deleteTagTool = defineTool({
  name: 'delete_tag',
  title: 'Delete a tag from every contact',
  description:
    'Remove a tag from every contact that carries it (the contacts stay). Automations and newsletter segments that use the tag no longer match anyone. System tags cannot be deleted (400 system_tag).',
  scope: 'contacts:write',
  rest: 'DELETE /app/tags/{tag}',
  output: DeleteTagResponse,
  kind: 'destructive',
  input: Type.Object({ tag: TagName }),
  async preview(ctx, args) {
    refuseSystemTag(args.tag)
    const contacts = await contactsWithTag(db(ctx), ctx.tenant.accountId, args.tag.trim())
    if (contacts === 0) throw notFound('tag')
    return { action: `remove the tag ${args.tag} from every contact`, contacts }
  },
  async run(ctx, args) {
    return deleteTag(db(ctx), ctx.tenant.accountId, args.tag)
  },
})

export const tagContacts = defineTool({
  name: 'tag_contacts',
  title: 'Tag every matching contact',
  description:
    'Add a tag (origin manuell, at most 40 characters, never a system tag) to every contact matching the filter, at most 10,000 per call (has_more: call again); contacts with 30 tags are skipped. Automations waiting for the tag start for each newly tagged contact.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/bulk/tag',
  output: BulkTagResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ filter: Filter, tag: Type.String({ minLength: 1, maxLength: 40 }) }),
  async preview(ctx, args) {
    refuseSystemTag(args.tag)
    const matching = await countMatching(db(ctx), ctx.tenant.accountId, args.filter, ctx.platform.clock.now())
    return { action: `add the tag ${args.tag} to every matching contact`, filter: args.filter, contacts: matching }
  },
  async run(ctx, args) {
    return tagMatching(db(ctx), ctx.platform.clock, ctx.tenant.accountId, args.filter, args.tag)
  },
})

export const untagContacts = defineTool({
  name: 'untag_contacts',
  title: 'Remove a tag from every matching contact',
  description:
    'Remove a tag from every contact matching the filter that carries it (never a system tag). To remove a tag from all contacts, delete_tag does the same with the tag alone.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/bulk/untag',
  output: BulkUntagResponse,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ filter: Filter, tag: Type.String({ minLength: 1, maxLength: 40 }) }),
  async preview(ctx, args) {
    refuseSystemTag(args.tag)
    const matching = await countMatching(
      db(ctx),
      ctx.tenant.accountId,
      { ...args.filter, tag: args.tag },
      ctx.platform.clock.now(),
    )
    return { action: `remove the tag ${args.tag} from the matching contacts`, filter: args.filter, contacts: matching }
  },
  async run(ctx, args) {
    return untagMatching(db(ctx), ctx.tenant.accountId, args.filter, args.tag, ctx.platform.clock.now())
  },
})

export const deleteContacts = defineTool({
  name: 'delete_contacts',
  title: 'Delete every matching contact',
  description: `Permanently delete the contacts matching the filter (at least one criterion), each as delete_contact deletes one: conversations, messages, pending sends and automation runs removed, consent records anonymized. At most ${BULK_DELETE_MAX} per call (has_more: call again).`,
  scope: 'contacts:delete',
  rest: 'POST /app/contacts/bulk/delete',
  output: BulkDeleteResponse,
  kind: 'destructive',
  input: Type.Object({ filter: Filter }),
  async preview(ctx, args) {
    if (!hasCriterion(args.filter)) throw badRequest('Give at least one filter criterion', 'filter_required')
    const matching = await countMatching(db(ctx), ctx.tenant.accountId, args.filter, ctx.platform.clock.now())
    return {
      action: 'permanently delete every matching contact and everything personal about them',
      filter: args.filter,
      contacts: matching,
      deleted_by_this_call: Math.min(matching, BULK_DELETE_MAX),
      keeps: ['consent records and events, anonymized'],
    }
  },
  async run(ctx, args) {
    return deleteMatching(db(ctx), ctx.services.contacts, ctx.tenant, args.filter, ctx.platform.clock.now())
  },
})

export const getContactConsentHistory = defineTool({
  name: 'get_contact_consent_history',
  title: 'Consent history of a contact',
  description:
    'Every change of a contact’s chat and e-mail opt-in, oldest first: from and to state, the source (api, import, double_opt_in, inbound_message, ...), the address it was about and the evidence (keyword, confirmation link, request). The audit trail for questions about consent.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/{id}/consent-history',
  output: obj({ history: Type.Array(ConsentChange) }),
  kind: 'read',
  input: Type.Object({ contact_id: ContactId }),
  async run(ctx, args) {
    const { accountId } = ctx.tenant
    if (!UUID.test(args.contact_id) || !(await findContactRow(db(ctx), accountId, args.contact_id))) {
      throw notFound('contact')
    }
    const records = await consentHistory(db(ctx), accountId, args.contact_id)
    return {
      history: records.map((r) => ({
        channel: r.channel,
        from: r.fromState,
        to: r.toState,
        source: r.source,
        address: r.address,
        evidence: r.evidence,
        recorded_at: r.recordedAt.toISOString(),
      })),
    }
  },
})

export const importContactsCsv = defineTool({
  name: 'import_contacts_csv',
  title: 'Import contacts from CSV text',
  description:
    'Import contacts from CSV text with a header line. Columns are recognised by their names in German and English and in the exports of Mailchimp, Brevo, HubSpot, Shopify and Excel (e-mail, phone, the name or first and last name, tags separated by ; or |); the delimiter (, ; tab |) is detected; a column named as a custom field (its key or label) fills it, a value that does not fit rejects its line; other columns are listed in ignored_columns (create_fields makes them text fields). Known e-mail addresses and phone numbers are updated, new ones created; opt-ins are never raised (nobody is subscribed). Answers the report: rows, created, updated, unchanged, rejected lines with the reason, ignored columns. At most 1,000,000 characters; larger files go through the web app.',
  scope: 'contacts:write',
  rest: 'POST /app/contacts/import (CSV as text)',
  output: obj({ ...ok, report: ImportReportSchema }),
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    csv: Type.String({
      minLength: 1,
      maxLength: IMPORT_TOOL_MAX_CHARS,
      description: 'the CSV file’s text, header line first',
    }),
    map: Type.Optional(
      Type.String({
        maxLength: 4000,
        description:
          'header names to fields or custom field keys when the names are not recognised: "Mobil=phone,Kundennummer=customer_no"',
      }),
    ),
    create_fields: Type.Optional(
      Type.Boolean({
        description:
          'make every column that fills nothing else a new text field (key from the header) before importing',
      }),
    ),
  }),
  async run(ctx, args) {
    const dir = await mkdtemp(path.join(tmpdir(), 'herold-import-'))
    try {
      const file = path.join(dir, 'contacts.csv')
      await writeFile(file, args.csv, 'utf8')
      const report = await importContacts(db(ctx), ctx.platform.clock, {
        accountId: ctx.tenant.accountId,
        file,
        format: { map: args.map, createFields: args.create_fields },
      })
      return { ok: true, report }
    } catch (error) {
      if (error instanceof ImportError) {
        throw new AppError(400, 'bad_request', error.message, { key: 'csv_invalid' })
      }
      throw error
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  },
})

const FieldKey = Type.String({
  minLength: 1,
  maxLength: 40,
  description: 'the field’s key, as list_contact_fields shows it',
})
const FieldDefinitionArguments = {
  label: Type.String({ minLength: 1, maxLength: 80, description: 'what people read, such as Kundennummer' }),
  options: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
    minItems: 1,
    maxItems: 100,
    description: 'choice only (required there): the allowed values',
  }),
  default: FieldValueInput,
  max_length: Type.Integer({ minimum: 1, maximum: 1024, description: 'text only: the longest value (default 255)' }),
}

export const listContactFields = defineTool({
  name: 'list_contact_fields',
  title: 'Custom fields of contacts',
  description:
    'The account’s custom field definitions in order (at most 50): key (the variable {{key}} and the key in a contact’s fields), label, type (text, number, date, boolean, choice), options, default, max_length.',
  scope: 'contacts:read',
  rest: 'GET /contact-fields',
  output: FieldListResponse,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    const fields = await ctx.services.contacts.fields.list(ctx.tenant.accountId)
    return { contact_fields: fields, limit: MAX_FIELDS, offset: 0, has_more: false, next_offset: null }
  },
})

export const createContactField = defineTool({
  name: 'create_contact_field',
  title: 'Define a custom field',
  description:
    'Define a custom field of contacts (at most 50): key lower-case a-z, 0-9 and _ (never a built-in variable such as name, email, phone, first_name), a label, a type: text (max_length, default 255), number, date (YYYY-MM-DD), boolean, or choice with its options. A default is filled into messages for contacts without a value.',
  scope: 'settings:write',
  rest: 'POST /contact-fields',
  output: FieldResponse,
  kind: 'write',
  input: Type.Object({
    key: Type.String({ minLength: 1, maxLength: 40, description: 'such as customer_no' }),
    type: Type.Union(
      CUSTOM_FIELD_TYPES.map((t) => Type.Literal(t)),
      { description: 'text, number, date, boolean or choice' },
    ),
    label: FieldDefinitionArguments.label,
    options: Type.Optional(FieldDefinitionArguments.options),
    default: Type.Optional(FieldDefinitionArguments.default),
    max_length: Type.Optional(FieldDefinitionArguments.max_length),
  }),
  async run(ctx, args) {
    const body = restRule(CreateFieldBody, args, 'body')
    return { contact_field: await ctx.services.contacts.fields.create(ctx.tenant.accountId, body) }
  },
})

export const updateContactField = defineTool({
  name: 'update_contact_field',
  title: 'Change a custom field',
  description:
    'Change a custom field’s label, type, options, default or max_length (never its key). A new type converts the stored values (a text "42" to a number, "2026-01-31" to a date, true/false/ja/nein to a boolean, anything to text, a value among the options to choice); when some would not fit, or a removed option is still used, nothing changes and the error counts the contacts (field_values_incompatible). null clears options, default or max_length.',
  scope: 'settings:write',
  rest: 'PATCH /contact-fields/{key}',
  output: FieldResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    key: FieldKey,
    label: Type.Optional(FieldDefinitionArguments.label),
    type: Type.Optional(Type.Union(CUSTOM_FIELD_TYPES.map((t) => Type.Literal(t)))),
    options: Type.Optional(Type.Union([FieldDefinitionArguments.options, Type.Null()])),
    default: Type.Optional(FieldDefinitionArguments.default),
    max_length: Type.Optional(Type.Union([FieldDefinitionArguments.max_length, Type.Null()])),
  }),
  async run(ctx, args) {
    const { key, ...change } = args
    const body = restRule(UpdateFieldBody, change, 'body')
    return { contact_field: await ctx.services.contacts.fields.update(ctx.tenant.accountId, key, body) }
  },
})

export const deleteContactField = defineTool({
  name: 'delete_contact_field',
  title: 'Delete a custom field',
  description:
    'Delete a custom field and its value on every contact. Templates, newsletters and follow-ups that use {{key}} can no longer fill it.',
  scope: 'settings:write',
  rest: 'DELETE /contact-fields/{key}',
  output: obj({ ...ok, values_removed: Type.Integer({ description: 'contacts that lost their value' }) }),
  kind: 'destructive',
  input: Type.Object({ key: FieldKey }),
  async preview(ctx, args) {
    const field = await ctx.services.contacts.fields.get(ctx.tenant.accountId, args.key)
    const values = await ctx.services.contacts.fields.valueCount(ctx.tenant.accountId, args.key)
    return {
      action: `delete the custom field ${field.key} (${field.label}) and its value on every contact`,
      contact_field: field,
      contacts_with_value: values,
    }
  },
  async run(ctx, args) {
    const result = await ctx.services.contacts.fields.delete(ctx.tenant.accountId, args.key)
    return { ok: true, values_removed: result.valuesRemoved }
  },
})

/** In the order the tool server lists them. */
export const contactsTools = [
  searchContacts,
  getContact,
  createContact,
  updateContact,
  addContactTag,
  listContacts,
  upsertContact,
  clearContactField,
  addContactTags,
  removeContactTag,
  listTags,
  deleteContact,
  findContact,
  countContacts,
  exportContactsCsv,
  getTagTool,
  renameTagTool,
  deleteTagTool,
  tagContacts,
  untagContacts,
  deleteContacts,
  getContactConsentHistory,
  importContactsCsv,
  listContactFields,
  createContactField,
  updateContactField,
  deleteContactField,
]
