import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { ContactId, paging } from '../../platform/tools/common.ts'
import { restRule } from '../../platform/tools/tool.ts'
import { MatchingResponse } from './contacts.app.schemas.ts'
import {
  deleteContacts,
  deleteTagTool,
  exportContactsCsv,
  getContactConsentHistory,
  getTagTool,
  importContactsCsv,
  renameTagTool,
  tagContacts,
  untagContacts,
} from './contacts.bulk.tools.ts'
import {
  createContactField,
  deleteContactField,
  listContactFields,
  updateContactField,
} from './contacts.fields.tools.ts'
import { isSystemTagName } from './contacts.rules.ts'
import {
  AddTagsBody,
  AddTagsResponse,
  ContactResponse,
  CreateBody,
  CreatedResponse,
  DeleteResponse,
  ListQuery,
  ListResponse,
  RemoveTagResponse,
  TagCountsResponse,
  TagParams,
  UpdateBody,
  UpdatedResponse,
} from './contacts.schemas.ts'
import { Acquisition, defineTool, FieldsArgument, Filter } from './contacts.tools.shared.ts'

export { IMPORT_TOOL_MAX_CHARS } from './contacts.bulk.tools.ts'

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
    return { contact: await ctx.services.contacts.bulk.lookup(ctx.tenant, lookup) }
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
    return { matching: await ctx.services.contacts.bulk.count(ctx.tenant, args.filter ?? {}) }
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
