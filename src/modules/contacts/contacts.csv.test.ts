import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  type CsvDelimiter,
  type CsvEncoding,
  CsvError,
  detectDelimiter,
  detectEncoding,
  foldHeader,
  openCsv,
  parseColumnMap,
  parseDelimiter,
  parseEncoding,
  recogniseHeader,
} from './contacts.csv.ts'

/** The bytes of `text` in an encoding, with the byte-order mark a writer of it puts first. */
function encode(text: string, encoding: CsvEncoding, bom: boolean): Uint8Array {
  if (encoding === 'utf-8') return Buffer.concat([Buffer.from(bom ? [0xef, 0xbb, 0xbf] : []), Buffer.from(text)])
  if (encoding === 'windows-1252') return Uint8Array.from(text, (c) => CP1252.get(c) ?? fail(c))
  const le = Buffer.from(`\ufeff${text}`, 'utf16le')
  return encoding === 'utf-16le' ? le : le.swap16()
}
const fail = (c: string): never => {
  throw new Error(`${c} is not in windows-1252`)
}
const CP1252 = new Map(
  [...new TextDecoder('windows-1252').decode(Uint8Array.from({ length: 256 }, (_, i) => i))].map((c, i) => [c, i]),
)

/** A CSV writer as spreadsheets write: quoted when needed (or always), the given line ending. */
function writeCsv(rows: string[][], delimiter: string, quoteAll: boolean, eol: string): string {
  const quote = (field: string) =>
    quoteAll || /["\r\n]|^\s|\s$/.test(field) || field.includes(delimiter) ? `"${field.replaceAll('"', '""')}"` : field
  return rows.map((row) => row.map(quote).join(delimiter)).join(eol) + eol
}

async function readAll(bytes: Uint8Array, options = {}, chunk = 1 << 16) {
  const chunks = async function* () {
    for (let i = 0; i < bytes.length; i += chunk) yield bytes.subarray(i, i + chunk)
  }
  const reader = await openCsv(chunks(), options)
  const records = []
  for await (const record of reader.records) records.push(record)
  return { encoding: reader.encoding, delimiter: reader.delimiter, records }
}

const SPECIAL = [',', ';', '\t', '|', '"', '\n', '\r', '\r\n', ' ', 'x', 'A', '0', '@', '+']
const LETTERS = ['ä', 'ö', 'ü', 'ß', 'Ä', 'Ö', 'Ü', 'é', 'É', 'ç']
/** characters of Windows-1252 that, after another, can look like UTF-8: only read right when the encoding is given */
const CP1252_SYMBOLS = ['€', '©', '½', '¿', '„', '“', '”', '–']
const fieldOf = (chars: string[]) => fc.array(fc.constantFrom(...chars), { maxLength: 8 }).map((c) => c.join(''))

describe('openCsv: what is written is what is read', () => {
  test('any delimiter, encoding, quoting and line ending; fields with delimiters, quotes and line breaks', async () => {
    const file = fc
      .record({
        delimiter: fc.constantFrom<CsvDelimiter>(',', ';', '\t', '|'),
        encoding: fc.constantFrom<CsvEncoding>('utf-8', 'utf-16le', 'utf-16be', 'windows-1252'),
        bom: fc.boolean(),
        given: fc.boolean(),
        quoteAll: fc.boolean(),
        eol: fc.constantFrom('\n', '\r\n'),
        columns: fc.integer({ min: 2, max: 5 }),
      })
      .chain((format) => {
        const chars =
          format.encoding !== 'windows-1252'
            ? [...SPECIAL, ...LETTERS, ...CP1252_SYMBOLS, '😀', 'Ω']
            : format.given
              ? [...SPECIAL, ...LETTERS, ...CP1252_SYMBOLS]
              : [...SPECIAL, ...LETTERS]
        const header = fc.array(fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,7}$/), {
          minLength: format.columns,
          maxLength: format.columns,
        })
        const row = fc.array(fieldOf(chars), { minLength: format.columns, maxLength: format.columns })
        return fc.record({
          format: fc.constant(format),
          rows: fc.tuple(header, fc.array(row, { maxLength: 6 })).map(([h, r]) => [h, ...r]),
          chunk: fc.integer({ min: 1, max: 64 }),
        })
      })
    await fc.assert(
      fc.asyncProperty(file, async ({ format, rows, chunk }) => {
        const text = writeCsv(rows, format.delimiter, format.quoteAll, format.eol)
        const bytes = encode(text, format.encoding, format.bom)
        const options = format.given ? { encoding: format.encoding, delimiter: format.delimiter } : {}
        const read = await readAll(bytes, options, chunk)
        assert.deepEqual(
          read.records.map((r) => r.fields),
          rows,
        )
        assert.equal(read.delimiter, format.delimiter)
      }),
      { numRuns: 300 },
    )
  })

  test('a file larger than the sample, in chunks that cut characters, reads back unchanged', async () => {
    const rows = [['Name', 'E-Mail']]
    for (let i = 0; i < 5000; i++) rows.push([`Jürgen Größe ${i} 😀`, `j${i}@example.com`])
    for (const encoding of ['utf-8', 'utf-16le', 'windows-1252'] as const) {
      const text = writeCsv(
        rows.map((r) => r.map((f) => (encoding === 'windows-1252' ? f.replace(' 😀', '') : f))),
        ';',
        false,
        '\r\n',
      )
      const read = await readAll(encode(text, encoding, false), {}, 7)
      assert.equal(read.encoding, encoding)
      assert.equal(read.records.length, 5001)
      assert.deepEqual(read.records[4321].fields, [
        encoding === 'windows-1252' ? 'Jürgen Größe 4320' : 'Jürgen Größe 4320 😀',
        'j4320@example.com',
      ])
      assert.equal(read.records[4321].line, 4322)
    }
  })
})

describe('encoding', () => {
  test('the byte-order mark decides; without one, UTF-8 when the first bytes are UTF-8, else Windows-1252', () => {
    assert.deepEqual(detectEncoding(Buffer.from('\ufeffName', 'utf8')), { encoding: 'utf-8', bom: 3 })
    assert.deepEqual(detectEncoding(Buffer.from('\ufeffName', 'utf16le')), { encoding: 'utf-16le', bom: 2 })
    assert.deepEqual(detectEncoding(Buffer.from('\ufeffName', 'utf16le').swap16()), { encoding: 'utf-16be', bom: 2 })
    assert.deepEqual(detectEncoding(Buffer.from('Björn Groß')), { encoding: 'utf-8', bom: 0 })
    assert.deepEqual(detectEncoding(encode('Björn Groß', 'windows-1252', false)), {
      encoding: 'windows-1252',
      bom: 0,
    })
    // a sample cut inside a character is still UTF-8
    assert.equal(detectEncoding(Buffer.from('Groß').subarray(0, 4), false).encoding, 'utf-8')
  })

  test('a byte that is not UTF-8 after the sample stops the reading with its line and the option to use', async () => {
    const head = `email,name\r\n${'a@example.com,Anna\r\n'.repeat(5000)}`
    const bytes = Buffer.concat([Buffer.from(head), encode('b@example.com,Björn\r\n', 'windows-1252', false)])
    await assert.rejects(
      readAll(bytes),
      (error: Error) =>
        error instanceof CsvError &&
        /line 5002 is not UTF-8/.test(error.message) &&
        /--encoding cp1252/.test(error.message),
    )
    const read = await readAll(bytes, { encoding: 'windows-1252' })
    assert.deepEqual(read.records.at(-1)?.fields, ['b@example.com', 'Björn'])
  })

  test('a quote inside a field that is not quoted is part of the text, as spreadsheets read it', async () => {
    const read = await readAll(
      Buffer.from('Name;E-Mail\r\nAnna "die Große" Berg;anna@example.com\r\n5" Display;d@example.com\r\n'),
    )
    assert.deepEqual(
      read.records.map((r) => r.fields),
      [
        ['Name', 'E-Mail'],
        ['Anna "die Große" Berg', 'anna@example.com'],
        ['5" Display', 'd@example.com'],
      ],
    )
  })

  test('--encoding takes utf-8, utf-16le, utf-16be, cp1252 and names anything else', () => {
    assert.equal(parseEncoding('cp1252'), 'windows-1252')
    assert.equal(parseEncoding('UTF8'), 'utf-8')
    assert.equal(parseEncoding('utf-16be'), 'utf-16be')
    assert.throws(() => parseEncoding('ebcdic'), /unknown encoding "ebcdic"/)
  })
})

describe('delimiter', () => {
  test('the header and first rows decide, quoted parts ignored', () => {
    assert.equal(detectDelimiter('Name;E-Mail;Telefon\r\nA, B;a@example.com;+49 151\r\n'), ';')
    assert.equal(detectDelimiter('"Name; Firma",Email\n"X;Y",x@example.com\n'), ',')
    assert.equal(detectDelimiter('name\temail\nA|B\ta@example.com\n'), '\t')
    assert.equal(detectDelimiter('email|name\na@example.com|A\n'), '|')
    assert.equal(detectDelimiter('email\na@example.com\n'), ',')
  })

  test("Excel's sep= line names the delimiter and is not the header", async () => {
    const read = await readAll(Buffer.from('sep=;\r\nName;E-Mail\r\nA, B;a@example.com\r\n'))
    assert.equal(read.delimiter, ';')
    assert.deepEqual(
      read.records.map((r) => r.fields),
      [
        ['Name', 'E-Mail'],
        ['A, B', 'a@example.com'],
      ],
    )
  })

  test('--delimiter takes , ; | and tab and names anything else', () => {
    assert.equal(parseDelimiter('tab'), '\t')
    assert.equal(parseDelimiter('\\t'), '\t')
    assert.equal(parseDelimiter(';'), ';')
    assert.throws(() => parseDelimiter(':'), /unknown delimiter ":"/)
  })
})

describe('header recognition', () => {
  test('German, English and the exports of Mailchimp, Brevo, HubSpot, Shopify and Excel', () => {
    const cases: Array<[string[], Array<string | undefined>]> = [
      [
        ['Name', 'E-Mail', 'Telefon', 'Kundennummer'],
        ['name', 'email', 'phone', undefined],
      ],
      [
        ['Email Address', 'First Name', 'Last Name', 'Phone Number', 'TAGS'],
        ['email', 'first_name', 'last_name', 'phone', 'tags'],
      ],
      [
        ['Vorname', 'Nachname', 'E-Mail-Adresse', 'Mobil', 'Handy'],
        ['first_name', 'last_name', 'email', 'phone', 'phone'],
      ],
      [
        ['EMAIL', 'FIRSTNAME', 'LASTNAME', 'SMS'],
        ['email', 'first_name', 'last_name', 'phone'],
      ],
      [
        ['Record ID', 'First Name', 'Last Name', 'Email', 'Phone Number', 'Mobile Phone Number'],
        [undefined, 'first_name', 'last_name', 'email', 'phone', 'phone'],
      ],
      [
        ['Customer ID', 'First Name', 'Last Name', 'Email', 'Accepts Email Marketing', 'Phone', 'Tags'],
        [undefined, 'first_name', 'last_name', 'email', undefined, 'phone', 'tags'],
      ],
      [
        ['full_name', 'e_mail', 'mobile_phone', 'Tags'],
        ['name', 'email', 'phone', 'tags'],
      ],
    ]
    for (const [header, expected] of cases) assert.deepEqual(recogniseHeader(header).columns, expected, header.join())
  })

  test('what maps nowhere is ignored, opt-in columns included', () => {
    const plan = recogniseHeader(['email', 'optin_chat', 'optin_email', 'Accepts SMS Marketing', 'Kundennummer', ''])
    assert.deepEqual(plan.ignored, ['optin_chat', 'optin_email', 'Accepts SMS Marketing', 'Kundennummer'])
  })

  test('case, spaces, hyphens and underscores are folded', () => {
    assert.equal(foldHeader(' E-Mail_Adresse '), 'emailadresse')
    assert.equal(foldHeader('Phone  Number'), 'phonenumber')
  })

  test('--map goes before the recognised names; an unknown field or column is named', () => {
    const map = parseColumnMap('Kunden Telefon=phone, Mobil=tags')
    assert.deepEqual(recogniseHeader(['E-Mail', 'kunden_telefon', 'Mobil'], map).columns, ['email', 'phone', 'tags'])
    assert.throws(
      () => recogniseHeader(['Kundennummer'], parseColumnMap('Kundennummer=customer_no')),
      /Kundennummer: unknown field "customer_no"/,
    )
    assert.throws(() => parseColumnMap('Kundennummer=Kunden Nr'), /Kundennummer: unknown field "Kunden Nr"/)
    assert.throws(() => parseColumnMap('Kundennummer'), /--map "Kundennummer": write COLUMN=FIELD/)
    assert.throws(() => recogniseHeader(['email'], parseColumnMap('Mobl=phone')), /column the file does not have: Mobl/)
  })
})
