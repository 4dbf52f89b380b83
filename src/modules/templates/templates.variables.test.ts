import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  contactVariables,
  extractVariables,
  firstNameFallback,
  invalidVariablesMessage,
  isGreetingPositional,
  MAX_VARIABLE_VALUE_LENGTH,
  placeholders,
  remainingPlaceholders,
  renderTemplate,
  settableVariables,
  validateVariableValues,
  valueProblem,
} from './templates.variables.ts'

const namedVariable = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/)
/** Text that cannot contain a brace, so placeholders are only where a test puts them. */
const plainText = fc.string({ maxLength: 30 }).map((s) => s.replace(/[{}]/g, ''))
/** A value the rules accept: printable, no braces, no runs of four spaces, not blank. */
const validValue = fc
  .string({ minLength: 1, maxLength: 60 })
  .map((s) => s.replace(/[\p{Cc}{}\u2028\u2029\u0085]/gu, 'x').replace(/ {4,}/g, ' '))
  .filter((s) => s.trim() !== '')

const anna = { name: 'Anna Maria Schmidt', email: 'anna@example.de', phone: '+4915123456789' }

describe('extractVariables', () => {
  test('names each named or positional variable once, in order of first appearance', () => {
    assert.deepEqual(extractVariables('Hi {{name}}, code {{code}}; again {{code}} and {{1}}'), ['name', 'code', '1'])
  })

  test('a variable written into a text is always extracted', () => {
    fc.assert(
      fc.property(plainText, namedVariable, plainText, (before, name, after) => {
        assert.deepEqual(extractVariables(`${before}{{${name}}}${after}`), [name])
      }),
    )
  })

  test('placeholders with spaces, capitals, {{0}} or nothing inside are invalid, not variables', () => {
    for (const raw of ['{{ name }}', '{{Name}}', '{{0}}', '{{}}', '{{01}}', '{{first-name}}']) {
      assert.deepEqual(extractVariables(`Hi ${raw} there`), [], raw)
      assert.equal(placeholders(`Hi ${raw} there`)[0].kind, 'invalid', raw)
    }
  })

  test('never throws and finds only names that appear between double braces', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        for (const name of extractVariables(text)) assert.ok(text.includes(`{{${name}}}`))
      }),
    )
  })

  test('takes the URL button addresses after the content, in one name space', () => {
    assert.deepEqual(
      extractVariables(['Code {{code}} here', 'https://x.example/{{order}}', 'https://y.example/{{code}}']),
      ['code', 'order'],
    )
  })
})

describe('contact variables and settable variables', () => {
  test('name, full_name, email and phone come from the contact and are not settable', () => {
    const content = 'Hi {{name}} ({{full_name}}, {{email}}, {{phone}}): your code is {{code}}.'
    assert.deepEqual(contactVariables(content), ['name', 'full_name', 'email', 'phone'])
    assert.deepEqual(settableVariables(content), ['code'])
  })

  test('custom fields of the account come from the contact', () => {
    assert.deepEqual(settableVariables('Hi {{name}}, your {{plan}} ends on {{date}}.', ['plan']), ['date'])
  })

  test('{{1}} after a greeting word on the first line is the first name, not settable', () => {
    for (const content of [
      'Hallo {{1}}, dein Code ist {{2}}.',
      '👋 Hi {{1}}! Code {{2}}.',
      '\n  Liebe {{1}},\nCode {{2}}.',
    ]) {
      assert.equal(isGreetingPositional(content), true, content)
      assert.deepEqual(settableVariables(content), ['2'], content)
    }
  })

  test('{{1}} anywhere else is an ordinary variable the caller sets', () => {
    for (const content of [
      'Your code is {{1}} today.',
      'Order {{2}} from {{1}} shipped.',
      'Hallo!\nHi {{1}}, code {{2}}.',
      'Hallo und willkommen {{1}}.',
    ]) {
      assert.equal(isGreetingPositional(content), false, content)
      assert.ok(settableVariables(content).includes('1'), content)
    }
  })

  test('every variable is either settable or from the contact, never both', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(namedVariable, fc.constantFrom('name', 'email', '1', '2')), { maxLength: 6 }),
        plainText,
        (names, greeting) => {
          const content = `${greeting}${names.map((n) => `{{${n}}}`).join(' and ')} end`
          const settable = settableVariables(content)
          const fromContact = contactVariables(content)
          assert.deepEqual([...settable, ...fromContact].sort(), extractVariables(content).sort())
          for (const v of settable) assert.ok(!fromContact.includes(v))
        },
      ),
    )
  })
})

describe('valueProblem (rule 5 of POST /messages)', () => {
  test('names the first problem of a value', () => {
    const cases: Array<[unknown, string | null]> = [
      ['SUMMER24', null],
      ['two  spaces fine', null],
      ['', 'empty'],
      ['   ', 'empty'],
      ['x'.repeat(MAX_VARIABLE_VALUE_LENGTH + 1), 'too_long'],
      ['line\nbreak', 'line_break'],
      ['carriage\rreturn', 'line_break'],
      ['separator\u2028', 'line_break'],
      ['tab\there', 'tab'],
      ['bell\u0007', 'control_character'],
      ['del\u007f', 'control_character'],
      ['four    spaces', 'four_spaces'],
      ['see {{code}}', 'placeholder'],
      ['see {{ Bad }}', 'placeholder'],
      [42, 'not_a_string'],
    ]
    for (const [value, problem] of cases) assert.equal(valueProblem(value), problem, JSON.stringify(value))
  })

  test('1024 characters are allowed, counted as characters rather than UTF-16 units', () => {
    assert.equal(valueProblem('x'.repeat(MAX_VARIABLE_VALUE_LENGTH)), null)
    assert.equal(valueProblem('😀'.repeat(MAX_VARIABLE_VALUE_LENGTH)), null)
    assert.equal(valueProblem('😀'.repeat(MAX_VARIABLE_VALUE_LENGTH + 1)), 'too_long')
  })

  test('any value with a control character is refused', () => {
    fc.assert(
      fc.property(plainText, fc.integer({ min: 0, max: 0x1f }), plainText, (a, code, b) => {
        assert.notEqual(valueProblem(`x${a}${String.fromCharCode(code)}${b}`), null)
      }),
    )
  })

  test('accepted values never contain a placeholder, a line break, a tab or four spaces', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (value) => {
        if (valueProblem(value) !== null) return
        assert.ok(!/\{\{[^{}]*\}\}|[\n\r\t]| {4}/.test(value))
        assert.ok(value.trim() !== '')
      }),
    )
  })
})

describe('validateVariableValues', () => {
  const content = 'Hallo {{name}}, dein Code {{code}} gilt bis {{date}}.'

  test('accepts a valid value for every settable variable', () => {
    assert.deepEqual(validateVariableValues(content, { code: 'SUMMER24', date: '31. Mai' }), [])
  })

  test('refuses unknown variables, contact variables, missing and invalid values, naming each', () => {
    const invalid = validateVariableValues(content, { name: 'Eve', code: '', coupon: 'X' })
    assert.deepEqual(invalid, [
      { variable: 'name', problem: 'from_contact' },
      { variable: 'code', problem: 'empty' },
      { variable: 'coupon', problem: 'unknown' },
      { variable: 'date', problem: 'missing' },
    ])
    const message = invalidVariablesMessage(invalid)
    for (const name of ['name', 'code', 'coupon', 'date']) assert.match(message, new RegExp(`\\b${name}\\b`))
  })

  test('a contact variable the template does not use still cannot be passed', () => {
    assert.deepEqual(validateVariableValues('Code {{code}} now.', { code: 'A', email: 'x@example.com' }), [
      { variable: 'email', problem: 'from_contact' },
    ])
  })

  test('any set of valid values for exactly the settable variables is accepted', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(namedVariable, { maxLength: 5 }),
        fc.array(validValue, { minLength: 5, maxLength: 5 }),
        (names, values) => {
          const settableNames = names.filter((n) => !['name', 'full_name', 'email', 'phone'].includes(n))
          const text = `Start ${settableNames.map((n) => `{{${n}}}`).join(' x ')} end`
          const supplied = Object.fromEntries(settableNames.map((n, i) => [n, values[i]]))
          assert.deepEqual(validateVariableValues(text, supplied), [])
        },
      ),
    )
  })
})

describe('renderTemplate', () => {
  test('fills the first name, contact fields and caller values', () => {
    const result = renderTemplate({
      texts: 'Hallo {{name}} ({{full_name}}, {{email}}, {{phone}}), Code {{code}}.',
      language: 'de',
      contact: anna,
      values: { code: 'SUMMER24' },
    })
    assert.deepEqual(result.ok && result.texts, [
      'Hallo Anna (Anna Maria Schmidt, anna@example.de, +4915123456789), Code SUMMER24.',
    ])
  })

  test('a greeting {{1}} is the first name', () => {
    const result = renderTemplate({
      texts: 'Hi {{1}}, code {{2}}.',
      language: 'en',
      contact: anna,
      values: { '2': 'X' },
    })
    assert.deepEqual(result.ok && result.texts, ['Hi Anna, code X.'])
  })

  test('a contact without a name is greeted by the language fallback: du in German, there in English and others', () => {
    const nameless = { ...anna, name: '  ' }
    const render = (language: string) =>
      renderTemplate({ texts: 'Hallo {{name}}, ok.', language, contact: nameless, values: {} })
    const german = render('de')
    assert.deepEqual(german.ok && german.texts, ['Hallo du, ok.'])
    const english = render('en_GB')
    assert.deepEqual(english.ok && english.texts, ['Hallo there, ok.'])
    assert.equal(firstNameFallback('de_AT'), 'du')
    assert.equal(firstNameFallback('en_US'), 'there')
    assert.equal(firstNameFallback('pt_BR'), 'there')
  })

  test('renders URL button addresses with the same values', () => {
    const result = renderTemplate({
      texts: ['Order {{order}} shipped.', 'https://shop.example/o/{{order}}'],
      language: 'en',
      contact: anna,
      values: { order: 'A17' },
    })
    assert.deepEqual(result.ok && result.texts, ['Order A17 shipped.', 'https://shop.example/o/A17'])
  })

  test('fails when a contact variable has no value: a contact without email for {{email}}', () => {
    const result = renderTemplate({
      texts: 'Mail {{email}} ok.',
      language: 'en',
      contact: { ...anna, email: '' },
      values: {},
    })
    assert.deepEqual(result, { ok: false, missing: ['email'], remaining: ['{{email}}'] })
  })

  test('fails when a placeholder would remain, such as an invalid one', () => {
    const result = renderTemplate({ texts: 'Hi {{ name }}, ok.', language: 'en', contact: anna, values: {} })
    assert.deepEqual(result, { ok: false, missing: [], remaining: ['{{ name }}'] })
  })

  test('a value is never read as a placeholder: rendering happens in one pass', () => {
    const result = renderTemplate({
      texts: 'A {{a}} B {{b}} C',
      language: 'en',
      contact: anna,
      values: { a: '{{b}}', b: 'x' },
    })
    assert.equal(result.ok, false)
  })

  test('a successful render never leaves a placeholder', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 80 }),
        fc.dictionary(namedVariable, validValue, { maxKeys: 4 }),
        (content, values) => {
          const result = renderTemplate({ texts: content, language: 'de', contact: anna, values })
          if (result.ok) for (const text of result.texts) assert.deepEqual(remainingPlaceholders(text), [])
        },
      ),
    )
  })

  test('with valid values for every settable variable, a template of valid variables renders', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(namedVariable, { minLength: 1, maxLength: 5 }),
        fc.array(validValue, { minLength: 5, maxLength: 5 }),
        (names, vals) => {
          const content = `Start ${names.map((n) => `{{${n}}}`).join(' x ')} end`
          const values = Object.fromEntries(settableVariables(content).map((n, i) => [n, vals[i]]))
          const result = renderTemplate({ texts: content, language: 'en', contact: anna, values })
          assert.equal(result.ok, true)
        },
      ),
    )
  })
})
