import { Type } from 'typebox'
import * as bulk from './contacts.bulk.app.ts'
import { bulkTools, getContactConsentHistory, importContactsCsv } from './contacts.bulk.tools.ts'
import { contactFieldTools } from './contacts.fields.tools.ts'
import * as contacts from './contacts.routes.ts'
import { ContactResponse } from './contacts.schemas.ts'
import { contactArguments, FieldsArgument, Filter, NewTag, refuseSystemTag, tool } from './contacts.tools.shared.ts'

export { IMPORT_TOOL_MAX_CHARS } from './contacts.bulk.tools.ts'

const { name, phone, email } = contactArguments

export const contactsTools = [
  tool(contacts.listContacts, {
    name: 'search_contacts',
    title: 'Search contacts',
    description:
      'Find contacts by a partial, case-insensitive match on name, e-mail or phone (spaces and hyphens in phone numbers do not matter), newest first. An empty query lists the newest contacts.',
    pick: ['q', 'limit'],
    rename: { query: 'q' },
    schemas: {
      query: Type.String({ maxLength: 100, description: 'search term; empty: no filter' }),
      limit: Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'how many contacts (1-100)' }),
    },
    fixed: { query: { offset: 0 } },
  }),
  tool(contacts.getContact, {
    name: 'get_contact',
    title: 'Get a contact',
    description:
      'One contact with its tags, opt-in states (optin_chat, optin_email), source and custom field values (fields, by key).',
  }),
  tool(contacts.createContact, {
    name: 'create_contact',
    title: 'Create a contact',
    description:
      'Create a contact with a name and an e-mail address or a phone number in international format (+49...). Opt-ins start at none: this never subscribes anyone. A duplicate e-mail or phone answers contact_exists with the existing contact_id.',
    pick: ['name', 'phone', 'email', 'acquisition', 'fields'],
    schemas: { name, email, fields: FieldsArgument },
    required: ['name'],
  }),
  tool(contacts.updateContact, {
    name: 'update_contact',
    title: 'Update a contact',
    description:
      'Change the name, phone or e-mail of a contact; only the given fields change. A changed phone resets the chat opt-in, a changed e-mail the e-mail opt-in, to none.',
    schemas: { name, phone, email, fields: FieldsArgument },
  }),
  tool(contacts.addContactTags, {
    name: 'add_contact_tag',
    title: 'Tag a contact',
    description:
      'Add a tag to a contact (at most 30 tags per contact; a tag it already has changes nothing). System tags such as kauf, marketing or herkunft:... cannot be added.',
    pick: ['id', 'tag'],
    schemas: {
      tag: Type.String({ minLength: 1, maxLength: 60, description: 'the tag; the API accepts at most 40 characters' }),
    },
    required: ['tag'],
    idempotent: true,
  }),
  tool(contacts.listContacts, {
    name: 'list_contacts',
    title: 'List contacts (paged)',
    description:
      'Contacts newest first with full paging: an optional search term, limit up to 200, offset, and created_after to fetch only contacts created strictly after a time.',
    pick: ['q', 'limit', 'offset', 'created_after'],
    schemas: {
      q: Type.String({ maxLength: 100, description: 'search term on name, e-mail and phone' }),
      created_after: Type.String({ format: 'date-time', maxLength: 40 }),
    },
  }),
  tool(contacts.createContact, {
    name: 'upsert_contact',
    title: 'Create or update a contact',
    description:
      'Create a contact, or update the one that already has this e-mail or phone (name, email, phone). Never raises an opt-in; a changed phone or e-mail resets its opt-in to none. An e-mail and a phone of two different contacts answer contact_conflict.',
    rest: 'POST /contacts?upsert=true',
    pick: ['name', 'phone', 'email', 'acquisition', 'fields'],
    schemas: { name, email, fields: FieldsArgument },
    fixed: { query: { upsert: true } },
    idempotent: true,
  }),
  tool(contacts.updateContact, {
    name: 'clear_contact_field',
    title: 'Remove a contact’s e-mail or phone',
    description:
      'Remove the e-mail address or the phone number of a contact (its opt-in on that channel becomes none). The contact must keep one of them.',
    rest: 'PATCH /contacts/{id} with null',
    pick: ['id'],
    extra: { field: Type.Union([Type.Literal('email'), Type.Literal('phone')]) },
    kind: 'destructive',
    run: (ctx, call, { field }) =>
      contacts.updateContact.handle(ctx.services, { ...call, body: { [field as string]: null } } as never),
  }),
  tool(contacts.addContactTags, {
    name: 'add_contact_tags',
    title: 'Tag a contact with several tags',
    description:
      'Add several tags at once (each at most 40 characters, at most 30 tags per contact). Tags it already has change nothing; refused names are listed in rejected.',
    pick: ['id', 'tags'],
    schemas: { tags: Type.Array(NewTag, { minItems: 1, maxItems: 30 }) },
    required: ['tags'],
    idempotent: true,
  }),
  tool(contacts.removeContactTag, {
    name: 'remove_contact_tag',
    title: 'Remove a tag from a contact',
    description:
      'Remove a tag from a contact. System tags cannot be removed. Removing a tag the contact does not carry answers removed false.',
    schemas: { tag: Type.String({ minLength: 1, maxLength: 60 }) },
    idempotent: true,
    // a delete like every other: the first call shows what goes and issues the confirm_token
    async preview(ctx, { params: { id, tag } }) {
      refuseSystemTag(tag, 'removed')
      const contact = await ctx.services.contacts.get(ctx.tenant, id)
      const carried = contact.tags.includes(tag)
      return {
        action: carried
          ? `remove the tag ${tag} from the contact`
          : `nothing: the contact does not carry the tag ${tag} (removed false)`,
        contact: { id: contact.id, name: contact.name, tags: contact.tags },
        tag,
        carried,
      }
    },
  }),
  tool(contacts.listContactTagCounts, {
    name: 'list_tags',
    title: 'Tags in use',
    description:
      'The tags of the newest 1000 contacts with how many carry each, strongest origin first; capped true means more contacts exist and the counts are incomplete.',
  }),
  tool(contacts.deleteContact, {
    name: 'delete_contact',
    title: 'Delete a contact',
    description:
      'Permanently delete a contact with its conversations, messages, pending sends and automation runs; consent records and events stay anonymized. requested_by_contact: the person asked for it, and gets a deletion confirmation by e-mail.',
    async preview(ctx, { params, query }) {
      const contact = await ctx.services.contacts.get(ctx.tenant, params.id)
      return {
        action: 'permanently delete a contact and everything personal about it',
        contact: { id: contact.id, name: contact.name, email: contact.email, phone: contact.phone, tags: contact.tags },
        removes: ['conversations and messages', 'pending sends', 'personal automation runs', 'tags', 'the contact'],
        keeps: ['consent records and events, anonymized'],
        deletion_confirmation: query.requested_by_contact && contact.email !== '',
      }
    },
  }),
  tool(bulk.lookUpContact, {
    name: 'find_contact',
    title: 'Find a contact by e-mail or phone',
    description:
      'The contact holding exactly this e-mail address or phone number (any phone format in international form, e.g. +49 151 2345678); 404 not_found when nobody has it. Unlike search_contacts it never answers a partial match.',
    pick: [],
    extra: {
      address: Type.String({
        minLength: 3,
        maxLength: 254,
        description: 'an e-mail address, or a phone number in international format',
      }),
    },
    output: ContactResponse,
    run(ctx, call, extra) {
      const address = (extra.address as string).trim()
      const query = address.includes('@') ? { email: address } : { phone: address }
      return bulk.lookUpContact.handle(ctx.services, { ...call, query } as never)
    },
  }),
  tool(bulk.countContacts, {
    name: 'count_contacts',
    title: 'Count contacts by filter',
    description:
      'How many contacts match: by tag, chat or e-mail opt-in state, source and custom fields, every contact counted (e.g. how many have a confirmed chat opt-in and carry the tag vip). {} counts all.',
    pick: [],
    extra: { filter: Type.Optional(Filter) },
    // the filter as an object, where the query string takes its field conditions as JSON text
    run: async (ctx, _call, { filter }) => ({
      matching: await ctx.services.contacts.bulk.count(ctx.tenant, (filter ?? {}) as never),
    }),
  }),
  ...bulkTools,
  getContactConsentHistory,
  importContactsCsv,
  ...contactFieldTools,
]
