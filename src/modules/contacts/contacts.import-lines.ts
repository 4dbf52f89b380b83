import { createReadStream } from 'node:fs'
import type { ContactColumn, CsvOptions, CsvRecord } from './contacts.csv.ts'
import { checkCsvEncoding, openCsv } from './contacts.csv.ts'
import type { CustomFieldValue } from './contacts.field-types.ts'
import { parseCell } from './contacts.fields.rules.ts'
import type { FieldDefinition } from './contacts.fields-read.ts'
import { isSystemTagName, MAX_TAG_LENGTH, normalizeEmail, normalizePhone, splitTagCell } from './contacts.rules.ts'

// The import's reading: a CSV file's lines checked and turned into contacts' values, batch by batch, with what was
// rejected and noted on the way. Plain values only (no database, no schema): the same code runs on the import's own
// thread for a large file (contacts.import-thread.ts), and inline for a small one.

export interface Line {
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
export type ColumnIndexes = Record<ContactColumn, number[]>

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
export interface FieldColumn {
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
export function readLine(
  record: CsvRecord,
  columns: ColumnIndexes,
  fieldColumns: FieldColumn[],
  note: (line: number, text: string) => void,
  country: string | null = null,
): Line | string {
  const line = record.line
  const values = valuesOf(record.fields, columns)
  const name = values.name
  const email = normalizeEmail(values.email)
  const rawPhone = values.phone
  if (name.length > 120) return 'name is longer than 120 characters'
  if (email !== '' && (email.length > 254 || !EMAIL_FORMAT.test(email))) return `invalid email "${email}"`
  const phone = rawPhone === '' ? '' : normalizePhone(rawPhone, country)
  if (phone === null) {
    return country
      ? `invalid phone "${rawPhone}" (not a valid number, national ones read in ${country})`
      : `invalid phone "${rawPhone}" (international format needed, such as +49 151 23456789)`
  }
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

/** One batch of checked lines, what the reader rejected and noted among them, and how far it has read. */
export interface ReadBatch {
  lines: Line[]
  rejected: Array<{ line: number; reason: string }>
  notes: Array<{ line: number; note: string }>
  /** the records read for this batch, rejected ones included */
  rows: number
  /** bytes of the file read so far */
  bytes: number
}

/** How the lines are read once the header is planned: which columns fill which field. */
export interface LinePlan {
  columns: ColumnIndexes
  fieldColumns: FieldColumn[]
  /** the country national phone numbers are read in (ISO 3166-1 alpha-2), null: international ones only */
  country: string | null
}

/** An opened import file: its header (undefined when the file has no line), then its lines in batches. */
export interface LineReader {
  header: string[] | undefined
  batches(plan: LinePlan): AsyncIterable<ReadBatch>
  /** stops reading (idempotent): what was not read is left */
  close(): void
}

/**
 * Opens a CSV file to import: the whole file's encoding is checked first (a UTF-8 file with a byte
 * that is not UTF-8 is refused before anything is imported), then its header is read. CsvError for a file that is
 * not CSV or not in its encoding.
 */
export async function openLineReader(file: string, format: CsvOptions, batchSize: number): Promise<LineReader> {
  const whole = createReadStream(file)
  try {
    await checkCsvEncoding(whole, format)
  } finally {
    whole.destroy()
  }
  let bytes = 0
  const stream = createReadStream(file)
  stream.on('data', (chunk) => {
    bytes += chunk.length
  })
  let records: AsyncIterator<CsvRecord>
  let first: IteratorResult<CsvRecord>
  try {
    records = (await openCsv(stream as AsyncIterable<Buffer>, format)).records[Symbol.asyncIterator]()
    first = await records.next()
  } catch (error) {
    stream.destroy()
    throw error
  }
  const close = () => {
    void records.return?.()
    stream.destroy()
  }
  return {
    header: first.done ? undefined : first.value.fields,
    close,
    async *batches({ columns, fieldColumns, country }) {
      let batch: ReadBatch = { lines: [], rejected: [], notes: [], rows: 0, bytes: 0 }
      const note = (line: number, text: string) => batch.notes.push({ line, note: text })
      try {
        for (let next = await records.next(); !next.done; next = await records.next()) {
          const record = next.value
          batch.rows++
          const line = readLine(record, columns, fieldColumns, note, country)
          if (typeof line === 'string') batch.rejected.push({ line: record.line, reason: line })
          else batch.lines.push(line)
          if (batch.lines.length >= batchSize) {
            batch.bytes = bytes
            yield batch
            batch = { lines: [], rejected: [], notes: [], rows: 0, bytes: 0 }
          }
        }
        batch.bytes = bytes
        if (batch.rows > 0) yield batch
      } finally {
        close()
      }
    },
  }
}
