import { Readable } from 'node:stream'
import { parse } from 'csv-parse'

// The contact CSV reader: the files people have (Excel in German or English, Mailchimp, Brevo, HubSpot, Shopify),
// whatever their encoding and delimiter, read as records of strings with their line numbers.

export type CsvEncoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252'
export const CSV_DELIMITERS = [',', ';', '\t', '|'] as const
export type CsvDelimiter = (typeof CSV_DELIMITERS)[number]

/** The contact fields a column can fill. */
export const CONTACT_COLUMNS = ['name', 'first_name', 'last_name', 'email', 'phone', 'tags'] as const
export type ContactColumn = (typeof CONTACT_COLUMNS)[number]

/** A file or an option the reader cannot take; the message says what to change. */
export class CsvError extends Error {}

export interface CsvOptions {
  /** overrides the detection */
  encoding?: CsvEncoding
  /** overrides the detection */
  delimiter?: CsvDelimiter
}

export interface CsvRecord {
  fields: string[]
  /** the file's line on which the record ends (1 is the first line) */
  line: number
}

export interface CsvReader {
  encoding: CsvEncoding
  delimiter: CsvDelimiter
  records: AsyncIterable<CsvRecord>
}

/** Bytes looked at to decide encoding and delimiter. */
const SAMPLE_BYTES = 64 * 1024
/** Records looked at to decide the delimiter. */
const SAMPLE_RECORDS = 20

const ENCODING_NAMES: Record<string, CsvEncoding> = {
  utf8: 'utf-8',
  'utf-8': 'utf-8',
  utf16le: 'utf-16le',
  'utf-16le': 'utf-16le',
  utf16be: 'utf-16be',
  'utf-16be': 'utf-16be',
  cp1252: 'windows-1252',
  'windows-1252': 'windows-1252',
  win1252: 'windows-1252',
  latin1: 'windows-1252',
  'iso-8859-1': 'windows-1252',
}

/** `--encoding`: utf-8, utf-16le, utf-16be, cp1252 (windows-1252, latin1). */
export function parseEncoding(name: string): CsvEncoding {
  const encoding = ENCODING_NAMES[name.trim().toLowerCase()]
  if (!encoding) throw new CsvError(`unknown encoding "${name}" (use utf-8, utf-16le, utf-16be or cp1252)`)
  return encoding
}

/** `--delimiter`: one of , ; | or a tab (`\t` or `tab`). */
export function parseDelimiter(text: string): CsvDelimiter {
  const delimiter = text === '\\t' || text.toLowerCase() === 'tab' ? '\t' : text
  const known = CSV_DELIMITERS.find((d) => d === delimiter)
  if (!known) throw new CsvError(`unknown delimiter "${text}" (use , ; | or tab)`)
  return known
}

/** The encoding the first bytes say, and the length of the byte-order mark. */
export function detectEncoding(head: Uint8Array, final = true): { encoding: CsvEncoding; bom: number } {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return { encoding: 'utf-8', bom: 3 }
  if (head[0] === 0xff && head[1] === 0xfe) return { encoding: 'utf-16le', bom: 2 }
  if (head[0] === 0xfe && head[1] === 0xff) return { encoding: 'utf-16be', bom: 2 }
  const end = final ? head.length : completeUtf8End(head)
  return { encoding: invalidUtf8At(head.subarray(0, end)) < 0 ? 'utf-8' : 'windows-1252', bom: 0 }
}

/** The end of the last complete UTF-8 sequence (a sample may end inside one). */
function completeUtf8End(bytes: Uint8Array): number {
  for (let i = bytes.length - 1; i >= 0 && i >= bytes.length - 4; i--) {
    const byte = bytes[i]
    if (byte < 0x80) return bytes.length
    if (byte >= 0xc0) {
      const size = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2
      return i + size <= bytes.length ? bytes.length : i
    }
  }
  return bytes.length
}

/** The length of the UTF-8 sequence this byte starts; 0 when it starts none. */
function utf8SequenceLength(byte: number): number {
  if (byte < 0x80) return 1
  if (byte < 0xc2) return 0
  if (byte < 0xe0) return 2
  if (byte < 0xf0) return 3
  return byte < 0xf5 ? 4 : 0
}

/** The index of the first byte that is not UTF-8, or -1. */
export function invalidUtf8At(bytes: Uint8Array): number {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  try {
    decoder.decode(bytes)
    return -1
  } catch {
    // only on the error path: find where
    let i = 0
    while (i < bytes.length) {
      const size = utf8SequenceLength(bytes[i])
      if (size === 0 || i + size > bytes.length) return i
      for (let k = 1; k < size; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return i
      try {
        decoder.decode(bytes.subarray(i, i + size))
      } catch {
        return i // overlong or surrogate
      }
      i += size
    }
    return bytes.length
  }
}

/**
 * The delimiter of the header line and the first records: the candidate found outside quotes in the header that
 * splits the most records into as many fields as the header.
 */
export function detectDelimiter(text: string): CsvDelimiter {
  const counts = countOutsideQuotes(text, SAMPLE_RECORDS)
  if (counts.length === 0) return ','
  let best: CsvDelimiter = ','
  let bestScore = -1
  for (const [c, delimiter] of CSV_DELIMITERS.entries()) {
    const inHeader = counts[0][c]
    if (inHeader === 0) continue
    const agreeing = counts.filter((record) => record[c] === inHeader).length
    const score = agreeing * 1000 + inHeader
    if (score > bestScore) {
      best = delimiter
      bestScore = score
    }
  }
  return best
}

/** Per record (at most `limit`, the last maybe cut off), how often each candidate occurs outside quotes. */
function countOutsideQuotes(text: string, limit: number): number[][] {
  const records: number[][] = []
  let counts = [0, 0, 0, 0]
  let quoted = false
  for (let i = 0; i < text.length && records.length < limit; i++) {
    const char = text[i]
    if (char === '"') quoted = !quoted
    else if (quoted) continue
    else if (char === '\n') {
      records.push(counts)
      counts = [0, 0, 0, 0]
    } else {
      const c = CSV_DELIMITERS.indexOf(char as CsvDelimiter)
      if (c >= 0) counts[c]++
    }
  }
  if (records.length < limit && counts.some((n) => n > 0)) records.push(counts)
  return records
}

/** Excel's `sep=;` first line names the delimiter. */
function excelSeparatorLine(text: string): CsvDelimiter | undefined {
  if (!text.startsWith('sep=') || !(text[5] === '\n' || text.slice(5, 7) === '\r\n')) return undefined
  return CSV_DELIMITERS.find((d) => d === text[4])
}

/**
 * Opens a CSV byte stream: decides the encoding (UTF-8 with or without byte-order mark, UTF-16 with one, else
 * Windows-1252) and the delimiter (, ; tab |) from the first bytes unless given, and reads quoted fields with
 * delimiters and line breaks, CRLF or LF. Fields are trimmed outside quotes; empty lines are skipped.
 */
export async function openCsv(source: AsyncIterable<Uint8Array>, options: CsvOptions = {}): Promise<CsvReader> {
  const { head, rest, final } = await readHead(source)
  const encoding = options.encoding ?? detectEncoding(head, final).encoding
  const headText = new TextDecoder(encoding).decode(head.subarray(0, SAMPLE_BYTES))
  const separator = excelSeparatorLine(headText)
  const delimiter = options.delimiter ?? separator ?? detectDelimiter(headText)
  const feeder = Readable.from(toUtf8(head, rest, encoding))
  const parser = parse({
    delimiter,
    from_line: separator ? 2 : 1,
    bom: true,
    skip_empty_lines: true,
    relax_column_count: true,
    // a quote inside a field that is not quoted is text (`Anna "A" Berg`, `5" Display`), as spreadsheets read it
    relax_quotes: true,
    trim: true,
    info: true,
  })
  feeder.on('error', (error) => parser.destroy(error))
  feeder.pipe(parser)
  // listening from now on: a parse error must not go off before the caller starts reading
  const parsed = parser[Symbol.asyncIterator]()
  return { encoding, delimiter, records: readRecords(parsed, feeder) }
}

/** The first bytes (at least the sample, unless the file is shorter) and the rest of the source. */
async function readHead(
  source: AsyncIterable<Uint8Array>,
): Promise<{ head: Buffer; rest: AsyncIterable<Uint8Array>; final: boolean }> {
  const iterator = source[Symbol.asyncIterator]()
  const chunks: Uint8Array[] = []
  let length = 0
  let final = false
  while (length < SAMPLE_BYTES) {
    const next = await iterator.next()
    if (next.done) {
      final = true
      break
    }
    chunks.push(next.value)
    length += next.value.length
  }
  const rest: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => (final ? { next: async () => ({ done: true, value: undefined }) } : iterator),
  }
  return { head: Buffer.concat(chunks), rest, final }
}

/**
 * Reads a whole source as openCsv would decode it, without parsing: a file that is not UTF-8 past the sample is
 * refused with its line before anything of it is imported.
 */
export async function checkCsvEncoding(source: AsyncIterable<Uint8Array>, options: CsvOptions = {}): Promise<void> {
  const { head, rest, final } = await readHead(source)
  const encoding = options.encoding ?? detectEncoding(head, final).encoding
  if (encoding !== 'utf-8' || final) return
  const decoded = toUtf8(head, rest, encoding)
  while (!(await decoded.next()).done) {
    // only the check matters
  }
}

async function* readRecords(parsed: AsyncIterator<unknown>, feeder: Readable): AsyncGenerator<CsvRecord> {
  try {
    for (let next = await parsed.next(); !next.done; next = await parsed.next()) {
      const { record, info } = next.value as { record: string[]; info: { lines: number } }
      yield { fields: record, line: info.lines }
    }
  } catch (error) {
    if (error instanceof CsvError) throw error
    if ((error as { code?: string }).code?.startsWith('CSV_')) {
      throw new CsvError(`the file is not valid CSV: ${(error as Error).message}`)
    }
    throw error
  } finally {
    await parsed.return?.()
    feeder.destroy()
  }
}

/**
 * The file as UTF-8 bytes for the parser. UTF-8 passes through checked: a byte that is not UTF-8 stops the reading
 * with its line rather than a garbled name.
 */
async function* toUtf8(head: Buffer, rest: AsyncIterable<Uint8Array>, encoding: CsvEncoding): AsyncGenerator<Buffer> {
  const decoder = new TextDecoder(encoding, { fatal: encoding === 'utf-8' })
  let lines = 1
  const convert = (chunk: Uint8Array, last: boolean): Buffer => {
    if (encoding !== 'utf-8') return Buffer.from(decoder.decode(chunk, { stream: !last }), 'utf8')
    try {
      decoder.decode(chunk, { stream: !last })
    } catch {
      const at = Math.max(invalidUtf8At(chunk), 0)
      throw new CsvError(
        `line ${lines + countNewlines(chunk, at)} is not UTF-8 (byte 0x${(chunk[at] ?? 0).toString(16)}); ` +
          'if the file is Windows-1252 (older Excel, many shop systems), import it with --encoding cp1252',
      )
    }
    lines += countNewlines(chunk, chunk.length)
    return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  }
  yield convert(head, false)
  for await (const chunk of rest) yield convert(chunk, false)
  const tail = convert(new Uint8Array(0), true)
  if (tail.length > 0) yield tail
}

function countNewlines(bytes: Uint8Array, end: number): number {
  let count = 0
  for (let i = bytes.indexOf(10); i >= 0 && i < end; i = bytes.indexOf(10, i + 1)) count++
  return count
}

// Header recognition: names folded (case, spaces, hyphens, underscores, dots) and looked up.

const HEADER_ALIASES: Record<ContactColumn, string[]> = {
  name: ['name', 'fullname', 'vollständigername', 'vollername', 'displayname', 'anzeigename'],
  first_name: ['firstname', 'vorname', 'givenname', 'prenom', 'prénom', 'fname'],
  last_name: ['lastname', 'nachname', 'familyname', 'surname', 'familienname', 'nom', 'lname'],
  email: [
    'email',
    'mail',
    'emailaddress',
    'emailadresse',
    'emailadress',
    'mailadresse',
    'email1value',
    'emailaddress1',
    'emailadresse1',
  ],
  phone: [
    'phone',
    'phonenumber',
    'telephone',
    'telefon',
    'telefonnummer',
    'tel',
    'mobile',
    'mobil',
    'mobilephone',
    'mobilephonenumber',
    'mobilenumber',
    'mobilnummer',
    'mobiltelefon',
    'mobilfunknummer',
    'handy',
    'handynummer',
    'cellphone',
    'cell',
    'sms',
    'whatsapp',
    'whatsappnummer',
    'phone1value',
    'defaultaddressphone',
  ],
  tags: ['tags', 'tag', 'labels', 'label', 'schlagwörter', 'schlagworte', 'stichwörter', 'kategorien', 'categories'],
}

const HEADER_INDEX = new Map<string, ContactColumn>(
  Object.entries(HEADER_ALIASES).flatMap(([column, names]) => names.map((n) => [n, column as ContactColumn])),
)

/** Every folded header name an import reads as a contact field (a custom field's key may not be one). */
export const HEADER_ALIAS_NAMES: ReadonlySet<string> = new Set(HEADER_INDEX.keys())

/** A header name with case, spaces, hyphens, underscores and dots folded away: `E-Mail-Adresse` → `emailadresse`. */
export function foldHeader(name: string): string {
  return name.toLowerCase().replace(/[\s\-_.]+/g, '')
}

/** A header name folded for matching a custom field's key or label: foldHeader, and accents and ß ignored too. */
export function foldFieldName(name: string): string {
  return foldHeader(name.normalize('NFD').replace(/\p{M}/gu, '').replaceAll('ß', 'ss'))
}

const FIELD_KEY = /^[a-z][a-z0-9_]{0,39}$/

/** The --map target that leaves a column out (`--map "Notizen=-"`), whatever its name would fill. */
export const IGNORE_COLUMN = '-'

/**
 * `--map "Telefon 2=phone,Kundennummer=customer_no,Notizen=-"`: header name (folded when compared) to a contact
 * field, a custom field's key, or `-` (the column is left out). A target that is none of them is an error naming it.
 */
export function parseColumnMap(text: string): Map<string, string> {
  const map = new Map<string, string>()
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue
    const at = pair.lastIndexOf('=')
    const column = pair.slice(0, at).trim()
    const target = pair.slice(at + 1).trim()
    if (at < 0 || column === '') throw new CsvError(`--map "${pair.trim()}": write COLUMN=FIELD`)
    if (!isContactColumn(target) && !FIELD_KEY.test(target) && target !== IGNORE_COLUMN) {
      throw new CsvError(
        `--map ${column}: unknown field "${target}" (use ${CONTACT_COLUMNS.join(', ')}, a custom field's key, or - to leave it out)`,
      )
    }
    map.set(column, target)
  }
  return map
}

const isContactColumn = (name: string): name is ContactColumn => (CONTACT_COLUMNS as readonly string[]).includes(name)

/** The account's custom fields as a header can name them. */
export interface HeaderFields {
  /** every key */
  keys: ReadonlySet<string>
  /** foldFieldName of each key and label to its key */
  byName: ReadonlyMap<string, string>
}

const NO_FIELDS: HeaderFields = { keys: new Set(), byName: new Map() }

export interface HeaderPlan {
  /** per column of the file, the contact field it fills (undefined: none) */
  columns: Array<ContactColumn | undefined>
  /** per column of the file, the custom field (its key) it fills (undefined: none) */
  fields: Array<string | undefined>
  /** the file's header names that fill nothing */
  ignored: string[]
}

/**
 * Which contact field or custom field each column fills: `map` (header name → field or key) first, then the
 * recognised names, then a custom field whose key or label the header is (case and accents ignored).
 */
export function recogniseHeader(
  header: string[],
  map: Map<string, string> = new Map(),
  customFields: HeaderFields = NO_FIELDS,
): HeaderPlan {
  const folded = header.map(foldHeader)
  const mapped = new Map<string, string>()
  for (const [name, target] of map) {
    if (!folded.includes(foldHeader(name))) throw new CsvError(`--map names a column the file does not have: ${name}`)
    if (!isContactColumn(target) && !customFields.keys.has(target) && target !== IGNORE_COLUMN) {
      throw new CsvError(
        `--map ${name}: unknown field "${target}" (use ${CONTACT_COLUMNS.join(', ')}, a custom field's key, or - to leave it out)`,
      )
    }
    mapped.set(foldHeader(name), target)
  }
  const columns: Array<ContactColumn | undefined> = []
  const fields: Array<string | undefined> = []
  header.forEach((name, i) => {
    if (mapped.get(folded[i]) === IGNORE_COLUMN) {
      columns.push(undefined)
      fields.push(undefined)
      return
    }
    const target = mapped.get(folded[i])
    const column = target === undefined ? HEADER_INDEX.get(folded[i]) : isContactColumn(target) ? target : undefined
    columns.push(column)
    const field = target === undefined ? undefined : isContactColumn(target) ? undefined : target
    fields.push(field ?? (target === undefined && !column ? customFields.byName.get(foldFieldName(name)) : undefined))
  })
  const ignored = header.filter((name, i) => !columns[i] && !fields[i] && name.trim() !== '')
  return { columns, fields, ignored }
}
