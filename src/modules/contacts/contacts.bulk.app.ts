import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import {
  BulkDeleteBody,
  BulkDeleteResponse,
  BulkTagBody,
  BulkTagResponse,
  BulkUntagResponse,
  ConditionFieldsResponse,
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
import type { ContactsService } from './contacts.service.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A filter from the query string: its field conditions parsed (400 naming what is wrong). */
function filterOfQuery(query: Static<typeof ContactFilterQuery>) {
  const { fields, ...criteria } = query
  return fields === undefined ? criteria : { ...criteria, fields: parseFieldConditionsParam(fields) }
}

/** Looking contacts up, exporting them, tags account-wide, and bulk changes by filter (contacts.bulk.ts). */
export function contactBulkRoutes(service: ContactsService) {
  const { bulk } = service
  const tags = ['app']
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Static<typeof LabelsQuery> }>(
      '/contacts/labels',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'listContactLabels',
          summary: 'Name, phone and e-mail of up to 100 contacts by id',
          description:
            'Needs contacts:read. What a list of runs, sends or recipients shows for each contact id (ids separated by commas); ids that are not contacts of this account are left out. One statement.',
          tags,
          querystring: LabelsQuery,
          response: { 200: LabelsResponse },
        },
      },
      async (request) => {
        const ids = [...new Set(request.query.ids.split(',').filter((id) => id !== ''))]
        const bad = ids.find((id) => !UUID.test(id))
        if (bad !== undefined || ids.length > 100) {
          throw badRequest('ids: at most 100 contact ids (uuids), separated by commas', 'invalid_ids')
        }
        return { contacts: await bulk.labels(request.tenant, ids) }
      },
    )

    app.get<{ Querystring: Static<typeof LookupQuery> }>(
      '/contacts/lookup',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'lookUpContact',
          summary: 'The contact with exactly this e-mail address or phone number',
          description:
            'Needs contacts:read. Normalized as on create (any phone format in international form); 404 when none.',
          tags,
          querystring: LookupQuery,
          response: { 200: LookupResponse },
        },
      },
      async (request) => {
        return { contact: await bulk.lookup(request.tenant, request.query) }
      },
    )

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
        const result = await bulk.exportCsv(request.tenant, filterOfQuery(filter), {
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

    app.get(
      '/contacts/condition-fields',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'listConditionFields',
          summary: 'The custom fields a filter or segment can name, with the condition ops each takes',
          description:
            'Needs contacts:read. For the condition builders of the contact list and the newsletter segment: each field’s key, label, type, options (choice) and ops (every type: equals, not_equals, is_set, is_empty; date also before, after, within_next_days; number also greater_than, less_than).',
          tags,
          response: { 200: ConditionFieldsResponse },
        },
      },
      async (request) => {
        const definitions = await bulk.fieldDefinitions(request.tenant)
        return {
          fields: definitions.map((d) => ({
            key: d.key,
            label: d.label,
            type: d.type,
            options: d.options,
            ops: [...OPS_BY_TYPE[d.type]],
          })),
        }
      },
    )

    app.get<{ Querystring: Static<typeof ContactFilterQuery> }>(
      '/contacts/count',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'countContacts',
          summary: 'How many contacts match a filter',
          description:
            'Needs contacts:read. Every contact counted: by tag, chat or e-mail opt-in state, source and custom fields (all criteria given must hold). A field condition that does not fit the account’s fields is a 400 field_condition_invalid naming the field and the rule.',
          tags,
          querystring: ContactFilterQuery,
          response: { 200: MatchingResponse },
        },
      },
      async (request) => {
        const filter = filterOfQuery(request.query)
        return { matching: await bulk.count(request.tenant, filter) }
      },
    )

    app.post<{ Body: Static<typeof BulkTagBody> }>(
      '/contacts/bulk/tag',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'bulkTagContacts',
          summary: 'Tag every matching contact',
          description: `Needs contacts:write. Origin manuell; at most ${BULK_MAX} contacts a call (has_more: call again); contacts with 30 tags are skipped; system tags 400.`,
          tags,
          body: BulkTagBody,
          response: { 200: BulkTagResponse },
        },
      },
      async (request) => {
        return bulk.tagMatching(request.tenant, request.body.filter, request.body.tag)
      },
    )

    app.post<{ Body: Static<typeof BulkTagBody> }>(
      '/contacts/bulk/untag',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'bulkUntagContacts',
          summary: 'Remove a tag from every matching contact',
          description: 'Needs contacts:write. System tags 400.',
          tags,
          body: BulkTagBody,
          response: { 200: BulkUntagResponse },
        },
      },
      async (request) => {
        return bulk.untagMatching(request.tenant, request.body.filter, request.body.tag)
      },
    )

    app.post<{ Body: Static<typeof BulkDeleteBody> }>(
      '/contacts/bulk/delete',
      {
        config: { scope: 'contacts:delete' },
        schema: {
          operationId: 'bulkDeleteContacts',
          summary: 'Delete every matching contact',
          description: `Needs contacts:delete. Each as DELETE /v1/contacts/{id} deletes one; at most ${BULK_DELETE_MAX} a call; a filter without criterion is 400 filter_required.`,
          tags,
          body: BulkDeleteBody,
          response: { 200: BulkDeleteResponse },
        },
      },
      async (request) => {
        return bulk.deleteMatching(request.tenant, request.body.filter)
      },
    )

    app.get<{ Params: Static<typeof TagParams> }>(
      '/tags/:tag',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'getTag',
          summary: 'One tag: how many contacts carry it',
          description:
            'Needs contacts:read. Every contact counted (not the sample of GET /v1/contacts/tags); 404 when no contact has it.',
          tags,
          params: TagParams,
          response: { 200: Type.Object({ tag: TagInfo }) },
        },
      },
      async (request) => {
        return { tag: await bulk.getTag(request.tenant, request.params.tag) }
      },
    )

    app.post<{ Params: Static<typeof TagParams>; Body: Static<typeof RenameTagBody> }>(
      '/tags/:tag/rename',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'renameTag',
          summary: 'Rename a tag on every contact',
          description:
            'Needs contacts:write. Each contact keeps the tag’s origin; one that has both names keeps one. System tags 400.',
          tags,
          params: TagParams,
          body: RenameTagBody,
          response: { 200: RenameTagResponse },
        },
      },
      async (request) => {
        return bulk.renameTag(request.tenant, request.params.tag, request.body.new_name)
      },
    )

    app.delete<{ Params: Static<typeof TagParams> }>(
      '/tags/:tag',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'deleteTag',
          summary: 'Remove a tag from every contact',
          description: 'Needs contacts:write. System tags 400; 404 when no contact has it.',
          tags,
          params: TagParams,
          response: { 200: DeleteTagResponse },
        },
      },
      async (request) => {
        return bulk.deleteTag(request.tenant, request.params.tag)
      },
    )
  }
}
