import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { formatFieldValue } from '../../common/field-format.ts'
import type { FieldDefinition } from '../contacts/index.ts'
import { customFieldTexts, mayUseCustomFields, valueLanguage } from './templates.fields.ts'
import { renderTemplate, settableVariables, unfilledVariables, validateVariableValues } from './templates.variables.ts'

const field = (key: string, type: FieldDefinition['type'], defaultValue: FieldDefinition['defaultValue'] = null) => ({
  key,
  label: key,
  type,
  options: null,
  defaultValue,
  maxLength: null,
})

describe('custom field values as text', () => {
  test('a number as the language writes it: de 1.234,5, en 1,234.5', () => {
    assert.equal(formatFieldValue(1234.5, 'number', 'de'), '1.234,5')
    assert.equal(formatFieldValue(1234.5, 'number', 'en'), '1,234.5')
    assert.equal(formatFieldValue(1234.5, 'number', 'en_US'), '1,234.5')
    assert.equal(formatFieldValue(-0.125, 'number', 'de'), '-0,125')
    assert.equal(formatFieldValue(42, 'number', 'de'), '42')
  })

  test('a date: de 24.12.2026, en December 24, 2026, other languages in their long form', () => {
    assert.equal(formatFieldValue('2026-12-24', 'date', 'de'), '24.12.2026')
    assert.equal(formatFieldValue('2026-12-24', 'date', 'de_AT'), '24.12.2026')
    assert.equal(formatFieldValue('2026-12-24', 'date', 'en'), 'December 24, 2026')
    assert.equal(formatFieldValue('2026-01-01', 'date', 'en_GB'), '1 January 2026')
    assert.equal(formatFieldValue('2026-12-24', 'date', 'fr'), '24 décembre 2026')
  })

  test('a boolean: ja/nein in German, yes/no in English and unknown languages', () => {
    assert.equal(formatFieldValue(true, 'boolean', 'de'), 'ja')
    assert.equal(formatFieldValue(false, 'boolean', 'de'), 'nein')
    assert.equal(formatFieldValue(true, 'boolean', 'en'), 'yes')
    assert.equal(formatFieldValue(false, 'boolean', 'en_US'), 'no')
    assert.equal(formatFieldValue(true, 'boolean', 'xx'), 'yes')
    assert.equal(formatFieldValue(true, 'boolean', ''), 'yes')
  })

  test('text and choice as they are; a value of another type than the definition as written', () => {
    assert.equal(formatFieldValue('K-1001', 'text', 'de'), 'K-1001')
    assert.equal(formatFieldValue('Gold', 'choice', 'en'), 'Gold')
    assert.equal(formatFieldValue('24.12.', 'date', 'de'), '24.12.')
    assert.equal(formatFieldValue(7, 'text', 'de'), '7')
  })

  test("the contact's own value, else the default; a field with neither (or empty text) is absent", () => {
    const definitions = [field('customer_no', 'text'), field('level', 'choice', 'Bronze'), field('points', 'number')]
    assert.deepEqual(customFieldTexts(definitions, { customer_no: 'K-1', points: 1500 }, 'de'), {
      customer_no: 'K-1',
      level: 'Bronze',
      points: '1.500',
    })
    assert.deepEqual(customFieldTexts(definitions, { customer_no: ' ', level: 'Gold', other: 'x' }, 'en'), {
      level: 'Gold',
    })
    assert.deepEqual(customFieldTexts(definitions, null, 'en'), { level: 'Bronze' })
  })

  test("values are written in the contact's language, else the template's", () => {
    assert.equal(valueLanguage('en', 'de'), 'en')
    assert.equal(valueLanguage('', 'de'), 'de')
    assert.equal(valueLanguage(null, 'de'), 'de')
  })

  test('only a named variable beyond the built-in ones may be a custom field', () => {
    assert.equal(mayUseCustomFields('Hallo {{name}}, {{email}} {{phone}} {{full_name}}'), false)
    assert.equal(mayUseCustomFields('Hallo {{1}}, dein {{2}}'), false)
    assert.equal(mayUseCustomFields('Hallo {{name}}, Nr. {{customer_no}}'), true)
    assert.equal(mayUseCustomFields(['Hallo {{name}}', 'https://x.example/{{customer_no}}']), true)
  })
})

describe('custom fields in the variable rules', () => {
  const content = 'Hallo {{name}}, deine Kundennummer ist {{customer_no}}, Code {{code}}.'

  test('a custom field is a contact variable: not settable, and passing it is from_contact', () => {
    assert.deepEqual(settableVariables(content, ['customer_no']), ['code'])
    assert.deepEqual(validateVariableValues(content, { code: 'A', customer_no: 'X' }, ['customer_no']), [
      { variable: 'customer_no', problem: 'from_contact' },
    ])
    // a field the template does not use is refused as coming from the contact too
    assert.deepEqual(validateVariableValues(content, { code: 'A', level: 'Gold' }, ['customer_no', 'level']), [
      { variable: 'level', problem: 'from_contact' },
    ])
  })

  test("rendered from the contact, never from the caller's values; missing when the contact has none", () => {
    const contact = { name: 'Erika Muster', email: '', phone: '+491', customFields: { customer_no: 'K-7' } }
    const filled = renderTemplate({
      texts: content,
      language: 'de',
      contact,
      values: { code: 'C', customer_no: 'forged' },
      customFields: ['customer_no'],
    })
    assert.equal(filled.ok && filled.texts[0], 'Hallo Erika, deine Kundennummer ist K-7, Code C.')
    const missing = renderTemplate({
      texts: content,
      language: 'de',
      contact: { ...contact, customFields: {} },
      values: { code: 'C', customer_no: 'forged' },
      customFields: ['customer_no'],
    })
    assert.deepEqual(missing, { ok: false, missing: ['customer_no'], remaining: ['{{customer_no}}'] })
    assert.deepEqual(unfilledVariables({ missing: ['customer_no'], remaining: ['{{customer_no}}', '{{ x }}'] }), [
      'customer_no',
      '{{ x }}',
    ])
  })
})
