import { Type } from 'typebox'
import { pageFields, paginationQuery } from '../../platform/http/pagination.ts'
import { FieldValueInput } from './contacts.fields.schemas.ts'
import { MAX_TAG_LENGTH, MAX_TAGS_PER_CONTACT, TAG_COUNT_SAMPLE } from './contacts.rules.ts'
import { ACQUISITIONS, OPTIN_STATES, TAG_ORIGINS } from './contacts.tables.ts'

const literals = <T extends readonly string[]>(values: T, description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  )

const OptinState = literals(OPTIN_STATES)
const Acquisition = literals(ACQUISITIONS, 'why the contact was acquired; default marketing')

export const Contact = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    email: Type.String({ description: 'lower-cased; empty string when none' }),
    phone: Type.String({ description: 'E.164; empty string when none' }),
    optin_chat: OptinState,
    optin_email: OptinState,
    tags: Type.Array(Type.String(), { description: 'each name once, whatever its origins' }),
    language: Type.String(),
    source: Type.String({ description: 'where the contact came from: api, import, …' }),
    acquisition: Acquisition,
    fields: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
      description:
        'custom field values by key (GET /v1/contact-fields): text and choice as strings, numbers, dates as "YYYY-MM-DD", booleans; only the set ones',
      examples: [{ customer_no: 4711, birthday: '1990-05-17', level: 'gold', newsletter_ok: true }],
    }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'Contact', title: 'Contact' },
)

/** The fields of a `contact.created` event's data, in order: the contact's own, without `acquisition`. */
export const CONTACT_EVENT_FIELDS = Object.keys(Contact.properties).filter((key) => key !== 'acquisition')

export const ContactTag = Type.Object(
  {
    name: Type.String(),
    origin: literals(TAG_ORIGINS, 'the strongest origin of the name: system over ki over manuell'),
    herkunft: Type.String({ description: 'deprecated German alias of origin' }),
  },
  { $id: 'ContactTag', title: 'ContactTag' },
)

export const TagCount = Type.Object(
  {
    name: Type.String(),
    origin: literals(TAG_ORIGINS),
    count: Type.Integer({ description: 'checked contacts carrying the tag' }),
    herkunft: Type.String({ description: 'deprecated German alias of origin' }),
    anzahl: Type.Integer({ description: 'deprecated German alias of count' }),
  },
  { $id: 'TagCount', title: 'TagCount' },
)

export const ContactId = Type.Object({ id: Type.String({ format: 'uuid' }) })

export const ListQuery = Type.Object({
  q: Type.Optional(
    Type.String({
      maxLength: 100,
      description:
        'partial, case-insensitive match on name, email and phone; a phone term matches whatever spaces and hyphens it has; empty means no filter',
    }),
  ),
  ...paginationQuery({ maxLimit: 200, defaultLimit: 50, maxOffset: 100000 }),
  created_after: Type.Optional(Type.String({ format: 'date-time', description: 'strictly after' })),
  fields: Type.Optional(
    Type.String({
      maxLength: 4000,
      description:
        'conditions on custom fields, all of which must hold: a JSON array (URL-encoded) of {field, op, value?, days?, ignore_year?}, such as [{"field":"level","op":"equals","value":"gold"}]; ops: equals, not_equals, is_set, is_empty (every type), before, after, within_next_days (date), greater_than, less_than (number). A condition that does not fit the account\'s fields is a 400 field_condition_invalid naming the field and the rule',
    }),
  ),
})

export const ListResponse = Type.Object({
  contacts: Type.Array(Type.Ref('Contact')),
  ...pageFields,
  q: Type.Optional(Type.String({ description: 'the term used; only when q was given' })),
})

const Name = Type.String({ maxLength: 120 })
const Email = Type.Union([Type.String({ format: 'email', maxLength: 254 }), Type.Literal('')])
const Phone = Type.String({ maxLength: 40, description: 'international format, such as +49 151 23456789' })
/** Values checked by the service against the account's definitions (400 field_unknown, field_invalid). */
export const FieldsInput = Type.Record(Type.String({ maxLength: 40 }), FieldValueInput, {
  maxProperties: 50,
  description:
    'custom field values by key, merged into the contact: given keys are set, null clears one, keys not given stay. ' +
    'An unknown key is 400 field_unknown, a value that does not fit its field 400 field_invalid (nothing is written).',
  examples: [{ customer_no: 4711, birthday: '1990-05-17', level: null }],
})

export const CreateBody = Type.Object({
  name: Type.Optional(Name),
  email: Type.Optional(Email),
  phone: Type.Optional(Phone),
  acquisition: Type.Optional(Acquisition),
  fields: Type.Optional(FieldsInput),
  upsert: Type.Optional(
    Type.Boolean({ description: 'update the contact holding this email or phone instead of answering 409' }),
  ),
})

export const CreateQuery = Type.Object({
  upsert: Type.Optional(Type.Boolean({ default: false, description: 'same as upsert in the body' })),
})

export const CreatedResponse = Type.Object({
  ok: Type.Boolean(),
  created: Type.Boolean(),
  updated: Type.Optional(Type.Boolean({ description: 'on upsert: whether anything changed' })),
  contact: Type.Ref('Contact'),
})

export const ContactResponse = Type.Object({ contact: Type.Ref('Contact') })

export const UpdateBody = Type.Object({
  name: Type.Optional(Type.Union([Name, Type.Null()])),
  email: Type.Optional(Type.Union([Email, Type.Null()])),
  phone: Type.Optional(Type.Union([Phone, Type.Null()])),
  fields: Type.Optional(FieldsInput),
})

export const UpdatedResponse = Type.Object({ ok: Type.Boolean(), contact: Type.Ref('Contact') })

export const DeleteQuery = Type.Object({
  requested_by_contact: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'the end customer asked for the deletion: a deletion confirmation is e-mailed to them after the commit ' +
        '(when the contact has an e-mail address and the account an e-mail channel)',
    }),
  ),
})

export const DeleteResponse = Type.Object({
  ok: Type.Boolean(),
  removed: Type.Record(Type.String(), Type.Integer(), {
    description:
      'rows removed per table: contacts and contact_tags, plus the tables of modules that keep data about contacts',
  }),
  anonymized: Type.Record(Type.String(), Type.Integer(), {
    description: 'rows kept without personal data: events, consent_records',
  }),
  confirmation_sent: Type.Boolean({
    description:
      'true when the deletion confirmation to the end customer is queued (a durable job, retried until sent)',
  }),
  bestaetigung_gesendet: Type.Boolean({ description: 'deprecated German alias of confirmation_sent' }),
})

const TagName = Type.String({ minLength: 1, maxLength: MAX_TAG_LENGTH })

export const AddTagsBody = Type.Object({
  tag: Type.Optional(TagName),
  tags: Type.Optional(Type.Array(TagName, { maxItems: 100 })),
})

export const AddTagsResponse = Type.Object({
  ok: Type.Boolean(),
  tags: Type.Array(Type.Ref('ContactTag')),
  added: Type.Array(Type.String()),
  rejected: Type.Array(Type.String(), {
    description: `refused names: blank, or beyond ${MAX_TAGS_PER_CONTACT} tags per contact`,
  }),
  hinzugefuegt: Type.Array(Type.String(), { description: 'deprecated German alias of added' }),
  verworfen: Type.Array(Type.String(), { description: 'deprecated German alias of rejected' }),
})

export const TagParams = Type.Object({ id: Type.String({ format: 'uuid' }), tag: Type.String({ minLength: 1 }) })

export const RemoveTagResponse = Type.Object({
  ok: Type.Boolean(),
  removed: Type.Boolean({ description: 'false when the contact did not carry the tag' }),
  tags: Type.Array(Type.Ref('ContactTag')),
})

export const TagCountsResponse = Type.Object({
  tags: Type.Array(Type.Ref('TagCount')),
  checked: Type.Integer({ description: `contacts checked, newest first; at most ${TAG_COUNT_SAMPLE}` }),
  capped: Type.Boolean({
    description: `true when more than ${TAG_COUNT_SAMPLE} contacts exist: counts are incomplete`,
  }),
  geprueft: Type.Integer({ description: 'deprecated German alias of checked' }),
  gedeckelt: Type.Boolean({ description: 'deprecated German alias of capped' }),
})
