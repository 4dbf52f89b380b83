import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations } from '../../platform/http/operation.ts'
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
import { operation } from './contacts.routes.ts'
import type { ContactsService } from './contacts.service.ts'

const tags = ['contact fields']

const DEFINITION_RULES =
  'field_key_invalid: the key is malformed or reserved; field_label_invalid; field_type_invalid; ' +
  'field_options_invalid: options missing for choice, given for another type, empty, duplicated or too long; ' +
  'field_max_length_invalid: not 1-1024 or not a text field; field_default_invalid: the default does not fit the field'

/**
 * The operations on an account's custom field definitions (issue 33): /v1/contact-fields, or the same for the web
 * app's settings page (/app), whose document has no shared schemas and no error answers.
 */
function fieldOperations(mount: 'v1' | 'app') {
  const app = mount === 'app'
  const FieldList = app ? AppFieldListResponse : FieldListResponse
  const Field = app ? AppFieldResponse : FieldResponse
  const errors = <E>(documented: E) => (app ? undefined : documented)
  return {
    list: operation({
      method: 'GET',
      path: '/contact-fields',
      mount,
      scope: 'contacts:read',
      operationId: 'listContactFields',
      summary: 'List the custom fields of contacts',
      description: `Every definition in order (at most ${MAX_FIELDS}, never paged: has_more is always false).`,
      tags,
      response: FieldList,
      async handle({ contacts }, { tenant }) {
        const fields = await contacts.fields.list(tenant.accountId)
        return { contact_fields: fields, limit: MAX_FIELDS, offset: 0, has_more: false, next_offset: null }
      },
    }),
    create: operation({
      method: 'POST',
      path: '/contact-fields',
      mount,
      scope: 'settings:write',
      operationId: 'createContactField',
      summary: 'Define a custom field',
      description:
        'A contact then carries its value in `fields` under the key, and templates fill `{{key}}` from it. ' +
        `At most ${MAX_FIELDS} per account.`,
      tags,
      body: CreateFieldBody,
      status: 201,
      response: Field,
      errors: errors({
        400: `${DEFINITION_RULES}; field_limit: the account has ${MAX_FIELDS} fields`,
        409: 'field_exists: a field with this key exists',
      }),
      async handle({ contacts }, { tenant, body }) {
        return { contact_field: await contacts.fields.create(tenant.accountId, body as FieldDefinitionInput) }
      },
    }),
    get: operation({
      method: 'GET',
      path: '/contact-fields/{key}',
      mount,
      scope: 'contacts:read',
      operationId: 'getContactField',
      summary: 'One custom field',
      description: 'The field with this key, as the list shows it; a key the account does not have is a 404.',
      tags,
      params: FieldKeyParams,
      response: Field,
      async handle({ contacts }, { tenant, params }) {
        return { contact_field: await contacts.fields.get(tenant.accountId, params.key) }
      },
    }),
    update: operation({
      method: 'PATCH',
      path: '/contact-fields/{key}',
      mount,
      scope: 'settings:write',
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
      response: Field,
      errors: errors({
        400: DEFINITION_RULES,
        409: 'field_values_incompatible (with count and field): stored values do not fit the change',
      }),
      async handle({ contacts }, { tenant, params, body }) {
        const field = await contacts.fields.update(tenant.accountId, params.key, body as FieldDefinitionChange)
        return { contact_field: field }
      },
    }),
    delete: operation({
      method: 'DELETE',
      path: '/contact-fields/{key}',
      mount,
      scope: 'settings:write',
      operationId: 'deleteContactField',
      summary: 'Delete a custom field and its value on every contact',
      description:
        'Templates, newsletters and follow-ups that use {{key}} can no longer fill it. One statement removes ' +
        'the values.',
      tags,
      params: FieldKeyParams,
      // REST answers no body; a tool gets how many contacts lost their value
      status: 204,
      response: Type.Null({ description: 'deleted' }),
      async handle({ contacts }, { tenant, params }) {
        const { valuesRemoved } = await contacts.fields.delete(tenant.accountId, params.key)
        return { ok: true, values_removed: valuesRemoved }
      },
    }),
  }
}

/** /v1/contact-fields, which the tools stand for. */
export const contactFieldOperations = fieldOperations('v1')

export function contactFieldsRoutes(contacts: ContactsService, options: { app?: boolean } = {}) {
  const operations = options.app ? fieldOperations('app') : contactFieldOperations
  return async (app: FastifyInstance): Promise<void> => {
    if (!options.app) app.addSchema(ContactFieldSchema)
    mountOperations(app, { contacts }, Object.values(operations))
  }
}
