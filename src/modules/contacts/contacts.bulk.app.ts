import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { mountOperations } from '../../platform/http/operation.ts'
import {
  BulkDeleteBody,
  BulkDeleteResponse,
  BulkTagBody,
  BulkTagResponse,
  BulkUntagResponse,
  ConditionFieldsResponse,
  ConsentChange,
  ContactFilterQuery,
  DeleteTagResponse,
  ExportQuery,
  LabelsQuery,
  LabelsResponse,
  LookupQuery,
  LookupResponse,
  MatchingResponse,
  RenameTagBody,
  RenameTagResponse,
  TagInfo,
  TagParams,
} from './contacts.app.schemas.ts'
import { BULK_DELETE_MAX, BULK_MAX, EXPORT_MAX } from './contacts.bulk.ts'
import { OPS_BY_TYPE, parseFieldConditionsParam } from './contacts.field-conditions.ts'
import { operation } from './contacts.routes.ts'
import type { ContactsService } from './contacts.service.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A filter from the query string: its field conditions parsed (400 naming what is wrong). */
function filterOfQuery(query: Static<typeof ContactFilterQuery>) {
  const { fields, ...criteria } = query
  return fields === undefined ? criteria : { ...criteria, fields: parseFieldConditionsParam(fields) }
}

// Looking contacts up, exporting them, tags account-wide, and bulk changes by filter (contacts.bulk.ts), for the web
// app (/app); the tools stand for them as well.
const tags = ['app']
const mount = 'app'

export const listContactLabels = operation({
  method: 'GET',
  path: '/contacts/labels',
  mount,
  scope: 'contacts:read',
  operationId: 'listContactLabels',
  summary: 'Name, phone and e-mail of up to 100 contacts by id',
  description:
    'Needs contacts:read. What a list of runs, sends or recipients shows for each contact id (ids separated by commas); ids that are not contacts of this account are left out. One statement.',
  tags,
  query: LabelsQuery,
  response: LabelsResponse,
  async handle({ contacts }, { tenant, query }) {
    const ids = [...new Set(query.ids.split(',').filter((id) => id !== ''))]
    const bad = ids.find((id) => !UUID.test(id))
    if (bad !== undefined || ids.length > 100) {
      throw badRequest('ids: at most 100 contact ids (uuids), separated by commas', 'invalid_ids')
    }
    return { contacts: await contacts.bulk.labels(tenant, ids) }
  },
})

export const lookUpContact = operation({
  method: 'GET',
  path: '/contacts/lookup',
  mount,
  scope: 'contacts:read',
  operationId: 'lookUpContact',
  summary: 'The contact with exactly this e-mail address or phone number',
  description: 'Needs contacts:read. Normalized as on create (any phone format in international form); 404 when none.',
  tags,
  query: LookupQuery,
  response: LookupResponse,
  async handle({ contacts }, { tenant, query }) {
    return { contact: await contacts.bulk.lookup(tenant, query) }
  },
})

export const listConditionFields = operation({
  method: 'GET',
  path: '/contacts/condition-fields',
  mount,
  scope: 'contacts:read',
  operationId: 'listConditionFields',
  summary: 'The custom fields a filter or segment can name, with the condition ops each takes',
  description:
    'Needs contacts:read. For the condition builders of the contact list and the newsletter segment: each field’s key, label, type, options (choice) and ops (every type: equals, not_equals, is_set, is_empty; date also before, after, within_next_days; number also greater_than, less_than).',
  tags,
  response: ConditionFieldsResponse,
  async handle({ contacts }, { tenant }) {
    const definitions = await contacts.bulk.fieldDefinitions(tenant)
    return {
      fields: definitions.map(({ key, label, type, options }) => ({
        key,
        label,
        type,
        options,
        ops: [...OPS_BY_TYPE[type]],
      })),
    }
  },
})

export const countContacts = operation({
  method: 'GET',
  path: '/contacts/count',
  mount,
  scope: 'contacts:read',
  operationId: 'countContacts',
  summary: 'How many contacts match a filter',
  description:
    'Needs contacts:read. Every contact counted: by tag, chat or e-mail opt-in state, source and custom fields (all criteria given must hold). A field condition that does not fit the account’s fields is a 400 field_condition_invalid naming the field and the rule.',
  tags,
  query: ContactFilterQuery,
  response: MatchingResponse,
  async handle({ contacts }, { tenant, query }) {
    return { matching: await contacts.bulk.count(tenant, filterOfQuery(query)) }
  },
})

export const bulkTagContacts = operation({
  method: 'POST',
  path: '/contacts/bulk/tag',
  mount,
  scope: 'contacts:write',
  operationId: 'bulkTagContacts',
  summary: 'Tag every matching contact',
  description: `Needs contacts:write. Origin manuell; at most ${BULK_MAX} contacts a call (has_more: call again); contacts with 30 tags are skipped; system tags 400.`,
  tags,
  body: BulkTagBody,
  response: BulkTagResponse,
  handle: ({ contacts }, { tenant, body }) => contacts.bulk.tagMatching(tenant, body.filter, body.tag),
})

export const bulkUntagContacts = operation({
  method: 'POST',
  path: '/contacts/bulk/untag',
  mount,
  scope: 'contacts:write',
  operationId: 'bulkUntagContacts',
  summary: 'Remove a tag from every matching contact',
  description: 'Needs contacts:write. System tags 400.',
  tags,
  body: BulkTagBody,
  response: BulkUntagResponse,
  handle: ({ contacts }, { tenant, body }) => contacts.bulk.untagMatching(tenant, body.filter, body.tag),
})

export const bulkDeleteContacts = operation({
  method: 'POST',
  path: '/contacts/bulk/delete',
  mount,
  scope: 'contacts:delete',
  operationId: 'bulkDeleteContacts',
  summary: 'Delete every matching contact',
  description: `Needs contacts:delete. Each as DELETE /v1/contacts/{id} deletes one; at most ${BULK_DELETE_MAX} a call; a filter without criterion is 400 filter_required.`,
  tags,
  body: BulkDeleteBody,
  response: BulkDeleteResponse,
  handle: ({ contacts }, { tenant, body }) => contacts.bulk.deleteMatching(tenant, body.filter),
})

export const getTag = operation({
  method: 'GET',
  path: '/tags/{tag}',
  mount,
  scope: 'contacts:read',
  operationId: 'getTag',
  summary: 'One tag: how many contacts carry it',
  description:
    'Needs contacts:read. Every contact counted (not the sample of GET /v1/contacts/tags); 404 when no contact has it.',
  tags,
  params: TagParams,
  response: Type.Object({ tag: TagInfo }),
  async handle({ contacts }, { tenant, params }) {
    return { tag: await contacts.bulk.getTag(tenant, params.tag) }
  },
})

export const renameTag = operation({
  method: 'POST',
  path: '/tags/{tag}/rename',
  mount,
  scope: 'contacts:write',
  operationId: 'renameTag',
  summary: 'Rename a tag on every contact',
  description:
    'Needs contacts:write. Each contact keeps the tag’s origin; one that has both names keeps one. System tags 400.',
  tags,
  params: TagParams,
  body: RenameTagBody,
  response: RenameTagResponse,
  handle: ({ contacts }, { tenant, params, body }) => contacts.bulk.renameTag(tenant, params.tag, body.new_name),
})

export const deleteTag = operation({
  method: 'DELETE',
  path: '/tags/{tag}',
  mount,
  scope: 'contacts:write',
  operationId: 'deleteTag',
  summary: 'Remove a tag from every contact',
  description: 'Needs contacts:write. System tags 400; 404 when no contact has it.',
  tags,
  params: TagParams,
  response: DeleteTagResponse,
  handle: ({ contacts }, { tenant, params }) => contacts.bulk.deleteTag(tenant, params.tag),
})

export const listContactConsentHistory = operation({
  method: 'GET',
  path: '/contacts/{id}/consent-history',
  mount,
  scope: 'contacts:read',
  operationId: 'listContactConsentHistory',
  summary: "A contact's consent history, oldest first",
  description:
    'Needs contacts:read. Every change of the chat and e-mail opt-in with its source, the address it was about ' +
    "and its evidence (the contact page's audit view). Another account's contact, or none, is a 404.",
  params: Type.Object({ id: Type.String() }),
  tags,
  response: Type.Object({ history: Type.Array(ConsentChange) }),
  async handle({ contacts }, { tenant, params }) {
    return { history: await contacts.bulk.consentHistory(tenant, params.id) }
  },
})

/** The web app's routes of contacts.bulk.ts; the CSV export stays a plain route (it sets headers on the reply). */
export function contactBulkRoutes(contacts: ContactsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { contacts }, [listContactLabels, lookUpContact])

    app.get<{ Querystring: Static<typeof ExportQuery> }>(
      '/contacts/export',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'exportContacts',
          summary: 'Export the matching contacts as CSV',
          description:
            'Needs contacts:read. text/csv with a header line (id, name, email, phone, optin_chat, optin_email, tags separated by ;, language, source, created_at, then one column per custom field named by its key), oldest first; limit and offset page through large accounts (header x-has-more). The import reads such a file back unchanged.',
          tags,
          querystring: ExportQuery,
          produces: ['text/csv'],
        },
      },
      async (request, reply) => {
        const { limit, offset, ...filter } = request.query
        const result = await contacts.bulk.exportCsv(request.tenant, filterOfQuery(filter), {
          limit: limit ?? EXPORT_MAX,
          offset: offset ?? 0,
        })
        return reply
          .header('content-type', 'text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="contacts.csv"')
          .header('x-has-more', String(result.has_more))
          .send(result.csv)
      },
    )

    mountOperations(app, { contacts }, [
      listConditionFields,
      countContacts,
      bulkTagContacts,
      bulkUntagContacts,
      bulkDeleteContacts,
      getTag,
      renameTag,
      deleteTag,
    ])
  }
}
