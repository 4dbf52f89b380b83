import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { formatFieldValue } from '../../src/common/field-format.ts'
import { type PreviewField, previewText } from '../../web/src/features/newsletters/preview.ts'

// The console's newsletter preview writes a custom field as the server's message will: the same formatting, in the
// contact's language (else the preview's), for every type.

const fields: PreviewField[] = [
  { key: 'points', label: 'Points', type: 'number', default: null },
  { key: 'birthday', label: 'Birthday', type: 'date', default: null },
  { key: 'member', label: 'Member', type: 'boolean', default: false },
  { key: 'level', label: 'Level', type: 'choice', default: null },
]
const text = '{{points}} | {{birthday}} | {{member}} | {{level}}'
const contact = (language: string | null) => ({
  name: 'Erika Mustermann',
  email: null,
  phone: null,
  language,
  fields: { points: 1234.5, birthday: '2026-12-24', member: true, level: 'gold' },
})

describe('newsletter preview (web)', () => {
  for (const language of ['de', 'en_US', 'fr', 'nl', 'xx']) {
    test(`fields read as the server writes them, in ${language}`, () => {
      const server = [
        formatFieldValue(1234.5, 'number', language),
        formatFieldValue('2026-12-24', 'date', language),
        formatFieldValue(true, 'boolean', language),
        formatFieldValue('gold', 'choice', language),
      ].join(' | ')
      assert.equal(previewText(text, contact(language), 'there', fields, 'en'), server)
    })
  }

  test('German words and separators, from the contact’s language over the preview’s', () => {
    assert.equal(previewText(text, contact('de'), 'there', fields, 'en'), '1.234,5 | 24.12.2026 | ja | gold')
    assert.equal(previewText(text, contact(null), 'there', fields, 'de'), '1.234,5 | 24.12.2026 | ja | gold')
    assert.equal(
      previewText(text, { ...contact(''), fields: {} }, 'there', fields, 'de'),
      '[Points] | [Birthday] | nein | [Level]',
    )
  })
})
