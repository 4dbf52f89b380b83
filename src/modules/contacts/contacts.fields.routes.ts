import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { errorResponses } from '../../platform/http/errors.ts'
import { type FieldDefinitionChange, type FieldDefinitionInput, MAX_FIELDS } from './contacts.fields.rules.ts'
import {
  AppFieldListResponse,
  AppFieldResponse,
  ContactFieldSchema,
  CreateFieldBody,
  FieldKeyParams,
  FieldListResponse,
  FieldResponse,
  UpdateFieldBody,
} from './contacts.fields.schemas.ts'
import type { ContactFieldsService } from './contacts.fields.service.ts'

const tags = ['contact fields']

const DEFINITION_RULES =
  'field_key_invalid: the key is malformed or reserved; field_label_invalid; field_type_invalid; ' +
  'field_options_invalid: options missing for choice, given for another type, empty, duplicated or too long; ' +
  'field_max_length_invalid: not 1-1024 or not a text field; field_default_invalid: the default does not fit the field'

/** /v1/contact-fields: an account's custom field definitions (issue 33). */
export function contactFieldsRoutes(service: ContactFieldsService, options: { app?: boolean } = {}) {
  // /app (the web app's settings page) answers the same, its document without shared schemas
  const FieldList = options.app ? AppFieldListResponse : FieldListResponse
  const Field = options.app ? AppFieldResponse : FieldResponse
  const errors: typeof errorResponses = options.app ? () => ({}) : errorResponses
  return async (app: FastifyInstance): Promise<void> => {
    if (!options.app) app.addSchema(ContactFieldSchema)

    app.get(
      '/contact-fields',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'listContactFields',
          summary: 'List the custom fields of contacts',
          description: `Every definition in order (at most ${MAX_FIELDS}, never paged: has_more is always false).`,
          tags,
          response: { 200: FieldList },
        },
      },
      async (request) => {
        const fields = await service.list(request.tenant.accountId)
        return { contact_fields: fields, limit: MAX_FIELDS, offset: 0, has_more: false, next_offset: null }
      },
    )

    app.post(
      '/contact-fields',
      {
        config: { scope: 'settings:write' },
        schema: {
          operationId: 'createContactField',
          summary: 'Define a custom field',
          description:
            'A contact then carries its value in `fields` under the key, and templates fill `{{key}}` from it. ' +
            `At most ${MAX_FIELDS} per account.`,
          tags,
          body: CreateFieldBody,
          response: {
            ...errors({
              400: `${DEFINITION_RULES}; field_limit: the account has ${MAX_FIELDS} fields`,
              409: 'field_exists: a field with this key exists',
            }),
            201: Field,
          },
        },
      },
      async (request, reply) => {
        const field = await service.create(request.tenant.accountId, request.body as FieldDefinitionInput)
        return reply.code(201).send({ contact_field: field })
      },
    )

    app.get(
      '/contact-fields/:key',
      {
        config: { scope: 'contacts:read' },
        schema: {
          operationId: 'getContactField',
          summary: 'One custom field',
          description: 'The field with this key, as the list shows it; a key the account does not have is a 404.',
          tags,
          params: FieldKeyParams,
          response: { 200: Field },
        },
      },
      async (request) => {
        const { key } = request.params as Static<typeof FieldKeyParams>
        return { contact_field: await service.get(request.tenant.accountId, key) }
      },
    )

    app.patch(
      '/contact-fields/:key',
      {
        config: { scope: 'settings:write' },
        schema: {
          operationId: 'updateContactField',
          summary: 'Change a custom field: label, type, options, default, max_length',
          description:
            'A changed type converts every stored value in one statement: any value to text; a text that is a number ' +
            '("42", "4,5") to number; "YYYY-MM-DD" to date; true/false, ja/nein, yes/no, 1/0 to boolean; a value that ' +
            'is one of the options to choice. When any value would not fit, nor after removing a choice option that ' +
            'values use or lowering max_length below a value, nothing changes: 409 field_values_incompatible with ' +
            '`count`, the contacts whose value does not fit. A changed type drops options and max_length of the old ' +
            'type and converts the default unless a new one is given.',
          tags,
          params: FieldKeyParams,
          body: UpdateFieldBody,
          response: {
            ...errors({
              400: DEFINITION_RULES,
              409: 'field_values_incompatible (with count and field): stored values do not fit the change',
            }),
            200: Field,
          },
        },
      },
      async (request) => {
        const { key } = request.params as Static<typeof FieldKeyParams>
        const field = await service.update(request.tenant.accountId, key, request.body as FieldDefinitionChange)
        return { contact_field: field }
      },
    )

    app.delete(
      '/contact-fields/:key',
      {
        config: { scope: 'settings:write' },
        schema: {
          operationId: 'deleteContactField',
          summary: 'Delete a custom field and its value on every contact',
          description:
            'Templates, newsletters and follow-ups that use {{key}} can no longer fill it. One statement removes ' +
            'the values.',
          tags,
          params: FieldKeyParams,
          response: { 204: Type.Null({ description: 'deleted' }) },
        },
      },
      async (request, reply) => {
        const { key } = request.params as Static<typeof FieldKeyParams>
        await service.delete(request.tenant.accountId, key)
        return reply.code(204).send()
      },
    )
  }
}
