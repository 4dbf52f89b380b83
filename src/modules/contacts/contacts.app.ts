import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { PassThrough, type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import {
  BULK_DELETE_MAX,
  BULK_MAX,
  countMatching,
  deleteMatching,
  deleteTag,
  EXPORT_MAX,
  exportCsv,
  getTag,
  lookupContact,
  renameTag,
  tagMatching,
  untagMatching,
} from './contacts.bulk.ts'
import { consentHistory } from './contacts.consent.ts'
import { CsvError, openCsv } from './contacts.csv.ts'
import { FieldConditions, OPS_BY_TYPE, parseFieldConditionsParam } from './contacts.field-conditions.ts'
import { fieldDefinitionsOf } from './contacts.fields-read.ts'
import {
  ImportError,
  type ImportProgress,
  type ImportReport,
  importContacts,
  planColumns,
  readImportFormat,
} from './contacts.import.ts'
import { contactLabels, findContact } from './contacts.repository.ts'
import { Contact } from './contacts.schemas.ts'
import type { ContactsService } from './contacts.service.ts'
import { OPTIN_STATES } from './contacts.tables.ts'

/** The largest CSV the web app may upload (about two million lines of name, e-mail, phone and tags). */
export const IMPORT_MAX_BYTES = 200 * 1024 * 1024

const CSV = 'text/csv'

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
})

/** How many bytes of the file the preview reads (the web app sends the file's start). */
export const PREVIEW_MAX_BYTES = 256 * 1024
/** How many lines under the header the preview shows. */
const PREVIEW_ROWS = 5

const ImportPreview = Type.Object(
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

/** A filter from the query string: its field conditions parsed (400 naming what is wrong). */
function filterOfQuery(query: Static<typeof ContactFilterQuery>) {
  const { fields, ...criteria } = query
  return fields === undefined ? criteria : { ...criteria, fields: parseFieldConditionsParam(fields) }
}

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

/**
 * The web app's contact import (under /app, with the session): the CSV as the request body, the answer a stream of
 * progress lines and the report. The rules are those of `herold import contacts` (contacts.import.ts).
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
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

export function contactsAppRoutes(deps: Pick<PlatformDeps, 'database' | 'clock'>, service: ContactsService) {
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(contactBulkRoutes(deps, service))
    // the body stays a stream: it goes to a temporary file, not into memory
    app.addContentTypeParser(CSV, (_request, payload, done) => done(null, payload))

    app.get(
      '/contacts/:id/consent-history',
      {
        config: { scope: 'contacts:read' },
        schema: {
          summary: "A contact's consent history, oldest first",
          description:
            'Needs contacts:read. Every change of the chat and e-mail opt-in with its source, the address it was about ' +
            "and its evidence (the contact page's audit view). Another account's contact, or none, is a 404.",
          params: Type.Object({ id: Type.String() }),
          tags: ['app'],
          response: { 200: Type.Object({ history: Type.Array(ConsentChange) }) },
        },
      },
      async (request) => {
        const { id } = request.params as { id: string }
        const { accountId } = request.tenant
        const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
        if (!uuid.test(id) || !(await findContact(deps.database.orm, accountId, id))) throw notFound('contact')
        const records = await consentHistory(deps.database.orm, accountId, id)
        return {
          history: records.map((r) => ({
            channel: r.channel,
            from: r.fromState,
            to: r.toState,
            source: r.source,
            address: r.address,
            evidence: r.evidence,
            recorded_at: r.recordedAt.toISOString(),
          })),
        }
      },
    )

    app.post(
      '/contacts/import/preview',
      {
        config: { scope: 'contacts:write' },
        schema: {
          summary: 'Show how a CSV file would be imported, before anything is written',
          description:
            `Needs contacts:write. The body is the start of the CSV file (Content-Type text/csv; the first ${PREVIEW_MAX_BYTES / 1024} KB ` +
            'are read, a line cut off at the end is left out). The same query as the import: encoding, delimiter, map ' +
            'and create_fields change what is detected. Answers the encoding and delimiter, each column with what it ' +
            'fills, and the first lines; 400 csv_invalid when the file cannot be read or the map names an unknown column.',
          querystring: ImportQuery,
          consumes: [CSV],
          tags: ['app'],
          response: { 200: ImportPreview },
        },
      },
      async (request) => {
        if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith(CSV)) {
          throw new AppError(415, 'unsupported_media_type', 'Send the CSV file with Content-Type text/csv')
        }
        const { head, complete } = await readStart(request.body as Readable, PREVIEW_MAX_BYTES)
        const invalid = (message: string) => new AppError(400, 'bad_request', message, { key: 'csv_invalid' })
        try {
          const { create_fields, ...query } = request.query as Static<typeof ImportQuery>
          const format = readImportFormat({ ...query, createFields: create_fields })
          const reader = await openCsv(
            (async function* () {
              yield head
            })(),
            { encoding: format.encoding, delimiter: format.delimiter },
          )
          const records: string[][] = []
          for await (const record of reader.records) {
            records.push(record.fields)
            if (records.length > PREVIEW_ROWS + 1) break
          }
          // the last record of a cut file may be cut itself
          if (!complete && records.length <= PREVIEW_ROWS + 1) records.pop()
          const [header, ...rest] = records
          if (!header) throw invalid('The file has no header line')
          const definitions = await fieldDefinitionsOf(deps.database.orm, request.tenant.accountId)
          const { plan, toCreate } = planColumns(definitions, header, format)
          const created = new Set(toCreate.map((f) => f.key))
          return {
            encoding: reader.encoding,
            delimiter: reader.delimiter,
            columns: header.map((name, i) => {
              const target = plan.columns[i] ?? plan.fields[i] ?? null
              return { header: name, target, new_field: target !== null && created.has(target) }
            }),
            rows: rest.slice(0, PREVIEW_ROWS),
            fields: [...definitions.map((d) => ({ key: d.key, label: d.label })), ...toCreate],
            has_address: plan.columns.some((c) => c === 'email' || c === 'phone'),
          }
        } catch (error) {
          if (error instanceof ImportError || error instanceof CsvError) throw invalid(error.message)
          throw error
        }
      },
    )

    app.post(
      '/contacts/import',
      {
        config: { scope: 'contacts:write' },
        schema: {
          summary: 'Import contacts from a CSV file, answering with progress lines and the rejected lines',
          description:
            'Needs contacts:write (owner, admin, member). The body is the CSV file (Content-Type text/csv, at most 200 MB; ' +
            'header required; encoding, delimiter and header names detected as by `herold import contacts`, the columns ' +
            'that fill no field listed in the report as ignored_columns; encoding, delimiter and map override the ' +
            'detection, an unknown value is a 400 naming it). A column named as a custom field (key or label, case and ' +
            'accents ignored) fills it; with create_fields every other column becomes a text field first; a value ' +
            'that does not fit its field rejects the line. Known e-mail addresses ' +
            'and phone numbers are updated, new ones created; opt-ins are never raised. A file whose header has neither ' +
            'an email nor a phone column gives 400 before anything is imported. Otherwise 200 with ' +
            'application/x-ndjson: one ImportEvent per line, `progress` after each batch, then `done` with the report ' +
            '(or `error` when the file turned out not to be CSV part way).',
          querystring: ImportQuery,
          consumes: [CSV],
          produces: ['application/x-ndjson'],
          tags: ['app'],
          response: { 200: ImportEvent },
        },
      },
      async (request, reply) => {
        if (!(request.headers['content-type'] ?? '').toLowerCase().startsWith(CSV)) {
          throw new AppError(415, 'unsupported_media_type', 'Send the CSV file with Content-Type text/csv')
        }
        const body = request.body as Readable
        const dir = await mkdtemp(path.join(tmpdir(), 'herold-import-'))
        const file = path.join(dir, 'contacts.csv')
        const cleanup = () => rm(dir, { recursive: true, force: true })
        try {
          await saveCapped(body, file)
        } catch (error) {
          await cleanup()
          throw error
        }

        const out = new PassThrough()
        const write = (event: Record<string, unknown>) => out.write(`${JSON.stringify(event)}\n`)
        let firstProgress: (() => void) | undefined
        const progressed = new Promise<void>((resolve) => {
          firstProgress = resolve
        })
        const onProgress = (p: ImportProgress) => {
          write({ type: 'progress', bytes: p.bytes, total_bytes: p.totalBytes, rows: p.rows })
          firstProgress?.()
        }
        const { create_fields, ...format } = request.query as Static<typeof ImportQuery>
        const running = importContacts(deps.database.orm, deps.clock, {
          accountId: request.tenant.accountId,
          file,
          format: { ...format, createFields: create_fields },
          onProgress,
        })
        const finished = running.then(
          (report: ImportReport) => ({ report }),
          (error: unknown) => ({ error }),
        )
        const first = await Promise.race([progressed.then(() => null), finished])
        if (first && 'error' in first) {
          await cleanup()
          out.destroy()
          if (first.error instanceof ImportError) {
            throw new AppError(400, 'bad_request', first.error.message, { key: 'csv_invalid' })
          }
          throw first.error
        }
        void finished.then(async (result) => {
          if ('report' in result) write({ type: 'done', report: result.report })
          else {
            const known = result.error instanceof ImportError
            if (!known) request.log.error({ err: result.error }, 'contact import failed')
            write({
              type: 'error',
              error: {
                code: known ? 'bad_request' : 'internal_error',
                key: known ? 'csv_invalid' : 'internal_error',
                message: known ? (result.error as Error).message : 'The import stopped; lines before it are imported',
              },
            })
          }
          out.end()
          await cleanup()
        })
        return reply
          .header('content-type', 'application/x-ndjson; charset=utf-8')
          .header('cache-control', 'no-store')
          .send(out)
      },
    )
  }
}

/** The first bytes of an upload (at most `max`), and whether that was the whole of it. */
async function readStart(body: Readable, max: number): Promise<{ head: Buffer; complete: boolean }> {
  const chunks: Buffer[] = []
  let length = 0
  // the rest is read and dropped (the answer goes out on an intact connection); the web app sends only the start
  for await (const chunk of body) {
    if (length <= max) chunks.push(chunk as Buffer)
    length += (chunk as Buffer).length
    if (length > IMPORT_MAX_BYTES) break
  }
  return { head: Buffer.concat(chunks).subarray(0, max), complete: length <= max }
}

/** Writes the upload to a file, refusing more than IMPORT_MAX_BYTES with 413. */
async function saveCapped(body: Readable, file: string): Promise<void> {
  let bytes = 0
  let tooLarge = false
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length
      if (bytes > IMPORT_MAX_BYTES) {
        tooLarge = true
        callback(new Error('too large'))
      } else callback(null, chunk)
    },
  })
  try {
    await pipeline(body, counter, createWriteStream(file))
  } catch (error) {
    if (tooLarge) {
      throw new AppError(413, 'payload_too_large', `The file is larger than ${IMPORT_MAX_BYTES / 1024 / 1024} MB`)
    }
    throw new AppError(400, 'bad_request', `The upload broke off: ${(error as Error).message}`)
  }
}

/** Looking contacts up, exporting them, tags account-wide, and bulk changes by filter (contacts.bulk.ts). */
function contactBulkRoutes(deps: Pick<PlatformDeps, 'database' | 'clock'>, service: ContactsService) {
  const db = deps.database.orm
  const tags = ['app']
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Static<typeof LabelsQuery> }>(
      '/contacts/labels',
      {
        config: { scope: 'contacts:read' },
        schema: {
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
        return { contacts: await contactLabels(db, request.tenant.accountId, ids) }
      },
    )

    app.get<{ Querystring: Static<typeof LookupQuery> }>(
      '/contacts/lookup',
      {
        config: { scope: 'contacts:read' },
        schema: {
          summary: 'The contact with exactly this e-mail address or phone number',
          description:
            'Needs contacts:read. Normalized as on create (any phone format in international form); 404 when none.',
          tags,
          querystring: LookupQuery,
          response: { 200: LookupResponse },
        },
      },
      async (request) => {
        return { contact: await lookupContact(db, request.tenant.accountId, request.query) }
      },
    )

    app.get<{ Querystring: Static<typeof ExportQuery> }>(
      '/contacts/export',
      {
        config: { scope: 'contacts:read' },
        schema: {
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
        const result = await exportCsv(
          db,
          request.tenant.accountId,
          filterOfQuery(filter),
          { limit: limit ?? EXPORT_MAX, offset: offset ?? 0 },
          deps.clock.now(),
        )
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
          summary: 'The custom fields a filter or segment can name, with the condition ops each takes',
          description:
            'Needs contacts:read. For the condition builders of the contact list and the newsletter segment: each field’s key, label, type, options (choice) and ops (every type: equals, not_equals, is_set, is_empty; date also before, after, within_next_days; number also greater_than, less_than).',
          tags,
          response: { 200: ConditionFieldsResponse },
        },
      },
      async (request) => {
        const definitions = await fieldDefinitionsOf(db, request.tenant.accountId)
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
        return { matching: await countMatching(db, request.tenant.accountId, filter, deps.clock.now()) }
      },
    )

    app.post<{ Body: Static<typeof BulkTagBody> }>(
      '/contacts/bulk/tag',
      {
        config: { scope: 'contacts:write' },
        schema: {
          summary: 'Tag every matching contact',
          description: `Needs contacts:write. Origin manuell; at most ${BULK_MAX} contacts a call (has_more: call again); contacts with 30 tags are skipped; system tags 400.`,
          tags,
          body: BulkTagBody,
          response: { 200: BulkTagResponse },
        },
      },
      async (request) => {
        return tagMatching(db, deps.clock, request.tenant.accountId, request.body.filter, request.body.tag)
      },
    )

    app.post<{ Body: Static<typeof BulkTagBody> }>(
      '/contacts/bulk/untag',
      {
        config: { scope: 'contacts:write' },
        schema: {
          summary: 'Remove a tag from every matching contact',
          description: 'Needs contacts:write. System tags 400.',
          tags,
          body: BulkTagBody,
          response: { 200: BulkUntagResponse },
        },
      },
      async (request) => {
        return untagMatching(db, request.tenant.accountId, request.body.filter, request.body.tag, deps.clock.now())
      },
    )

    app.post<{ Body: Static<typeof BulkDeleteBody> }>(
      '/contacts/bulk/delete',
      {
        config: { scope: 'contacts:delete' },
        schema: {
          summary: 'Delete every matching contact',
          description: `Needs contacts:delete. Each as DELETE /v1/contacts/{id} deletes one; at most ${BULK_DELETE_MAX} a call; a filter without criterion is 400 filter_required.`,
          tags,
          body: BulkDeleteBody,
          response: { 200: BulkDeleteResponse },
        },
      },
      async (request) => {
        return deleteMatching(db, service, request.tenant, request.body.filter, deps.clock.now())
      },
    )

    app.get<{ Params: Static<typeof TagParams> }>(
      '/tags/:tag',
      {
        config: { scope: 'contacts:read' },
        schema: {
          summary: 'One tag: how many contacts carry it',
          description:
            'Needs contacts:read. Every contact counted (not the sample of GET /v1/contacts/tags); 404 when no contact has it.',
          tags,
          params: TagParams,
          response: { 200: Type.Object({ tag: TagInfo }) },
        },
      },
      async (request) => {
        return { tag: await getTag(db, request.tenant.accountId, request.params.tag) }
      },
    )

    app.post<{ Params: Static<typeof TagParams>; Body: Static<typeof RenameTagBody> }>(
      '/tags/:tag/rename',
      {
        config: { scope: 'contacts:write' },
        schema: {
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
        return renameTag(db, request.tenant.accountId, request.params.tag, request.body.new_name)
      },
    )

    app.delete<{ Params: Static<typeof TagParams> }>(
      '/tags/:tag',
      {
        config: { scope: 'contacts:write' },
        schema: {
          summary: 'Remove a tag from every contact',
          description: 'Needs contacts:write. System tags 400; 404 when no contact has it.',
          tags,
          params: TagParams,
          response: { 200: DeleteTagResponse },
        },
      },
      async (request) => {
        return deleteTag(db, request.tenant.accountId, request.params.tag)
      },
    )
  }
}
