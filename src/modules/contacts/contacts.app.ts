import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { PassThrough, type Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { AppError, notFound } from '../../platform/http/errors.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import { ImportError, type ImportProgress, type ImportReport, importContacts } from './contacts.import.ts'
import { findContact } from './contacts.repository.ts'
import { consentHistory } from './contacts.service.ts'

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
  seconds: Type.Number(),
  rows_per_second: Type.Number(),
})

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

/**
 * The web app's contact import (under /app, with the session): the CSV as the request body, the answer a stream of
 * progress lines and the report. The rules are those of `herold import contacts` (contacts.import.ts).
 */
export function contactsAppRoutes(deps: Pick<PlatformDeps, 'database' | 'clock'>) {
  return async (app: FastifyInstance): Promise<void> => {
    // the body stays a stream: it goes to a temporary file, not into memory
    app.addContentTypeParser(CSV, (_request, payload, done) => done(null, payload))

    app.get(
      '/contacts/:id/consent-history',
      {
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
        requireScope(request.tenant, 'contacts:read')
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
      '/contacts/import',
      {
        schema: {
          summary: 'Import contacts from a CSV file, answering with progress lines and the rejected lines',
          description:
            'Needs contacts:write (owner, admin, member). The body is the CSV file (Content-Type text/csv, at most 200 MB; ' +
            'header required, columns name, email, phone, tags as in `herold import contacts`). Known e-mail addresses ' +
            'and phone numbers are updated, new ones created; opt-ins are never raised. A file whose header has neither ' +
            'an email nor a phone column gives 400 before anything is imported. Otherwise 200 with ' +
            'application/x-ndjson: one ImportEvent per line, `progress` after each batch, then `done` with the report ' +
            '(or `error` when the file turned out not to be CSV part way).',
          consumes: [CSV],
          produces: ['application/x-ndjson'],
          tags: ['app'],
          response: { 200: ImportEvent },
        },
      },
      async (request, reply) => {
        requireScope(request.tenant, 'contacts:write')
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
        const running = importContacts(deps.database.orm, deps.clock, {
          accountId: request.tenant.accountId,
          file,
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
