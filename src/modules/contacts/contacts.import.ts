import { statSync } from 'node:fs'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import { accountCountry, isCountry } from '../../platform/auth/countries.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { analyzeTables } from '../../platform/db/maintenance.ts'
import { asBulkWork } from '../../platform/db/work-priority.ts'
import { dispatchEvents } from '../../platform/events/events.ts'
import { AppError } from '../../platform/http/errors.ts'
import { timeOrderedId } from '../../platform/ids.ts'
import {
  CONTACT_COLUMNS,
  CsvError,
  type CsvOptions,
  foldFieldName,
  foldHeader,
  type HeaderFields,
  type HeaderPlan,
  IGNORE_COLUMN,
  parseColumnMap,
  parseDelimiter,
  parseEncoding,
  recogniseHeader,
} from './contacts.csv.ts'
import { CONTACT_ATTRIBUTES, keyFromHeader, keyProblem, sameFieldValues } from './contacts.fields.rules.ts'
import { createImportFields, definitionsForWrite } from './contacts.fields.service.ts'
import { type FieldDefinition, fieldDefinitionsOf } from './contacts.fields-read.ts'
import { type ColumnIndexes, type Line, type LineReader, openLineReader } from './contacts.import-lines.ts'
import { openLineReaderOnThread } from './contacts.import-thread.ts'
import { BatchWriters, splitByAddress, type WriteResult } from './contacts.import-writers.ts'
import * as repo from './contacts.repository.ts'
import { displayTags, optinResets, planTagAddition } from './contacts.rules.ts'

// herold import contacts: a CSV file upserted in batches of multi-row statements, never raising an opt-in.

const BATCH_SIZE = 2000
/**
 * Lines a batch (one transaction) when the import runs beside requests on the embedded database: its one connection
 * runs one transaction at a time, so every request waits for the batch that holds it (PriorityGate orders only what
 * waits); a batch of 2,000 held it for 0.3-1 s, one of 250 for a few tens of milliseconds.
 */
const EMBEDDED_BATCH_SIZE = 250

/** The batch size for an import inside the server (the web app, the tool server) on this kind of database. */
export function importBatchSize(kind: 'pglite' | 'postgres'): number {
  return kind === 'pglite' ? EMBEDDED_BATCH_SIZE : BATCH_SIZE
}
/**
 * How `herold import contacts` uses the cores on this kind of database. PostgreSQL: two batches written at once (the
 * second connection's backend writes on the second core; a third of an import's time, see docs/performance.md), the
 * file read on this thread. The embedded database runs one statement at a time on this thread: one writer, and a large
 * file read on a thread of its own (THREAD_MIN_BYTES). Inside the server (the web app, the tool server) an import
 * keeps to one writer: with two, other accounts' sends beside it waited twice as long (docs/performance.md).
 */
export function importConcurrency(kind: 'pglite' | 'postgres'): { writers: number; readOnThread?: boolean } {
  return kind === 'pglite' ? { writers: 1 } : { writers: 2, readOnThread: false }
}
/**
 * From this size on a file is read on a thread of its own (contacts.import-thread.ts): starting it costs about 0.1 s,
 * which a smaller file's reading does not pay back.
 */
export const THREAD_MIN_BYTES = 1024 * 1024
/** Rejected lines and notes kept in the report; beyond this only the counts grow. */
const MAX_LISTED = 10_000
const SOURCE = 'import'

export class ImportError extends Error {}

export interface ImportProgress {
  bytes: number
  totalBytes: number
  rows: number
}

export interface ImportReport {
  rows: number
  created: number
  updated: number
  unchanged: number
  rejected: number
  /** each rejected line with its reason (the first 10,000) */
  rejected_lines: Array<{ line: number; reason: string }>
  /** tags left out of otherwise imported lines, with the reason (the first 10,000) */
  notes: Array<{ line: number; note: string }>
  /** the header's columns that fill no contact field, in file order */
  ignored_columns: string[]
  /** the custom fields each column fills: header name and key, in file order */
  field_columns: Array<{ column: string; field: string }>
  /** the text fields --create-fields made before the import (their keys) */
  created_fields: string[]
  /** the country national phone numbers were read in (the file's --country, else the account's); null: none */
  country: string | null
  seconds: number
  rows_per_second: number
}

function columnIndexes(plan: HeaderPlan, header: string[]): ColumnIndexes {
  const indexes: ColumnIndexes = { name: [], first_name: [], last_name: [], email: [], phone: [], tags: [] }
  plan.columns.forEach((column, i) => {
    if (column) indexes[column].push(i)
  })
  if (indexes.email.length === 0 && indexes.phone.length === 0) {
    throw new ImportError(
      `the CSV header needs an email or a phone column; found: ${header.join(', ')} ` +
        '(name the columns with --map, such as --map "Mail=email")',
    )
  }
  return indexes
}

/**
 * How to read the file, as `herold import contacts` takes it: `encoding` (utf-8, utf-16le, utf-16be, cp1252) and
 * `delimiter` (, ; | tab) instead of detecting them, `map` header names to fields or custom field keys
 * ("Mobil=phone,Kundennummer=customer_no"), `createFields`: every otherwise ignored column becomes a text field.
 */
export interface ImportFormat {
  encoding?: string
  delimiter?: string
  map?: string
  createFields?: boolean
  /** the country national phone numbers are read in (ISO 3166-1 alpha-2); default: the account's */
  country?: string
}

/** The reader's options from the import's; an unknown value is an ImportError naming it. */
export function readImportFormat(
  format: ImportFormat,
): CsvOptions & { map?: Map<string, string>; createFields: boolean; country?: string } {
  const country = format.country?.trim().toUpperCase()
  if (country !== undefined && !isCountry(country)) {
    throw new ImportError(`country must be an ISO 3166-1 alpha-2 code such as DE, got "${format.country}"`)
  }
  try {
    return {
      country,
      encoding: format.encoding === undefined ? undefined : parseEncoding(format.encoding),
      delimiter: format.delimiter === undefined ? undefined : parseDelimiter(format.delimiter),
      map: format.map === undefined ? undefined : parseColumnMap(format.map),
      createFields: format.createFields === true,
    }
  } catch (error) {
    if (error instanceof CsvError) throw new ImportError(error.message)
    throw error
  }
}

/**
 * Imports a CSV file (a header naming email or phone and maybe name, first and last name, tags, recognised in
 * German and English and as Mailchimp, Brevo, HubSpot, Shopify and Excel write them) into an account: new
 * addresses are created, known ones updated (given fields only), opt-ins only ever reset by a changed address.
 */
export function importContacts(
  db: Db,
  clock: Clock,
  input: {
    accountId: string
    file: string
    format?: ImportFormat
    onProgress?: (progress: ImportProgress) => void
    /** lines a transaction (default 2,000; importBatchSize inside the server) */
    batchSize?: number
    /** transactions written at once (default 1; importConcurrency gives the database's) */
    writers?: number
    /** whether the file is read on a thread of its own (default: from THREAD_MIN_BYTES on; tests choose) */
    readOnThread?: boolean
  },
): Promise<ImportReport> {
  // bulk work: on the embedded database the requests' statements go before its waiting ones
  return asBulkWork(() => importFile(db, clock, input))
}

async function importFile(db: Db, clock: Clock, input: Parameters<typeof importContacts>[2]): Promise<ImportReport> {
  const batchSize = input.batchSize ?? BATCH_SIZE
  const format = readImportFormat(input.format ?? {})
  const account = await getAccount(db, input.accountId)
  const limit = await repo.contactsLimitOf(db, account.plan)
  const started = performance.now()
  const report: ImportReport = {
    rows: 0,
    created: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
    rejected_lines: [],
    notes: [],
    ignored_columns: [],
    field_columns: [],
    created_fields: [],
    country: format.country ?? accountCountry(account),
    seconds: 0,
    rows_per_second: 0,
  }
  const reject = (line: number, reason: string) => {
    report.rejected++
    if (report.rejected_lines.length < MAX_LISTED) report.rejected_lines.push({ line, reason })
  }
  const note = (line: number, text: string) => {
    if (report.notes.length < MAX_LISTED) report.notes.push({ line, note: text })
  }
  let totalBytes: number
  try {
    totalBytes = statSync(input.file).size
  } catch {
    throw new ImportError(`cannot read ${input.file}`)
  }
  // a UTF-8 file with a byte that is not UTF-8 past the sample is refused before anything is imported
  let reader: LineReader
  try {
    reader =
      (input.readOnThread ?? totalBytes >= THREAD_MIN_BYTES)
        ? await openLineReaderOnThread(input.file, format, batchSize)
        : await openLineReader(input.file, format, batchSize)
  } catch (error) {
    if (error instanceof CsvError) throw new ImportError(error.message)
    throw error
  }
  let bytes = 0
  const context = {
    db,
    clock,
    accountId: account.id,
    language: account.language,
    limit,
    reject,
    note,
    mostlyNew: true,
    nearLimit: false,
    unchecked: false,
    fieldDefinitions: [] as FieldDefinition[],
  }
  // The batches being written while the reader reads and checks the next lines (Node parses while the database
  // writes, or on a thread of its own); on PostgreSQL two at once (importConcurrency), each in its transaction.
  const writers = new BatchWriters(input.writers ?? 1, {
    writeAlone: (lines) => importBatch(context, lines, report).finally(progress),
    writeBeside: (lines) => writeBeside(context, lines, report).finally(progress),
    mayWriteBeside: async (lines) =>
      context.mostlyNew && !context.nearLimit && (await repo.contactsRoom(db, account.id, limit)) >= lines,
  })
  const progress = () => input.onProgress?.({ bytes, totalBytes, rows: report.rows })
  try {
    context.unchecked = await repo.importMayLoadUnchecked(db)
    const header = reader.header
    if (header) {
      const plan = await planHeader(context, header, format, report)
      const columns = columnIndexes(plan, header)
      const byKey = new Map(context.fieldDefinitions.map((d) => [d.key, d]))
      const fieldColumns = plan.fields.flatMap((key, index) => {
        const definition = key === undefined ? undefined : byKey.get(key)
        return definition ? [{ index, definition }] : []
      })
      report.field_columns = fieldColumns.map((c) => ({ column: header[c.index], field: c.definition.key }))
      context.fieldDefinitions = fieldColumns.map((c) => c.definition)
      report.ignored_columns = plan.ignored
      for await (const read of reader.batches({ columns, fieldColumns, country: report.country })) {
        report.rows += read.rows
        bytes = read.bytes
        for (const { line, reason } of read.rejected) reject(line, reason)
        for (const { line, note: text } of read.notes) note(line, text)
        await writers.add(read.lines)
      }
    }
    await writers.finish()
  } catch (error) {
    // the batches being written end (committed or rolled back) before the import reports what stopped it
    await writers.settle()
    if (error instanceof CsvError) throw new ImportError(error.message)
    throw error
  } finally {
    reader.close()
  }
  input.onProgress?.({ bytes: totalBytes, totalBytes, rows: report.rows })
  // fresh statistics for what was loaded: the search plan uses its trigram index from the first query after an
  // import of any size (neither PGlite nor a server without autovacuum would analyze by itself)
  if (report.created + report.updated > 0) await analyzeTables(db, ['contacts', 'contact_tags', 'events'])
  // in line order: a line the reader rejects may be reported while an earlier batch is still being written
  report.rejected_lines.sort((a, b) => a.line - b.line)
  report.notes.sort((a, b) => a.line - b.line)
  report.seconds = Math.round(performance.now() - started) / 1000
  report.rows_per_second = report.seconds > 0 ? Math.round(report.rows / report.seconds) : report.rows
  return report
}

interface BatchContext {
  db: Db
  clock: Clock
  accountId: string
  language: string
  limit: number
  reject: (line: number, reason: string) => void
  note: (line: number, text: string) => void
  /** whether most lines of the last batch were new (a re-import is mostly matches: look up first then) */
  mostlyNew: boolean
  /** whether a batch written beside another found the plan's limit near: every batch is written alone from then on */
  nearLimit: boolean
  /** whether new contacts may be inserted without per-row foreign key triggers (repo.importMayLoadUnchecked) */
  unchecked: boolean
  /** the custom fields the file's columns fill, as their values were checked */
  fieldDefinitions: FieldDefinition[]
}

/** The account's custom fields as a header can name them: by key, and by key and label folded. */
function headerFields(definitions: readonly FieldDefinition[], extraKeys: readonly string[] = []): HeaderFields {
  const byName = new Map<string, string>()
  for (const d of definitions) byName.set(foldFieldName(d.label), d.key)
  // a key goes before a label that folds alike
  for (const d of definitions) byName.set(foldFieldName(d.key), d.key)
  return { keys: new Set([...definitions.map((d) => d.key), ...extraKeys]), byName }
}

/** Herold's own export columns (id, optin_chat, created_at, …): never made a custom field. */
const CONTACT_ATTRIBUTE_NAMES = new Set(CONTACT_ATTRIBUTES.map(foldHeader))

/**
 * Which field each column fills (contacts.csv.ts recogniseHeader with the account's custom fields). With
 * createFields, the --map targets that name no field yet and every otherwise ignored column (but Herold's own export
 * columns) become text fields, keyed after the header (keyFromHeader), labelled with it: `toCreate` lists them, and
 * nothing is written here (the import creates them, the web app's preview shows them).
 */
export function planColumns(
  definitions: readonly FieldDefinition[],
  header: string[],
  format: ReturnType<typeof readImportFormat>,
): { plan: HeaderPlan; toCreate: Array<{ key: string; label: string }> } {
  const taken = new Set(definitions.map((d) => d.key))
  const toCreate: Array<{ key: string; label: string }> = []
  if (format.createFields) {
    for (const [name, target] of format.map ?? []) {
      if ((CONTACT_COLUMNS as readonly string[]).includes(target) || target === IGNORE_COLUMN || taken.has(target))
        continue
      const problem = keyProblem(target)
      if (problem) throw new ImportError(`--map ${name}: ${problem}`)
      taken.add(target)
      toCreate.push({ key: target, label: header.find((h) => foldHeader(h) === foldHeader(name)) ?? name })
    }
  }
  let plan: HeaderPlan
  try {
    plan = recogniseHeader(
      header,
      format.map,
      headerFields(
        definitions,
        toCreate.map((f) => f.key),
      ),
    )
  } catch (error) {
    if (error instanceof CsvError) throw new ImportError(error.message)
    throw error
  }
  if (format.createFields) {
    const skipped = new Set([...(format.map ?? [])].filter(([, t]) => t === IGNORE_COLUMN).map(([n]) => foldHeader(n)))
    header.forEach((name, i) => {
      if (plan.columns[i] || plan.fields[i] || name.trim() === '') return
      if (CONTACT_ATTRIBUTE_NAMES.has(foldHeader(name)) || skipped.has(foldHeader(name))) return
      const key = keyFromHeader(name, taken)
      taken.add(key)
      toCreate.push({ key, label: name.trim() })
      plan.fields[i] = key
    })
    plan.ignored = header.filter((name, i) => !plan.columns[i] && !plan.fields[i] && name.trim() !== '')
  }
  return { plan, toCreate }
}

async function planHeader(
  context: BatchContext,
  header: string[],
  format: ReturnType<typeof readImportFormat>,
  report: ImportReport,
): Promise<HeaderPlan> {
  const definitions = await fieldDefinitionsOf(context.db, context.accountId)
  const { plan, toCreate } = planColumns(definitions, header, format)
  if (toCreate.length > 0) {
    try {
      const created = await createImportFields(context.db, context.clock, context.accountId, toCreate)
      definitions.push(...created)
      report.created_fields = created.map((d) => d.key)
    } catch (error) {
      if (error instanceof AppError) throw new ImportError(error.message)
      throw error
    }
  }
  context.fieldDefinitions = definitions
  return plan
}

/** The fields the batch writes are still as their values were checked (share-locked until the batch commits). */
async function checkFieldsUnchanged(context: BatchContext): Promise<void> {
  if (context.fieldDefinitions.length === 0) return
  const now = await definitionsForWrite(
    context.db,
    context.accountId,
    context.fieldDefinitions.map((d) => d.key),
  )
  const shape = (d: FieldDefinition) => JSON.stringify([d.key, d.type, d.options, d.maxLength])
  const current = new Set(now.map(shape))
  if (!context.fieldDefinitions.every((d) => current.has(shape(d)))) {
    throw new ImportError('the custom fields changed during the import; the lines before this batch are imported')
  }
}

/**
 * Imports one batch in one transaction. Lines repeating an address of an earlier line in the batch (or of a line
 * held back for that reason: a phone shared with it) are returned, to be imported after it (in the next batch), so
 * that every line sees the effect of the ones before it.
 */
async function importBatch(context: BatchContext, lines: Line[], report: ImportReport): Promise<Line[]> {
  // a line sharing an address with a line before it, written or held back, waits for that line
  const { now, later } = splitByAddress(lines)
  const written = await context.db.transaction((tx) => writeBatch({ ...context, db: tx }, now, later, report))
  context.mostlyNew = written.mostlyNew
  return written.later
}

/** A batch written beside another found no room under the plan's limit for its contacts (it is written alone again). */
class NoRoom extends Error {}

/**
 * Creates the contacts of lines no contact holds an address of, beside another batch (BatchWriters): lines whose
 * address is taken come back to be written alone; a batch the plan's limit has no room for comes back whole.
 */
async function writeBeside(context: BatchContext, lines: Line[], report: ImportReport): Promise<WriteResult> {
  try {
    const taken = await context.db.transaction(async (tx) => {
      const inside = { ...context, db: tx }
      await checkFieldsUnchanged(inside)
      return createContacts(inside, lines, report, { beside: true })
    })
    context.mostlyNew = taken.length * 2 < lines.length
    return { later: taken, alone: true }
  } catch (error) {
    if (!(error instanceof NoRoom)) throw error
    context.nearLimit = true
    return { later: lines, alone: true }
  }
}

type TagRow = { accountId: string; contactId: string; name: string; origin: 'manuell' }

/**
 * Writes the lines; `held` are lines of the batch that wait for the next one (an address of a line before them).
 * Returns whether most lines were new, and the lines to import after this batch, in line order (see classify).
 */
async function writeBatch(
  context: BatchContext,
  lines: Line[],
  held: Line[],
  report: ImportReport,
): Promise<{ mostlyNew: boolean; later: Line[] }> {
  const { db, accountId } = context
  await checkFieldsUnchanged(context)
  const room = await repo.remainingContacts(db, accountId, context.limit)
  // Insert first when the plan has room for every line and the previous batch was mostly new: a line whose addresses
  // no contact holds is created by the insert, and only the lines an existing address stopped need a lookup.
  const insertFirst = lines.length <= room && context.mostlyNew
  const toMatch = insertFirst ? await createContacts(context, lines, report) : lines
  const { creates, matched, later } = await classify(context, toMatch, held)
  if (insertFirst) {
    // the address that stopped the insert is gone again (deleted concurrently)
    for (const line of creates) context.reject(line.line, 'changed concurrently by another request; import again')
  } else {
    for (const line of creates.slice(room))
      context.reject(line.line, `the plan's limit of ${context.limit} contacts is reached`)
    for (const line of await createContacts(context, creates.slice(0, room), report))
      context.reject(line.line, 'created concurrently by another request; import again')
  }
  await updateMatched(context, matched, report)
  return { mostlyNew: matched.length * 2 < lines.length, later }
}

/**
 * Sorts lines into new ones and ones matching an existing contact (locked); rejects the ambiguous ones. A line whose
 * address belongs to a contact an earlier line of the batch matches, or one an earlier line waiting for the next
 * batch (`held`, and these) meets, waits for the next batch too (`later`): that earlier line may change the contact,
 * and every line sees the effect of the lines before it, whatever the batches.
 */
async function classify(
  context: BatchContext,
  lines: Line[],
  held: Line[],
): Promise<{ creates: Line[]; matched: Array<{ line: Line; contact: repo.ContactRow }>; later: Line[] }> {
  const creates: Line[] = []
  const matched: Array<{ line: Line; contact: repo.ContactRow }> = []
  const later: Line[] = []
  if (lines.length === 0) return { creates, matched, later: held }
  const waiting = new Set(held)
  const all = [...lines, ...held].sort((a, b) => a.line - b.line)
  const existing = await repo.findByAddresses(
    context.db,
    context.accountId,
    all.map((l) => l.email).filter((e) => e !== ''),
    all.map((l) => l.phone).filter((p) => p !== ''),
  )
  const byEmail = new Map(existing.filter((c) => c.email !== '').map((c) => [c.email, c]))
  const byPhone = new Map(existing.filter((c) => c.phone !== '').map((c) => [c.phone, c]))
  /** contacts an earlier line of the batch matches, or meets and waits for the next batch */
  const touched = new Set<string>()
  for (const line of all) {
    const emailOwner = line.email ? byEmail.get(line.email) : undefined
    const phoneOwner = line.phone ? byPhone.get(line.phone) : undefined
    if (waiting.has(line) || (emailOwner && touched.has(emailOwner.id)) || (phoneOwner && touched.has(phoneOwner.id))) {
      // and so does every later line meeting either of its contacts
      later.push(line)
      if (emailOwner) touched.add(emailOwner.id)
      if (phoneOwner) touched.add(phoneOwner.id)
      continue
    }
    if (emailOwner && phoneOwner && emailOwner.id !== phoneOwner.id) {
      context.reject(line.line, `email belongs to contact ${emailOwner.id} and phone to contact ${phoneOwner.id}`)
      continue
    }
    const contact = emailOwner ?? phoneOwner
    // A matched contact's new phone or email must not belong to a third contact either.
    const taken =
      contact &&
      ((line.email !== '' && line.email !== contact.email && byEmail.has(line.email)) ||
        (line.phone !== '' && line.phone !== contact.phone && byPhone.has(line.phone)))
    if (taken) {
      context.reject(line.line, 'the new email or phone belongs to another contact')
      continue
    }
    if (contact) {
      matched.push({ line, contact })
      touched.add(contact.id)
    } else creates.push(line)
  }
  return { creates, matched, later }
}

/**
 * Creates contacts for these lines (within the plan's room, which the caller checked) with their tags and
 * contact.created events; returns the lines not created because an address is already held.
 */
async function createContacts(
  context: BatchContext,
  lines: Line[],
  report: ImportReport,
  options: { beside?: boolean } = {},
): Promise<Line[]> {
  if (lines.length === 0) return []
  const { db, clock, accountId } = context
  const plans = lines.map((line) => planTagAddition([], line.tags))
  // time-ordered: the batch's contacts, their tags and events append to their indexes in line order
  const rows = lines.map((line, i) => ({
    id: timeOrderedId(),
    eventId: timeOrderedId(),
    name: line.name ?? '',
    email: line.email,
    phone: line.phone,
    tags: displayTags(plans[i].added.map((name) => ({ name, origin: 'manuell' as const }))).map((t) => t.name),
    fields: line.fields,
  }))
  const { contactIds, eventIds } = await repo.insertImportedContacts(
    db,
    accountId,
    { language: context.language, source: SOURCE, createdAt: clock.now() },
    rows,
    { unchecked: context.unchecked },
  )
  if (contactIds.size > 0 && !(await repo.reserveContacts(db, accountId, contactIds.size, context.limit))) {
    // beside another batch the room was read without a lock; alone it was locked, so this cannot happen
    if (options.beside) throw new NoRoom()
    throw new Error('contact counter out of step with the reservation')
  }
  await dispatchEvents(db, clock, accountId, eventIds, 'contact.created')
  report.created += contactIds.size
  const rest: Line[] = []
  rows.forEach((row, i) => {
    if (!contactIds.has(row.id)) rest.push(lines[i])
    else for (const name of plans[i].rejected) context.note(lines[i].line, `tag "${name}" left out: more than 30 tags`)
  })
  return rest
}

async function updateMatched(
  context: BatchContext,
  matched: Array<{ line: Line; contact: repo.ContactRow }>,
  report: ImportReport,
): Promise<void> {
  if (matched.length === 0) return
  const tagRows: TagRow[] = []
  const { db, clock, accountId } = context
  const withTags = matched.filter((m) => m.line.tags.length > 0).map((m) => m.contact.id)
  const existingTags = await repo.tagsOf(db, accountId, withTags)
  const changes: Parameters<typeof repo.updateContacts>[2] = []
  const consent: repo.ConsentRecordInput[] = []
  for (const { line, contact } of matched) {
    const next = {
      name: line.name ?? contact.name,
      email: line.email || contact.email,
      phone: line.phone || contact.phone,
    }
    const resets = optinResets(contact, next)
    const fieldsChanged = !sameFieldValues({ ...contact.fields, ...line.fields }, contact.fields)
    const changed =
      fieldsChanged || next.name !== contact.name || next.email !== contact.email || next.phone !== contact.phone
    let tagsAdded = 0
    if (line.tags.length > 0) {
      const shown = displayTags(existingTags.filter((t) => t.contactId === contact.id)).map((t) => t.name)
      const plan = planTagAddition(shown, line.tags)
      for (const name of plan.rejected) context.note(line.line, `tag "${name}" left out: more than 30 tags`)
      for (const name of plan.added) tagRows.push({ accountId, contactId: contact.id, name, origin: 'manuell' })
      tagsAdded = plan.added.length
    }
    if (changed) {
      changes.push({
        id: contact.id,
        ...next,
        fields: line.fields,
        optinChat: resets.some((r) => r.channel === 'chat') ? 'none' : contact.optinChat,
        optinEmail: resets.some((r) => r.channel === 'email') ? 'none' : contact.optinEmail,
      })
      for (const reset of resets) {
        consent.push({
          accountId,
          contactId: contact.id,
          channel: reset.channel,
          fromState: reset.from,
          toState: 'none',
          source: SOURCE,
          address: reset.address,
          evidence: { reason: reset.channel === 'chat' ? 'phone_changed' : 'email_changed', line: line.line },
          recordedAt: clock.now(),
        })
      }
    }
    if (changed || tagsAdded > 0) report.updated++
    else report.unchanged++
  }
  await repo.updateContacts(db, accountId, changes)
  await repo.insertConsentRecords(db, consent)
  await repo.insertTagRows(db, tagRows)
}
