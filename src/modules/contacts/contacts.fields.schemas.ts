import { type TSchema, Type } from 'typebox'
import { CUSTOM_FIELD_TYPES } from './contacts.field-types.ts'
import {
  DEFAULT_MAX_LENGTH,
  MAX_FIELDS,
  MAX_LABEL_LENGTH,
  MAX_MAX_LENGTH,
  MAX_OPTION_LENGTH,
  MAX_OPTIONS,
} from './contacts.fields.rules.ts'

const FieldType = Type.Union(
  CUSTOM_FIELD_TYPES.map((t) => Type.Literal(t)),
  {
    description:
      'text and choice: values are strings; number: JSON numbers; date: "YYYY-MM-DD" strings; boolean: true or false',
  },
)

/**
 * A value of a field, as its type says. No `type` keyword on purpose: with the request schema's type coercion a
 * union of types would turn a number into a string; the service checks the value against the definition.
 */
export const FieldValueInput = Type.Unknown({
  description: 'a string (text, choice, date YYYY-MM-DD), a number or a boolean, as the field type says; null clears',
})

const Key = Type.String({
  pattern: '^[a-z][a-z0-9_]{0,39}$',
  description:
    'the variable name: lower-case a-z, 0-9 and _, starting with a letter, at most 40; never a built-in variable (name, full_name, first_name, last_name, email, phone, language, greeting), an attribute of the contact (id, tags, optin_chat, …) or a column name imports read as one (mobil, tel, …)',
  examples: ['customer_no'],
})
const Label = Type.String({ minLength: 1, maxLength: MAX_LABEL_LENGTH, examples: ['Kundennummer'] })
const Options = Type.Array(Type.String({ minLength: 1, maxLength: MAX_OPTION_LENGTH }), {
  minItems: 1,
  maxItems: MAX_OPTIONS,
  uniqueItems: true,
  description: `choice only (required there): the allowed values, 1 to ${MAX_OPTIONS} distinct non-empty texts`,
  examples: [['gold', 'silver', 'bronze']],
})
const MaxLength = Type.Integer({
  minimum: 1,
  maximum: MAX_MAX_LENGTH,
  description: `text only: the longest value in characters (default ${DEFAULT_MAX_LENGTH})`,
})

export const ContactFieldSchema = Type.Object(
  {
    key: Type.String({ description: 'the variable name ({{customer_no}}) and the key in a contact’s fields' }),
    label: Type.String({ description: 'what people read: the web app, a CSV header it is recognised by' }),
    type: FieldType,
    options: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'choice: the allowed values' }),
    default: Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()], {
      description: 'filled into a message when the contact has no value',
    }),
    max_length: Type.Union([Type.Integer(), Type.Null()], { description: 'text: the longest value in characters' }),
    position: Type.Integer({ description: 'the order of the list (new fields come last)' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  {
    $id: 'ContactField',
    title: 'ContactField',
    // a boolean field: OpenAPI linters (spectral's oas3-valid-schema-example) read an object with `type` and `default`
    // as a schema and check the default against that type, which `type: 'choice'` is not
    examples: [
      {
        key: 'newsletter_ok',
        label: 'Newsletter erwünscht',
        type: 'boolean',
        options: null,
        default: false,
        max_length: null,
        position: 2,
        created_at: '2026-01-31T09:00:00.000Z',
        updated_at: '2026-01-31T09:00:00.000Z',
      },
    ],
  },
)

export const FieldKeyParams = Type.Object({ key: Type.String({ maxLength: 100 }) })

export const CreateFieldBody = Type.Object(
  {
    key: Key,
    label: Label,
    type: FieldType,
    options: Type.Optional(Options),
    default: Type.Optional(FieldValueInput),
    max_length: Type.Optional(MaxLength),
  },
  {
    examples: [{ key: 'customer_no', label: 'Kundennummer', type: 'number' }],
  },
)

export const UpdateFieldBody = Type.Object(
  {
    label: Type.Optional(Label),
    type: Type.Optional(FieldType),
    options: Type.Optional(Type.Union([Options, Type.Null()])),
    default: Type.Optional(FieldValueInput),
    max_length: Type.Optional(Type.Union([MaxLength, Type.Null()])),
  },
  {
    description:
      'Only given properties change; the key never does. A new type converts the values (409 field_values_incompatible with count when some do not fit).',
    examples: [{ type: 'number' }],
  },
)

export const FieldResponse = Type.Object({ contact_field: Type.Ref('ContactField') })

export const FieldListResponse = fieldListOf(Type.Ref('ContactField'))

/** The same answers for the web app's /app routes, whose document holds no shared schemas: the field inline. */
const inlineField = Type.Object(ContactFieldSchema.properties)
export const AppFieldResponse = Type.Object({ contact_field: inlineField })
export const AppFieldListResponse = fieldListOf(inlineField)

function fieldListOf<T extends TSchema>(field: T) {
  return Type.Object({
    contact_fields: Type.Array(field, { description: `every field in order, at most ${MAX_FIELDS}` }),
    limit: Type.Integer({ description: `always ${MAX_FIELDS}: the list is never paged` }),
    offset: Type.Integer(),
    has_more: Type.Boolean(),
    next_offset: Type.Union([Type.Integer(), Type.Null()]),
  })
}
