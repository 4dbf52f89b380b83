import { Type } from 'typebox'
import { isSystemTagName } from '../../modules/contacts/contacts.rules.ts'
import { AddTagsBody, CreateBody, ListQuery, TagParams, UpdateBody } from '../../modules/contacts/contacts.schemas.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { ContactId, paging } from './common.ts'

/** Contacts and tags beyond the named tools: every REST operation of /contacts. */

export const getAccount = defineTool({
  name: 'get_account',
  title: 'Who am I',
  description:
    'The account this credential belongs to (id, name), how it is authenticated (api_key or oauth), its scopes and its rate limit. Call it first to learn what the other tools may do.',
  scope: null,
  rest: 'GET /me',
  output: out.get_account,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    const { account, actor } = ctx.tenant
    return {
      account: { id: account.id, name: account.name },
      key: actor.type === 'api_key' ? { id: actor.keyId, name: actor.keyName, prefix: actor.keyPrefix } : null,
      auth_type: actor.type,
      scopes: actor.scopes,
      rate_limit: { requests_per_minute: actor.requestsPerMinute },
    }
  },
})

export const listContacts = defineTool({
  name: 'list_contacts',
  title: 'List contacts (paged)',
  description:
    'Contacts newest first with full paging: an optional search term, limit up to 200, offset, and created_after to fetch only contacts created strictly after a time.',
  scope: 'contacts:read',
  rest: 'GET /contacts',
  output: out.list_contacts,
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
  output: out.upsert_contact,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120 })),
    phone: Type.Optional(Type.String({ maxLength: 40 })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    acquisition: Type.Optional(
      Type.Union([Type.Literal('marketing'), Type.Literal('automation'), Type.Literal('service')]),
    ),
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
  output: out.clear_contact_field,
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
  output: out.add_contact_tags,
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
  output: out.remove_contact_tag,
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
  output: out.list_tags,
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
  output: out.delete_contact,
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

export const contactTools = [
  getAccount,
  listContacts,
  upsertContact,
  clearContactField,
  addContactTags,
  removeContactTag,
  listTags,
  deleteContact,
]
