import { Type } from 'typebox'
import { BULK_DELETE_MAX, BULK_MAX, EXPORT_MAX } from './contacts.bulk.ts'
import { FieldConditions } from './contacts.field-conditions.ts'
import { Contact } from './contacts.schemas.ts'
import { OPTIN_STATES } from './contacts.tables.ts'

/** The largest CSV the web app may upload (about two million lines of name, e-mail, phone and tags). */
export const IMPORT_MAX_BYTES = 200 * 1024 * 1024

/** The content type of the import's body and of the export. */
export const CSV = 'text/csv'

const Line = Type.Object({ line: Type.Integer(), reason: Type.String() })
const Note = Type.Object({ line: Type.Integer(), note: Type.String() })

/** The report of a finished import. */
export const ImportReportSchema = Type.Object({
  rows: Type.Integer(),
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer(),
  rejected: Type.Integer(),
  rejected_lines: Type.Array(Line, { description: 'each rejected line with its reason (the first 10,000)' }),
  notes: Type.Array(Note, { description: 'tags left out of imported lines (the first 10,000)' }),
  ignored_columns: Type.Array(Type.String(), {
    description:
      "the header's columns that fill no contact field (name, first and last name, email, phone, tags) nor custom field",
  }),
  field_columns: Type.Array(Type.Object({ column: Type.String(), field: Type.String() }), {
    description: 'the columns that fill a custom field (header name and key)',
  }),
  created_fields: Type.Array(Type.String(), { description: 'the keys of the text fields create_fields made' }),
  country: Type.Union([Type.String(), Type.Null()], {
    description: 'the country national phone numbers were read in (ISO 3166-1 alpha-2; null: international only)',
  }),
  seconds: Type.Number(),
  rows_per_second: Type.Number(),
})

/** The import's overrides of the detection, as `herold import contacts` takes them. */
export const ImportQuery = Type.Object({
  encoding: Type.Optional(Type.String({ maxLength: 20, description: 'utf-8, utf-16le, utf-16be or cp1252' })),
  delimiter: Type.Optional(Type.String({ maxLength: 3, description: ', ; | or tab' })),
  map: Type.Optional(
    Type.String({
      maxLength: 4000,
      description:
        'header names to fields, custom field keys or - (left out): "Mobil=phone,Kundennummer=customer_no,Notizen=-"',
    }),
  ),
  create_fields: Type.Optional(
    Type.Boolean({
      description:
        'every column that fills nothing else becomes a new text field (key from the header) before the import',
    }),
  ),
  country: Type.Optional(
    Type.String({
      minLength: 2,
      maxLength: 2,
      description: 'the country national phone numbers are read in (ISO 3166-1 alpha-2); default: the account’s',
    }),
  ),
})

/** How many bytes of the file the preview reads (the web app sends the file's start). */
export const PREVIEW_MAX_BYTES = 256 * 1024
/** How many lines under the header the preview shows. */
export const PREVIEW_ROWS = 5

export const ImportPreview = Type.Object(
  {
    encoding: Type.String({ description: 'the encoding detected (or given)' }),
    delimiter: Type.String({ description: 'the delimiter detected (or given)' }),
    columns: Type.Array(
      Type.Object({
        header: Type.String(),
        target: Type.Union([Type.String(), Type.Null()], {
          description:
            'what the column fills: name, first_name, last_name, email, phone, tags, or a custom field key; null: left out',
        }),
        new_field: Type.Boolean({ description: 'the target is a text field the import creates (create_fields)' }),
      }),
    ),
    rows: Type.Array(Type.Array(Type.String()), { description: `the first ${PREVIEW_ROWS} lines under the header` }),
    fields: Type.Array(Type.Object({ key: Type.String(), label: Type.String() }), {
      description: "the account's custom fields, the targets a column may take beside the contact's own",
    }),
    has_address: Type.Boolean({ description: 'whether some column fills email or phone (else the import is refused)' }),
    country: Type.Union([Type.String(), Type.Null()], {
      description: 'the country national phone numbers are read in (the query’s, else the account’s; null: none)',
    }),
    phones: Type.Array(Type.Union([Type.String(), Type.Null()]), {
      description:
        'per line of rows, the phone number as it will be stored (E.164; empty: no phone; null: refused, the line is rejected)',
    }),
  },
  { description: 'What an import of the file would do with its columns; nothing is written.' },
)

/** One line of the import's answer (newline-delimited JSON). */
export const ImportEvent = Type.Object(
  {
    type: Type.Union([Type.Literal('progress'), Type.Literal('done'), Type.Literal('error')], {
      description:
        'progress: bytes of total_bytes read and rows so far; done: the report; error: the import stopped (error as in the error envelope)',
    }),
    bytes: Type.Optional(Type.Integer()),
    total_bytes: Type.Optional(Type.Integer()),
    rows: Type.Optional(Type.Integer()),
    report: Type.Optional(ImportReportSchema),
    error: Type.Optional(Type.Object({ code: Type.String(), key: Type.String(), message: Type.String() })),
  },
  { title: 'ImportEvent' },
)

/** One change of a contact's opt-in state, as the contact page shows it. */
export const ConsentChange = Type.Object(
  {
    channel: Type.Union([Type.Literal('chat'), Type.Literal('email')]),
    from: Type.String({ description: 'the opt-in state before: none, pending, confirmed, opted_out' }),
    to: Type.String({ description: 'the opt-in state after' }),
    source: Type.String({ description: 'who or what changed it: api, import, double_opt_in, inbound_message, …' }),
    address: Type.Union([Type.String(), Type.Null()], {
      description: 'the phone number or e-mail address the consent was about',
    }),
    evidence: Type.Record(Type.String(), Type.Unknown(), {
      description: 'what proves it (the keyword, the confirmation link, the request)',
    }),
    recorded_at: Type.String({ format: 'date-time' }),
  },
  { title: 'ConsentChange' },
)

const Optin = Type.Union(
  OPTIN_STATES.map((s) => Type.Literal(s)),
  { description: 'none, pending, confirmed or opted_out' },
)

const filterCriteria = {
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'contacts carrying this tag' })),
  optin_chat: Type.Optional(Optin),
  optin_email: Type.Optional(Optin),
  source: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 40,
      description: 'where they came from: api, import, landing, inbound …',
    }),
  ),
}

/** Which contacts an account-wide operation is about; every criterion given must hold; none: every contact. */
export const ContactFilterSchema = Type.Object(
  { ...filterCriteria, fields: Type.Optional(FieldConditions) },
  { additionalProperties: false },
)

/** The filter as a query string: the field conditions as a JSON array (GET /v1/contacts?fields= takes the same). */
export const ContactFilterQuery = Type.Object(
  {
    ...filterCriteria,
    fields: Type.Optional(
      Type.String({
        maxLength: 4000,
        description:
          'conditions on custom fields as a JSON array of {field, op, value?, days?, ignore_year?}, all of which must hold (as GET /v1/contacts?fields=)',
      }),
    ),
  },
  { additionalProperties: false },
)

/** The Contact inline: the app document does not resolve the /v1 document's named schemas. */
export const LookupResponse = Type.Object({ contact: Type.Object(Contact.properties, { title: 'Contact' }) })
export const LookupQuery = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 254 })),
  phone: Type.Optional(Type.String({ maxLength: 40 })),
})
export const ExportQuery = Type.Object({
  ...ContactFilterQuery.properties,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: EXPORT_MAX, default: EXPORT_MAX })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 })),
})
export const TagParams = Type.Object({ tag: Type.String({ minLength: 1, maxLength: 60 }) })
export const TagInfo = Type.Object(
  {
    name: Type.String(),
    origin: Type.String({ description: 'the strongest origin it has: system, ki or manuell' }),
    system: Type.Boolean({ description: 'a system tag: it cannot be renamed, removed or deleted through the API' }),
    contacts: Type.Integer({ description: 'contacts carrying it (every contact counted)' }),
    by_origin: Type.Record(Type.String(), Type.Integer(), { description: 'contacts per origin' }),
  },
  { title: 'TagInfo' },
)
export const RenameTagBody = Type.Object(
  { new_name: Type.String({ minLength: 1, maxLength: 40 }) },
  { additionalProperties: false },
)
export const RenameTagResponse = Type.Object({
  from: Type.String(),
  to: Type.String(),
  contacts: Type.Integer({ description: 'contacts whose tag was renamed' }),
})
export const DeleteTagResponse = Type.Object({
  tag: Type.String(),
  contacts: Type.Integer({ description: 'contacts that lost the tag' }),
})
export const BulkTagBody = Type.Object(
  { filter: ContactFilterSchema, tag: Type.String({ minLength: 1, maxLength: 40 }) },
  { additionalProperties: false },
)
export const BulkTagResponse = Type.Object({
  tag: Type.String(),
  matched: Type.Integer({ description: `matching contacts handled (at most ${BULK_MAX} a call)` }),
  tagged: Type.Integer({ description: 'contacts that got the tag' }),
  skipped_full: Type.Integer({ description: 'contacts skipped: they carry 30 tags already' }),
  has_more: Type.Boolean({ description: 'more contacts match: call again' }),
})
export const BulkUntagResponse = Type.Object({
  tag: Type.String(),
  untagged: Type.Integer({ description: 'contacts that lost the tag' }),
})
export const BulkDeleteBody = Type.Object({ filter: ContactFilterSchema }, { additionalProperties: false })
export const BulkDeleteResponse = Type.Object({
  deleted: Type.Integer(),
  has_more: Type.Boolean({ description: `more contacts match (at most ${BULK_DELETE_MAX} are deleted a call)` }),
})
export const MatchingResponse = Type.Object({ matching: Type.Integer() })
export const ConditionFieldsResponse = Type.Object({
  fields: Type.Array(
    Type.Object({
      key: Type.String(),
      label: Type.String(),
      type: Type.Union([
        Type.Literal('text'),
        Type.Literal('number'),
        Type.Literal('date'),
        Type.Literal('boolean'),
        Type.Literal('choice'),
      ]),
      options: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'choice: the allowed values' }),
      ops: Type.Array(Type.String(), { description: 'the condition ops this field takes' }),
    }),
    { description: 'the account’s custom fields in their order' },
  ),
})

export const LabelsQuery = Type.Object(
  { ids: Type.String({ maxLength: 3700, description: 'contact ids separated by commas, at most 100' }) },
  { additionalProperties: false },
)
export const LabelsResponse = Type.Object(
  {
    contacts: Type.Array(
      Type.Object(
        {
          id: Type.String({ format: 'uuid' }),
          name: Type.String(),
          phone: Type.String({ description: 'E.164; empty string when none' }),
          email: Type.String({ description: 'empty string when none' }),
        },
        { title: 'ContactLabel' },
      ),
    ),
  },
  { title: 'ContactLabels' },
)
