import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import {
  AddTagsBody,
  AddTagsResponse,
  Contact,
  ContactId,
  ContactResponse,
  ContactTag,
  CreateBody,
  CreatedResponse,
  CreateQuery,
  DeleteQuery,
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

const tags = ['contacts']

/** The services the contacts' operations call (and their tools, which the tool server hands them). */
export interface ContactsServices {
  contacts: ContactsService
}

export const operation = operationsUsing<ContactsServices>()

/** The schemas the operations name with Type.Ref (registered with app.addSchema). */
export const contactSchemas = [Contact, ContactTag, TagCount]

export const listContacts = operation({
  method: 'GET',
  path: '/contacts',
  scope: 'contacts:read',
  operationId: 'listContacts',
  summary: 'List contacts, newest first, optionally searched and filtered by custom field',
  description:
    '`q` searches name, email and phone; `fields` filters by custom field: a JSON array of conditions ' +
    '(`?fields=[{"field":"level","op":"equals","value":"gold"}]`, URL-encoded), all of which must hold. ' +
    'A condition naming a field the account does not have, or whose op or value does not fit its type, is a ' +
    '400 with key field_condition_invalid, `field` and `rule`.',
  tags,
  query: ListQuery,
  response: ListResponse,
  errors: {
    400: 'bad_request: fields is not a JSON array of conditions; field_condition_invalid (with field, rule, problems): a condition does not fit the account’s custom fields',
  },
  // without a search the database writes the page as JSON, passed on as it is
  json: ({ contacts }, { tenant, query }) => contacts.listJson(tenant, query),
  handle: async ({ contacts }, { tenant, query }) => namedPage('contacts', await contacts.list(tenant, query)),
})

export const createContact = operation({
  method: 'POST',
  path: '/contacts',
  scope: 'contacts:write',
  idempotent: true,
  operationId: 'createContact',
  summary: 'Create a contact, or update the one with this email or phone (upsert)',
  description:
    'At least email or phone. Without upsert a duplicate gives 409 contact_exists (key kontakt_email_doppelt, ' +
    'kontakt_nummer_doppelt or kontakt_doppelt, with contact_id); email and phone of two different contacts ' +
    'give 409 contact_conflict with contact_ids. 403 limit_reached at the plan contact limit. ' +
    'Opt-ins start at none and are never raised here; a changed email or phone resets its opt-in to none.',
  tags,
  query: CreateQuery,
  body: CreateBody,
  statusOf: {
    responses: { 200: CreatedResponse, 201: CreatedResponse },
    of: (answer) => ((answer as { created: boolean }).created ? 201 : 200),
  },
  response: CreatedResponse,
  errors: {
    400: 'bad_request: phone is not a valid international number (with field); email_or_phone_required: neither email nor phone',
    403: "limit_reached: the plan's contact limit is reached",
    409: 'contact_exists (key kontakt_email_doppelt, kontakt_nummer_doppelt or kontakt_doppelt, with contact_id): without upsert, a contact has this email or phone; contact_conflict (with contact_ids): email and phone belong to two different contacts',
  },
  async handle({ contacts }, { tenant, query, body }) {
    const result = await contacts.create(tenant, body, { upsert: body.upsert === true || query.upsert === true })
    if (result.created) return { ok: true, created: true, contact: result.contact }
    return { ok: true, created: false, updated: result.updated, contact: result.contact }
  },
})

export const listContactTagCounts = operation({
  method: 'GET',
  path: '/contacts/tags',
  scope: 'contacts:read',
  operationId: 'listContactTagCounts',
  summary: 'Tag counts over the newest 1000 contacts',
  tags,
  response: TagCountsResponse,
  germanAliases: ['checked', 'capped', 'tags.origin', 'tags.count'],
  async handle({ contacts }, { tenant }) {
    return { ...(await contacts.tagCounts(tenant)) }
  },
})

export const getContact = operation({
  method: 'GET',
  path: '/contacts/{id}',
  scope: 'contacts:read',
  operationId: 'getContact',
  summary: 'One contact',
  tags,
  params: ContactId,
  response: ContactResponse,
  json: ({ contacts }, { tenant, params }) => contacts.getJson(tenant, params.id),
  async handle({ contacts }, { tenant, params }) {
    return { contact: await contacts.get(tenant, params.id) }
  },
})

export const updateContact = operation({
  method: 'PATCH',
  path: '/contacts/{id}',
  scope: 'contacts:write',
  operationId: 'updateContact',
  summary: 'Change a contact; only given fields change',
  description:
    'email and phone may be null, but the contact must keep one of them. A duplicate gives 409 contact_exists. ' +
    'A changed email resets optin_email, a changed phone resets optin_chat, to none.',
  tags,
  params: ContactId,
  body: UpdateBody,
  response: UpdatedResponse,
  errors: {
    400: 'bad_request: phone is not a valid international number (with field); email_or_phone_required: the contact would keep neither email nor phone',
    409: 'contact_exists (key kontakt_email_doppelt, kontakt_nummer_doppelt or kontakt_doppelt, with contact_id): another contact has this email or phone',
  },
  async handle({ contacts }, { tenant, params, body }) {
    return { ok: true, contact: await contacts.update(tenant, params.id, body) }
  },
})

export const deleteContact = operation({
  method: 'DELETE',
  path: '/contacts/{id}',
  scope: 'contacts:delete',
  operationId: 'deleteContact',
  summary: 'Delete a contact and everything personal about it',
  description:
    'Removes pending send jobs, conversations and messages, personal automation runs, tags, then the contact, ' +
    'in one transaction. Events and consent records stay, anonymized. contacts:write is not enough.',
  tags,
  params: ContactId,
  query: DeleteQuery,
  response: DeleteResponse,
  germanAliases: ['confirmation_sent'],
  async handle({ contacts }, { tenant, params, query }) {
    const result = await contacts.delete(tenant, params.id, { requestedByContact: query.requested_by_contact === true })
    const { removed, anonymized, confirmationSent } = result
    return { ok: true, removed, anonymized, confirmation_sent: confirmationSent }
  },
})

export const addContactTags = operation({
  method: 'POST',
  path: '/contacts/{id}/tags',
  scope: 'contacts:write',
  operationId: 'addContactTags',
  summary: 'Add tags (origin manuell)',
  description:
    'At most 30 tags per contact; an existing tag changes nothing (it is neither added nor rejected). ' +
    'System tags (kauf, gekauft, kunde, marketing, newsletter, anything starting herkunft:) give 400.',
  tags,
  params: ContactId,
  body: AddTagsBody,
  response: AddTagsResponse,
  errors: { 400: 'tag_required: no tag given; system_tag: a system tag cannot be added through the API' },
  germanAliases: ['added', 'rejected', 'tags.origin'],
  async handle({ contacts }, { tenant, params, body }) {
    const names = [...(body.tag === undefined ? [] : [body.tag]), ...(body.tags ?? [])]
    return { ok: true, ...(await contacts.addTags(tenant, params.id, names)) }
  },
})

export const removeContactTag = operation({
  method: 'DELETE',
  path: '/contacts/{id}/tags/{tag}',
  scope: 'contacts:write',
  operationId: 'removeContactTag',
  summary: 'Remove a tag (URL-encoded name)',
  description: 'System tags give 400. Removing a tag the contact does not carry answers 200 with removed false.',
  tags,
  params: TagParams,
  response: RemoveTagResponse,
  errors: { 400: 'system_tag: a system tag cannot be removed through the API' },
  germanAliases: ['tags.origin'],
  async handle({ contacts }, { tenant, params }) {
    const { removed, tags } = await contacts.removeTag(tenant, params.id, params.tag)
    return { ok: true, removed, tags }
  },
})

export function contactsRoutes(contacts: ContactsService) {
  return async (app: FastifyInstance): Promise<void> => {
    for (const schema of contactSchemas) app.addSchema(schema)
    mountOperations(app, { contacts }, [
      listContacts,
      createContact,
      listContactTagCounts,
      getContact,
      updateContact,
      deleteContact,
      addContactTags,
      removeContactTag,
    ])
  }
}
