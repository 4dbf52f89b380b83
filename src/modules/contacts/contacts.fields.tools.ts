import { Type } from 'typebox'
import { obj, ok } from '../../platform/tools/outputs.ts'
import { restRule } from '../../platform/tools/tool.ts'
import { CUSTOM_FIELD_TYPES } from './contacts.field-types.ts'
import { MAX_FIELDS } from './contacts.fields.rules.ts'
import {
  CreateFieldBody,
  FieldListResponse,
  FieldResponse,
  FieldValueInput,
  UpdateFieldBody,
} from './contacts.fields.schemas.ts'
import { defineTool } from './contacts.tools.shared.ts'

// The custom field definitions' tools (the settings' fields).

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
