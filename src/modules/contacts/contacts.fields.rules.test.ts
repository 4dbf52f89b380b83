import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { CONTACT_VARIABLES } from '../templates/templates.variables.ts'
import {
  applyFieldChange,
  BUILT_IN_VARIABLES,
  changedDefinition,
  checkFieldValues,
  checkValue,
  convertValue,
  isDate,
  KEY_PATTERN,
  keyFromHeader,
  keyProblem,
  newDefinition,
  parseCell,
} from './contacts.fields.rules.ts'
import type { FieldDefinition } from './contacts.fields-read.ts'

const text = (key = 'note', maxLength = 255): FieldDefinition => ({
  key,
  label: key,
  type: 'text',
  options: null,
  defaultValue: null,
  maxLength,
})
const of = (type: FieldDefinition['type'], key = 'f', options: string[] | null = null): FieldDefinition => ({
  key,
  label: key,
  type,
  options,
  defaultValue: null,
  maxLength: type === 'text' ? 255 : null,
})

describe('keys', () => {
  test('every variable templates fill from the contact is a reserved key', () => {
    for (const name of [...CONTACT_VARIABLES, ...BUILT_IN_VARIABLES]) assert.notEqual(keyProblem(name), null, name)
  })

  test('lower-case a-z0-9_ starting with a letter, at most 40', () => {
    assert.equal(keyProblem('customer_no'), null)
    assert.equal(keyProblem('a'.repeat(40)), null)
    for (const bad of ['Customer', '1abc', '123', '_x', 'a-b', 'a'.repeat(41), '', 'kunden nr', 'straße']) {
      assert.match(keyProblem(bad) ?? '', /must be 1 to 40 characters/, bad)
    }
  })

  test('attributes of the contact, German alias names and import column names are refused', () => {
    assert.match(keyProblem('optin_chat') ?? '', /attribute of the contact/)
    assert.match(keyProblem('tags') ?? '', /attribute of the contact/)
    assert.match(keyProblem('anzahl') ?? '', /reserves/)
    assert.match(keyProblem('mobil') ?? '', /column name an import reads/)
    assert.match(keyProblem('e_mail') ?? '', /column name an import reads/)
  })

  test('a key from a header: lower-case, umlauts transliterated, other characters _, clashes suffixed', () => {
    const none = new Set<string>()
    assert.equal(keyFromHeader('Kundennummer', none), 'kundennummer')
    assert.equal(keyFromHeader('Größe (cm)', none), 'groesse_cm')
    assert.equal(keyFromHeader('Café Präferenz', none), 'cafe_praeferenz')
    assert.equal(keyFromHeader('2024 Umsatz', none), 'field_2024_umsatz')
    assert.equal(keyFromHeader('???', none), 'field')
    assert.equal(keyFromHeader('Greeting', none), 'greeting_2')
    assert.equal(keyFromHeader('Kundennummer', new Set(['kundennummer', 'kundennummer_2'])), 'kundennummer_3')
    assert.equal(keyFromHeader('x'.repeat(60), none).length, 40)
  })

  test('every derived key is a valid key', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.uniqueArray(fc.string({ maxLength: 10 })), (header, taken) => {
        const key = keyFromHeader(header, new Set(taken))
        assert.match(key, KEY_PATTERN)
        assert.equal(keyProblem(key), null)
        assert.ok(!taken.includes(key))
      }),
    )
  })
})

describe('definitions', () => {
  test('a choice needs 1-100 distinct non-empty options; another type refuses them', () => {
    assert.throws(() => newDefinition({ key: 'level', label: 'Level', type: 'choice' }), /needs options/)
    assert.throws(
      () => newDefinition({ key: 'level', label: 'Level', type: 'choice', options: ['a', 'a'] }),
      /given twice/,
    )
    assert.throws(() => newDefinition({ key: 'level', label: 'Level', type: 'choice', options: [' '] }), /non-empty/)
    assert.throws(
      () => newDefinition({ key: 'level', label: 'Level', type: 'choice', options: ['x'.repeat(101)] }),
      /at most 100/,
    )
    assert.throws(
      () => newDefinition({ key: 'n', label: 'N', type: 'number', options: ['a'] }),
      (e: { key: string }) => e.key === 'field_options_invalid',
    )
    const level = newDefinition({ key: 'level', label: 'Level', type: 'choice', options: ['gold', 'silver'] })
    assert.deepEqual(level.options, ['gold', 'silver'])
  })

  test('max_length is 1-1024 for text only, default 255; the label 1-80; the default fits the type', () => {
    assert.equal(newDefinition({ key: 'note', label: 'Note', type: 'text' }).maxLength, 255)
    assert.throws(() => newDefinition({ key: 'note', label: 'Note', type: 'text', max_length: 1025 }), /1 to 1024/)
    assert.throws(() => newDefinition({ key: 'n', label: 'N', type: 'number', max_length: 5 }), /only for a field/)
    assert.throws(() => newDefinition({ key: 'n', label: 'x'.repeat(81), type: 'number' }), /label/)
    assert.throws(
      () => newDefinition({ key: 'n', label: 'N', type: 'number', default: '5' }),
      (e: { key: string; message: string }) =>
        e.key === 'field_default_invalid' && /n must be a number/.test(e.message),
    )
    assert.equal(newDefinition({ key: 'n', label: 'N', type: 'number', default: 5 }).defaultValue, 5)
  })

  test('a new type drops options and max_length of the old one and converts the default', () => {
    const level = newDefinition({
      key: 'level',
      label: 'Level',
      type: 'choice',
      options: ['1', '2'],
      default: '2',
    })
    const asNumber = changedDefinition(level, { type: 'number' })
    assert.deepEqual([asNumber.options, asNumber.maxLength, asNumber.defaultValue], [null, null, 2])
    const asText = changedDefinition(asNumber, { type: 'text' })
    assert.deepEqual([asText.maxLength, asText.defaultValue], [255, '2'])
    assert.throws(() => changedDefinition(asText, { type: 'date' }), /does not fit the changed field/)
    assert.equal(changedDefinition(asText, { type: 'date', default: null }).defaultValue, null)
  })
})

describe('values', () => {
  test('each type takes its wire form and names the rule otherwise', () => {
    assert.deepEqual(checkValue(of('number', 'customer_no'), '42'), { problem: 'customer_no must be a number' })
    assert.deepEqual(checkValue(of('date', 'birthday'), '31.01.2026'), {
      problem: 'birthday must be a date YYYY-MM-DD',
    })
    assert.deepEqual(checkValue(of('choice', 'level', ['gold', 'silver']), 'bronze'), {
      problem: 'level must be one of gold, silver',
    })
    assert.deepEqual(checkValue(text('note', 255), 'x'.repeat(256)), { problem: 'note: text longer than 255' })
    assert.deepEqual(checkValue(of('boolean', 'vip'), 'true'), { problem: 'vip must be true or false' })
    assert.deepEqual(checkValue(of('number'), 1e15), { problem: 'f must be a number between -1e15 and 1e15' })
    assert.deepEqual(checkValue(text(), ''), { problem: 'note must not be empty (null clears it)' })
    assert.deepEqual(checkValue(of('number'), 4.5), { value: 4.5 })
    assert.deepEqual(checkValue(text(), 'Zeile 1\nZeile; 2'), { value: 'Zeile 1\nZeile; 2' })
  })

  test('dates are calendar dates', () => {
    for (const good of ['2026-01-31', '2024-02-29', '2000-02-29', '0001-01-01']) assert.ok(isDate(good), good)
    for (const bad of ['2026-02-29', '1900-02-29', '2026-13-01', '2026-04-31', '0000-01-01', '2026-1-1']) {
      assert.ok(!isDate(bad), bad)
    }
  })

  test('unknown keys and broken rules are all named; null clears; the merge keeps what is not given', () => {
    const definitions = [of('number', 'customer_no'), of('choice', 'level', ['gold']), text('note')]
    const checked = checkFieldValues(definitions, { customer_no: 'x', level: 'lead', nope: 1, note: null })
    assert.deepEqual(checked.unknown, ['nope'])
    assert.deepEqual(checked.invalid, ['customer_no must be a number', 'level must be one of gold'])
    const ok = checkFieldValues(definitions, { customer_no: 7, note: null })
    assert.deepEqual(ok.change, { set: { customer_no: 7 }, clear: ['note'] })
    assert.deepEqual(applyFieldChange({ note: 'a', level: 'gold' }, ok.change), { level: 'gold', customer_no: 7 })
  })

  test('a CSV cell: decimal comma, German dates, ja/nein, options ignoring case, the export guard removed', () => {
    assert.deepEqual(parseCell(of('number'), '4,5'), { value: 4.5 })
    assert.deepEqual(parseCell(of('number'), '-12'), { value: -12 })
    assert.deepEqual(parseCell(of('number'), 'zwölf'), { problem: 'f must be a number' })
    assert.deepEqual(parseCell(of('date'), '7.3.1990'), { value: '1990-03-07' })
    assert.deepEqual(parseCell(of('date'), '1990-03-07'), { value: '1990-03-07' })
    assert.deepEqual(parseCell(of('boolean'), 'Ja'), { value: true })
    assert.deepEqual(parseCell(of('boolean'), 'nein'), { value: false })
    assert.deepEqual(parseCell(of('choice', 'f', ['Gold']), 'gold'), { value: 'Gold' })
    assert.deepEqual(parseCell(text(), "'-minus"), { value: '-minus' })
    assert.deepEqual(parseCell(text(), "'quote"), { value: "'quote" })
  })
})

describe('conversion to another type', () => {
  test('the cases of the issue', () => {
    assert.equal(convertValue('42', of('number')), 42)
    assert.equal(convertValue('2026-01-31', of('date')), '2026-01-31')
    assert.equal(convertValue('ja', of('boolean')), true)
    assert.equal(convertValue('nein', of('boolean')), false)
    assert.equal(convertValue('true', of('boolean')), true)
    assert.equal(convertValue(42, text()), '42')
    assert.equal(convertValue(true, text()), 'true')
    assert.equal(convertValue('gold', of('choice', 'f', ['gold'])), 'gold')
    assert.equal(convertValue(2, of('choice', 'f', ['1', '2'])), '2')
    for (const [value, to] of [
      ['abc', of('number')],
      ['31.01.2026', of('date')],
      [5, of('boolean')],
      ['maybe', of('boolean')],
      ['bronze', of('choice', 'f', ['gold'])],
      ['x'.repeat(11), text('t', 10)],
    ] as const) {
      assert.equal(convertValue(value, to), null, `${value} to ${to.type}`)
    }
  })

  test('any valid value becomes text and back to its type unchanged', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: -1e9, max: 1e9 }).map((n) => ['number', n] as const),
          fc.boolean().map((b) => ['boolean', b] as const),
          fc
            .date({ min: new Date('1900-01-01'), max: new Date('2100-12-31'), noInvalidDate: true })
            .map((d) => ['date', d.toISOString().slice(0, 10)] as const),
        ),
        ([type, value]) => {
          const asText = convertValue(value, text('t', 1024))
          assert.notEqual(asText, null)
          assert.equal(convertValue(asText as string, of(type)), value)
        },
      ),
    )
  })
})
