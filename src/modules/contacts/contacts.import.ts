import { createReadStream, statSync } from 'node:fs'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { analyzeTables } from '../../platform/db/maintenance.ts'
import { asBulkWork } from '../../platform/db/work-priority.ts'
import { dispatchEvents } from '../../platform/events/events.ts'
import { AppError } from '../../platform/http/errors.ts'
import { timeOrderedId } from '../../platform/ids.ts'
import {
  CONTACT_COLUMNS,
  type ContactColumn,
  CsvError,
  type CsvOptions,
  type CsvRecord,
  checkCsvEncoding,
  foldFieldName,
  foldHeader,
  type HeaderFields,
  type HeaderPlan,
  IGNORE_COLUMN,
  openCsv,
  parseColumnMap,
  parseDelimiter,
  parseEncoding,
  recogniseHeader,
} from './contacts.csv.ts'
import { CONTACT_ATTRIBUTES, keyFromHeader, keyProblem, parseCell, sameFieldValues } from './contacts.fields.rules.ts'
import { createImportFields, definitionsForWrite } from './contacts.fields.service.ts'
import { type FieldDefinition, fieldDefinitionsOf } from './contacts.fields-read.ts'
import * as repo from './contacts.repository.ts'
import {
  displayTags,
  isSystemTagName,
  MAX_TAG_LENGTH,
  normalizeEmail,
  normalizePhone,
  optinResets,
  planTagAddition,
  splitTagCell,
} from './contacts.rules.ts'
import type { CustomFieldValue } from './contacts.tables.ts'

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
  seconds: number
  rows_per_second: number
}

interface Line {
  line: number
  name: string | undefined
  email: string
  phone: string
  tags: string[]
  /** custom field values of the line's non-empty cells */
  fields: Record<string, CustomFieldValue>
}

const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/** Where each contact field is read from: the indexes of its columns, in file order. */
type ColumnIndexes = Record<ContactColumn, number[]>

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

/** The first non-empty value of these columns (several columns may fill one field: Telefon, Mobil). */
function first(fields: string[], indexes: number[]): string {
  for (const i of indexes) {
    const value = fields[i]
    if (value) return value
  }
  return ''
}

/** The record's values by contact field; the name is Name, else first and last name joined. */
function valuesOf(fields: string[], columns: ColumnIndexes) {
  let name = first(fields, columns.name)
  if (name === '') {
    const given = first(fields, columns.first_name)
    const family = first(fields, columns.last_name)
    name = given && family ? `${given} ${family}` : given || family
  }
  let tags =
    columns.tags.length === 1 ? (fields[columns.tags[0]] ?? '') : columns.tags.map((i) => fields[i] ?? '').join(',')
  // Mailchimp quotes each tag: "Kunde","VIP"
  if (tags.startsWith('"')) tags = tags.replaceAll('"', '')
  return { name, email: first(fields, columns.email), phone: first(fields, columns.phone), tags }
}

/** A column that fills a custom field. */
interface FieldColumn {
  index: number
  definition: FieldDefinition
}

/** The line's custom field values (empty cells give none), or the first rule a cell breaks. */
function fieldValuesOf(fields: string[], columns: FieldColumn[]): Record<string, CustomFieldValue> | string {
  const values: Record<string, CustomFieldValue> = {}
  for (const { index, definition } of columns) {
    const cell = fields[index] ?? ''
    if (cell.trim() === '') continue
    const parsed = parseCell(definition, cell)
    if ('problem' in parsed) {
      const shown = cell.length > 60 ? `${cell.slice(0, 60)}…` : cell
      return `${parsed.problem} (the value is ${JSON.stringify(shown)})`
    }
    values[definition.key] = parsed.value
  }
  return values
}

/** Validates one CSV record; a string is the reason it is rejected. */
function readLine(
  record: CsvRecord,
  columns: ColumnIndexes,
  fieldColumns: FieldColumn[],
  note: (line: number, text: string) => void,
): Line | string {
  const line = record.line
  const values = valuesOf(record.fields, columns)
  const name = values.name
  const email = normalizeEmail(values.email)
  const rawPhone = values.phone
  if (name.length > 120) return 'name is longer than 120 characters'
  if (email !== '' && (email.length > 254 || !EMAIL_FORMAT.test(email))) return `invalid email "${email}"`
  const phone = rawPhone === '' ? '' : normalizePhone(rawPhone)
  if (phone === null) return `invalid phone "${rawPhone}" (international format needed, such as +49 151 23456789)`
  if (email === '' && phone === '') return 'no email and no phone'
  const fields = fieldValuesOf(record.fields, fieldColumns)
  if (typeof fields === 'string') return fields
  const tags: string[] = []
  for (const tag of splitTagCell(values.tags)) {
    if (isSystemTagName(tag)) note(line, `tag "${tag}" left out: system tags cannot be imported`)
    else if (tag.length > MAX_TAG_LENGTH) note(line, `tag "${tag}" left out: longer than ${MAX_TAG_LENGTH} characters`)
    else if (!tags.includes(tag)) tags.push(tag)
  }
  return { line, name: name === '' ? undefined : name, email, phone, tags, fields }
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
}

/** The reader's options from the import's; an unknown value is an ImportError naming it. */
export function readImportFormat(
  format: ImportFormat,
): CsvOptions & { map?: Map<string, string>; createFields: boolean } {
  try {
    return {
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
  const whole = createReadStream(input.file)
  try {
    await checkCsvEncoding(whole, format)
  } catch (error) {
    if (error instanceof CsvError) throw new ImportError(error.message)
    throw error
  } finally {
    whole.destroy()
  }
  const unchecked = await repo.importMayLoadUnchecked(db)
  let bytes = 0
  const stream = createReadStream(input.file)
  stream.on('data', (chunk) => {
    bytes += chunk.length
  })
  const context = {
    db,
    clock,
    accountId: account.id,
    language: account.language,
    limit,
    reject,
    note,
    mostlyNew: true,
    unchecked,
    fieldDefinitions: [] as FieldDefinition[],
  }
  let batch: Line[] = []
  // The batch being written while the reader reads and checks the next lines (Node parses while the database writes;
  // the writes stay one after another, each batch committed before the next starts).
  let writing: Promise<Line[]> | null = null
  /** Waits for the batch being written; its lines held back (an address seen earlier in it) lead the next batch. */
  const written = async (): Promise<Line[]> => {
    if (!writing) return []
    const later = await writing
    writing = null
    input.onProgress?.({ bytes, totalBytes, rows: report.rows })
    return later
  }
  try {
    const csv = await openCsv(stream as AsyncIterable<Buffer>, format)
    let columns: ColumnIndexes | undefined
    let fieldColumns: FieldColumn[] = []
    for await (const record of csv.records) {
      if (!columns) {
        const header = record.fields
        const plan = await planHeader(context, header, format, report)
        columns = columnIndexes(plan, header)
        const byKey = new Map(context.fieldDefinitions.map((d) => [d.key, d]))
        fieldColumns = plan.fields.flatMap((key, index) => {
          const definition = key === undefined ? undefined : byKey.get(key)
          return definition ? [{ index, definition }] : []
        })
        report.field_columns = fieldColumns.map((c) => ({ column: header[c.index], field: c.definition.key }))
        context.fieldDefinitions = fieldColumns.map((c) => c.definition)
        report.ignored_columns = plan.ignored
        continue
      }
      report.rows++
      const line = readLine(record, columns, fieldColumns, note)
      if (typeof line === 'string') reject(record.line, line)
      else batch.push(line)
      if (batch.length >= batchSize) {
        const lines = [...(await written()), ...batch]
        batch = []
        writing = importBatch(context, lines, report)
        // awaited by written(); meanwhile a failed write is not an unhandled rejection
        writing.catch(() => undefined)
      }
    }
  } catch (error) {
    // the batch being written ends (committed or rolled back) before the import reports what stopped it
    await writing?.catch(() => undefined)
    if (error instanceof CsvError) throw new ImportError(error.message)
    throw error
  } finally {
    stream.destroy()
  }
  batch = [...(await written()), ...batch]
  while (batch.length > 0) batch = await importBatch(context, batch, report)
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
  const seen = new Set<string>()
  const now: Line[] = []
  const later: Line[] = []
  for (const line of lines) {
    const keys = [line.email && `e:${line.email}`, line.phone && `p:${line.phone}`].filter(Boolean) as string[]
    // a line sharing an address with a line before it, written or held back, waits for that line
    if (keys.some((k) => seen.has(k))) later.push(line)
    else now.push(line)
    for (const k of keys) seen.add(k)
  }
  context.mostlyNew = await context.db.transaction((tx) => writeBatch({ ...context, db: tx }, now, report))
  return later
}

type TagRow = { accountId: string; contactId: string; name: string; origin: 'manuell' }

/** Returns whether most lines were new. */
async function writeBatch(context: BatchContext, lines: Line[], report: ImportReport): Promise<boolean> {
  const { db, accountId } = context
  await checkFieldsUnchanged(context)
  const room = await repo.remainingContacts(db, accountId, context.limit)
  // Insert first when the plan has room for every line and the previous batch was mostly new: a line whose addresses
  // no contact holds is created by the insert, and only the lines an existing address stopped need a lookup.
  const insertFirst = lines.length <= room && context.mostlyNew
  const toMatch = insertFirst ? await createContacts(context, lines, report) : lines
  const { creates, matched } = await classify(context, toMatch)
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
  return matched.length * 2 < lines.length
}

/** Sorts lines into new ones and ones matching an existing contact (locked); rejects the ambiguous ones. */
async function classify(
  context: BatchContext,
  lines: Line[],
): Promise<{ creates: Line[]; matched: Array<{ line: Line; contact: repo.ContactRow }> }> {
  const creates: Line[] = []
  const matched: Array<{ line: Line; contact: repo.ContactRow }> = []
  if (lines.length === 0) return { creates, matched }
  const existing = await repo.findByAddresses(
    context.db,
    context.accountId,
    lines.map((l) => l.email).filter((e) => e !== ''),
    lines.map((l) => l.phone).filter((p) => p !== ''),
  )
  const byEmail = new Map(existing.filter((c) => c.email !== '').map((c) => [c.email, c]))
  const byPhone = new Map(existing.filter((c) => c.phone !== '').map((c) => [c.phone, c]))
  for (const line of lines) {
    const emailOwner = line.email ? byEmail.get(line.email) : undefined
    const phoneOwner = line.phone ? byPhone.get(line.phone) : undefined
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
    if (contact) matched.push({ line, contact })
    else creates.push(line)
  }
  return { creates, matched }
}

/**
 * Creates contacts for these lines (within the plan's room, which the caller checked) with their tags and
 * contact.created events; returns the lines not created because an address is already held.
 */
async function createContacts(context: BatchContext, lines: Line[], report: ImportReport): Promise<Line[]> {
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
