import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { PassThrough, type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { AppError, badRequest } from '../../platform/http/errors.ts'
import { mountOperations } from '../../platform/http/operation.ts'
import {
  CSV,
  IMPORT_MAX_BYTES,
  ImportEvent,
  ImportPreview,
  ImportQuery,
  PREVIEW_MAX_BYTES,
  PREVIEW_ROWS,
} from './contacts.app.schemas.ts'
import { contactBulkRoutes, listContactConsentHistory } from './contacts.bulk.app.ts'
import { CsvError, openCsv } from './contacts.csv.ts'
import {
  ImportError,
  type ImportProgress,
  type ImportReport,
  planColumns,
  readImportFormat,
} from './contacts.import.ts'
import { normalizePhone } from './contacts.rules.ts'
import type { ContactsService } from './contacts.service.ts'

const ContactFormBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 120 })),
    email: Type.Optional(Type.String({ maxLength: 254 })),
    phone: Type.Optional(
      Type.String({ maxLength: 40, description: 'national (in the account’s country) or international format' }),
    ),
  },
  { additionalProperties: false },
)
const ContactFormResult = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()], { description: 'as stored (E.164)' }),
})

/**
 * The web app's contact import (under /app, with the session): the CSV as the request body, the answer a stream of
 * progress lines and the report. The rules are those of `herold import contacts` (contacts.import.ts).
 */
export function contactsAppRoutes(service: ContactsService) {
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(contactBulkRoutes(service))
    // the body stays a stream: it goes to a temporary file, not into memory
    app.addContentTypeParser(CSV, (_request, payload, done) => done(null, payload))

    app.post(
      '/contacts',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'createContactFromForm',
          summary: 'The web app’s contact form: a new contact, its phone number national or international',
          description:
            'Needs contacts:write. As POST /v1/contacts (without upsert), but a phone number without +/00 is read as a ' +
            'national one of the account’s country (Europe/Berlin: DE, 0151 12345678 is stored as +4915112345678). ' +
            '400 (field phone) for a number that cannot be valid there; 409 contact_exists for a known address.',
          body: ContactFormBody,
          tags: ['app'],
          response: { 201: Type.Object({ contact: ContactFormResult }) },
        },
      },
      async (request, reply) => {
        const body = request.body as Static<typeof ContactFormBody>
        let phone = body.phone
        if (phone !== undefined && phone.trim() !== '') {
          const country = await service.bulk.accountCountry(request.tenant)
          const stored = normalizePhone(phone, country)
          if (stored === null) {
            throw badRequest(
              country
                ? `phone must be a valid number of ${country} or in international format, such as +49 151 23456789`
                : 'phone must be a valid phone number in international format, such as +49 151 23456789',
              'bad_request',
              { field: 'phone' },
            )
          }
          phone = stored
        }
        const result = await service.create(request.tenant, { ...body, phone }, { upsert: false })
        const { id, name, email, phone: saved } = result.contact
        return reply.code(201).send({ contact: { id, name, email, phone: saved } })
      },
    )

    mountOperations(app, { contacts: service }, [listContactConsentHistory])

    app.post(
      '/contacts/import/preview',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'previewContactImport',
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
          const definitions = await service.bulk.fieldDefinitions(request.tenant)
          const { plan, toCreate } = planColumns(definitions, header, format)
          const created = new Set(toCreate.map((f) => f.key))
          const country = format.country ?? (await service.bulk.accountCountry(request.tenant))
          const phoneColumn = plan.columns.indexOf('phone')
          const shown = rest.slice(0, PREVIEW_ROWS)
          return {
            encoding: reader.encoding,
            delimiter: reader.delimiter,
            columns: header.map((name, i) => {
              const target = plan.columns[i] ?? plan.fields[i] ?? null
              return { header: name, target, new_field: target !== null && created.has(target) }
            }),
            rows: shown,
            fields: [...definitions.map((d) => ({ key: d.key, label: d.label })), ...toCreate],
            has_address: plan.columns.some((c) => c === 'email' || c === 'phone'),
            country,
            phones: shown.map((row) => {
              const cell = phoneColumn < 0 ? '' : (row[phoneColumn] ?? '').trim()
              return cell === '' ? '' : normalizePhone(cell, country)
            }),
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
          operationId: 'importContacts',
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
        const running = service.bulk.importFile(request.tenant, {
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
