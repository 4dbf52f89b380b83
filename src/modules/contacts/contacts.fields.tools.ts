import { Type } from 'typebox'
import { obj, ok } from '../../platform/tools/outputs.ts'
import { contactFieldOperations as field } from './contacts.fields.routes.ts'
import { tool } from './contacts.tools.shared.ts'

// The custom field definitions' tools (the settings' fields): their arguments are the operations' fields.

const FieldKey = Type.String({
  minLength: 1,
  maxLength: 40,
  description: 'the field’s key, as list_contact_fields shows it',
})
const describe = { label: 'what people read, such as Kundennummer' }

export const contactFieldTools = [
  tool(field.list, {
    name: 'list_contact_fields',
    title: 'Custom fields of contacts',
    description:
      'The account’s custom field definitions in order (at most 50): key (the variable {{key}} and the key in a contact’s fields), label, type (text, number, date, boolean, choice), options, default, max_length.',
  }),
  tool(field.create, {
    name: 'create_contact_field',
    description:
      'Define a custom field of contacts (at most 50): key lower-case a-z, 0-9 and _ (never a built-in variable such as name, email, phone, first_name), a label, a type: text (max_length, default 255), number, date (YYYY-MM-DD), boolean, or choice with its options. A default is filled into messages for contacts without a value.',
    // a length limit beside the operation's pattern, as every string argument of a tool has one
    schemas: { key: Type.String({ minLength: 1, maxLength: 40, description: 'such as customer_no' }) },
    describe,
  }),
  tool(field.update, {
    name: 'update_contact_field',
    title: 'Change a custom field',
    description:
      'Change a custom field’s label, type, options, default or max_length (never its key). A new type converts the stored values (a text "42" to a number, "2026-01-31" to a date, true/false/ja/nein to a boolean, anything to text, a value among the options to choice); when some would not fit, or a removed option is still used, nothing changes and the error counts the contacts (field_values_incompatible). null clears options, default or max_length.',
    // the spec's key of at most 40 characters, where the path takes any
    schemas: { key: FieldKey },
    describe,
  }),
  tool(field.delete, {
    name: 'delete_contact_field',
    title: 'Delete a custom field',
    description:
      'Delete a custom field and its value on every contact. Templates, newsletters and follow-ups that use {{key}} can no longer fill it.',
    schemas: { key: FieldKey },
    output: obj({ ...ok, values_removed: Type.Integer({ description: 'contacts that lost their value' }) }),
    async preview(ctx, { tenant, params: { key } }) {
      const contact_field = await ctx.services.contacts.fields.get(tenant.accountId, key)
      return {
        action: `delete the custom field ${contact_field.key} (${contact_field.label}) and its value on every contact`,
        contact_field,
        contacts_with_value: await ctx.services.contacts.fields.valueCount(tenant.accountId, key),
      }
    },
  }),
]
