import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { sandboxTemplateDecision } from '../channels/sandbox.provider.ts'
import {
  type CheckedTemplate,
  checkTemplate,
  headerImageType,
  isSendable,
  optinConfirmButton,
  providerCategory,
  providerName,
  rejectionReasonText,
  stateForProviderStatus,
  submissionReadiness,
  type TemplateButton,
} from './templates.check.ts'

const valid: CheckedTemplate = {
  name: 'Order shipped',
  content: 'Hallo {{1}}, deine Bestellung {{2}} ist unterwegs.',
  channel: 'chat',
  subject: null,
  purpose: 'utility',
  language: 'de',
  buttons: [],
  headerMedia: null,
}

const codes = (change: Partial<CheckedTemplate>, context = {}) =>
  checkTemplate({ ...valid, ...change }, context).map((i) => i.code)
const quick = (text: string): TemplateButton => ({ type: 'QUICK_REPLY', text })
const link = (text: string, url: string): TemplateButton => ({ type: 'URL', text, url })

describe('checkTemplate', () => {
  test('a template within every rule has no issues', () => {
    assert.deepEqual(checkTemplate(valid), [])
    assert.deepEqual(
      codes({
        buttons: [quick('Ja'), quick('Nein'), link('Shop', 'https://shop.example/o/{{3}}')],
        content: 'Hi {{1}}, order {{2}} is here.',
      }),
      [],
    )
  })

  test('every issue has a code, a field and an English message', () => {
    const issues = checkTemplate({ ...valid, content: '{{1}}{{3}}', buttons: [quick(''), link('x', 'http://a')] })
    assert.ok(issues.length > 3)
    for (const issue of issues) {
      assert.match(issue.code, /^[a-z_]+$/)
      assert.ok(issue.field.length > 0)
      assert.match(issue.message, /^[A-Z{B]/)
    }
  })

  test('the name must leave a provider name of lowercase letters, digits and underscores', () => {
    assert.deepEqual(codes({ name: '🎉 !!' }), ['name_without_letters'])
    assert.deepEqual(codes({ name: '   ' }), ['name_empty'])
  })

  test('another chat template with the same provider name and language is an issue', () => {
    assert.deepEqual(codes({}, { providerNameTaken: true }), ['name_taken'])
  })

  test('the language must be one the provider offers templates in', () => {
    assert.deepEqual(codes({ language: 'xx' }), ['language_unsupported'])
    assert.deepEqual(codes({ language: 'en_US' }), [])
  })

  test('the content of a chat template must not be empty or longer than 1024 characters', () => {
    assert.deepEqual(codes({ content: '   ' }), ['content_empty'])
    assert.deepEqual(codes({ content: `Hallo ${'x'.repeat(1019)}` }), ['content_too_long'])
    assert.deepEqual(codes({ content: `Hallo ${'x'.repeat(1018)}` }), [])
  })

  test('variables must be valid: numbers from 1 or lowercase names without spaces', () => {
    assert.deepEqual(codes({ content: 'Hi {{ name }}, ok.' }), ['variable_invalid'])
    assert.deepEqual(codes({ content: 'Hi {{0}}, ok.' }), ['variable_invalid'])
  })

  test('variables are all numbered or all named, not mixed', () => {
    assert.deepEqual(codes({ content: 'Hi {{1}}, code {{code}} ok.' }), ['variables_mixed'])
  })

  test("a URL button's own {{1}} beside a body with named variables is not a mix (WhatsApp numbers it apart)", () => {
    const button = link('Zum Shop', 'https://herold.example/public/t/c/{{1}}')
    assert.deepEqual(codes({ content: 'Hallo {{name}}, neu da.', buttons: [button] }), [])
    assert.deepEqual(
      codes({ content: 'Hallo {{name}}, neu da.', buttons: [link('x', 'https://a.example/{{code}}')] }),
      [],
    )
    assert.deepEqual(codes({ content: 'Hallo {{name}}, neu da.', buttons: [link('x', 'https://a.example/{{2}}')] }), [
      'variables_mixed',
      'variables_not_sequential',
    ])
  })

  test('numbered variables run from {{1}} without gaps', () => {
    assert.deepEqual(codes({ content: 'Hi {{1}}, code {{3}} ok.' }), ['variables_not_sequential'])
    assert.deepEqual(codes({ content: 'Hi {{2}}, ok.' }), ['variables_not_sequential'])
  })

  test('the content must not start or end with a variable', () => {
    assert.deepEqual(codes({ content: '{{1}}, your order {{2}} ships.' }), ['variable_at_start'])
    assert.deepEqual(codes({ content: '  Your order ships, {{1}}  ' }), ['variable_at_end'])
  })

  test('two variables must not stand next to each other', () => {
    assert.deepEqual(codes({ content: 'Hi {{1}}{{2}} ok.' }), ['variables_adjacent'])
    assert.deepEqual(codes({ content: 'Hi {{1}} {{2}} ok.' }), ['variables_adjacent'])
    assert.deepEqual(codes({ content: 'Hi {{1}}, {{2}} ok.' }), [])
  })

  test('at most 10 buttons', () => {
    const buttons = Array.from({ length: 11 }, (_, i) => quick(`Option ${i}`))
    assert.deepEqual(codes({ buttons }), ['too_many_buttons'])
  })

  test('at most 2 URL buttons', () => {
    const buttons = ['a', 'b', 'c'].map((x) => link(x, `https://${x}.example/`))
    assert.deepEqual(codes({ buttons }), ['too_many_url_buttons'])
  })

  test('quick replies and URL buttons each stand together', () => {
    const buttons = [quick('Ja'), link('Shop', 'https://shop.example/'), quick('Nein')]
    assert.deepEqual(codes({ buttons }), ['buttons_not_grouped'])
  })

  test('button texts are unique, ignoring case and surrounding spaces', () => {
    assert.deepEqual(codes({ buttons: [quick('Ja'), quick(' ja ')] }), ['button_text_duplicate'])
  })

  test('a button text is not empty, at most 25 characters, without variables or line breaks', () => {
    assert.deepEqual(codes({ buttons: [quick(' ')] }), ['button_text_empty'])
    assert.deepEqual(codes({ buttons: [quick('x'.repeat(26))] }), ['button_text_too_long'])
    assert.deepEqual(codes({ buttons: [quick('Hi {{1}}')] }), ['button_text_variable'])
    assert.deepEqual(codes({ buttons: [quick('Ja\nbitte')] }), ['button_text_line_break'])
  })

  test('a URL button needs a valid https address', () => {
    assert.deepEqual(codes({ buttons: [{ type: 'URL', text: 'Shop' }] }), ['button_url_missing'])
    for (const url of ['http://shop.example/', 'shop.example', 'https://localhost/', 'https://u:p@shop.example/']) {
      assert.deepEqual(codes({ buttons: [link('Shop', url)] }), ['button_url_invalid'], url)
    }
  })

  test('a URL button address holds at most one variable, at its very end', () => {
    assert.deepEqual(codes({ buttons: [link('Shop', 'https://shop.example/{{3}}/x')] }), ['button_url_variable'])
    assert.deepEqual(codes({ buttons: [link('Shop', 'https://shop.example/{{3}}{{4}}')] }), ['button_url_variable'])
  })

  test('variables of URL buttons share the numbering of the content', () => {
    assert.deepEqual(codes({ buttons: [link('Shop', 'https://shop.example/{{4}}')] }), ['variables_not_sequential'])
  })

  test('a quick reply has no url', () => {
    assert.deepEqual(codes({ buttons: [{ type: 'QUICK_REPLY', text: 'Ja', url: 'https://a.example/' }] }), [
      'button_url_not_allowed',
    ])
  })

  test('an opt-in confirmation template has no custom buttons; it gets a fixed confirm button by language', () => {
    assert.deepEqual(codes({ purpose: 'optin_confirm', buttons: [quick('Ja!')] }), ['optin_confirm_custom_button'])
    assert.deepEqual(codes({ purpose: 'optin_confirm' }), [])
    assert.deepEqual(optinConfirmButton('de'), { type: 'QUICK_REPLY', text: 'Ja, bestätigen' })
    assert.deepEqual(optinConfirmButton('en_US'), { type: 'QUICK_REPLY', text: 'Yes, confirm' })
    assert.deepEqual(optinConfirmButton('ja'), { type: 'QUICK_REPLY', text: 'Yes, confirm' })
  })

  test('the header image is a JPEG or PNG at an https address', () => {
    assert.deepEqual(codes({ headerMedia: { url: 'https://cdn.example/a.png' } }), [])
    assert.deepEqual(codes({ headerMedia: { url: 'https://cdn.example/a', mime_type: 'image/jpeg' } }), [])
    assert.deepEqual(codes({ headerMedia: { url: 'https://cdn.example/a.gif' } }), ['header_media_type'])
    assert.deepEqual(codes({ headerMedia: { url: 'http://cdn.example/a.png' } }), ['header_url_invalid'])
    assert.equal(headerImageType({ url: 'https://cdn.example/photo.JPEG?v=2' }), 'image/jpeg')
  })

  test('a subject is only for email templates', () => {
    assert.deepEqual(codes({ subject: 'Hello' }), ['subject_not_allowed'])
  })

  test('email templates are not submitted and need a subject; content up to 20000 characters', () => {
    const email = { channel: 'email' as const, subject: 'Your order', content: `Hi ${'x'.repeat(5000)}` }
    assert.deepEqual(codes(email), ['email_not_submitted'])
    assert.deepEqual(codes({ ...email, subject: ' ' }), ['email_not_submitted', 'email_subject_missing'])
    assert.deepEqual(codes({ ...email, content: 'x'.repeat(20001) }), ['email_not_submitted', 'content_too_long'])
    assert.deepEqual(codes({ ...email, buttons: [quick('Ja')] }), ['email_not_submitted', 'email_buttons'])
  })

  test('never throws, whatever the strings hold', () => {
    const button = fc.record({
      type: fc.constantFrom('QUICK_REPLY' as const, 'URL' as const),
      text: fc.string(),
      url: fc.option(fc.string(), { nil: undefined }),
    })
    fc.assert(
      fc.property(
        fc.record({
          name: fc.string(),
          content: fc.string({ maxLength: 300 }),
          channel: fc.constantFrom('chat' as const, 'email' as const),
          subject: fc.option(fc.string()),
          purpose: fc.constantFrom('marketing' as const, 'utility' as const, 'optin_confirm' as const),
          language: fc.string({ maxLength: 6 }),
          buttons: fc.array(button, { maxLength: 12 }),
          headerMedia: fc.option(fc.record({ url: fc.string(), mime_type: fc.option(fc.string()) })),
        }),
        (template) => {
          const issues = checkTemplate(template)
          for (const issue of issues) assert.ok(issue.message.length > 0)
        },
      ),
    )
  })

  test('content of valid text around positional variables separated by words has no variable issues', () => {
    const word = fc.stringMatching(/^[A-Za-zäöü]{1,8}$/)
    fc.assert(
      fc.property(fc.array(word, { minLength: 2, maxLength: 6 }), (words) => {
        const content = words.map((w, i) => (i === 0 ? w : `{{${i}}} ${w}`)).join(' ')
        assert.deepEqual(codes({ content }), [])
      }),
    )
  })
})

describe('provider name, category and standing', () => {
  test('the provider name is lower-case with umlauts spelled out and underscores for the rest', () => {
    assert.equal(providerName('Willkommen im März!'), 'willkommen_im_maerz')
    assert.equal(providerName('  Größe & Café 2 '), 'groesse_cafe_2')
    assert.equal(providerName('🎉'), '')
  })

  test('the provider name only ever holds lowercase letters, digits and single inner underscores', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 120 }), (name) => {
        assert.match(providerName(name), /^([a-z0-9]+(_[a-z0-9]+)*)?$/)
      }),
    )
  })

  test('optin_confirm and utility are sent as utility, marketing as marketing', () => {
    assert.equal(providerCategory('optin_confirm'), 'UTILITY')
    assert.equal(providerCategory('utility'), 'UTILITY')
    assert.equal(providerCategory('marketing'), 'MARKETING')
  })

  test('a template already pending or approved, rejected, or system is not submittable, with the reason', () => {
    const standing = (providerStatus: string | null, extra = {}) =>
      submissionReadiness({ ...valid, providerStatus, rejectionReason: null, system: false, ...extra })
    assert.deepEqual(standing(null), { submittable: true, issues: [] })
    assert.deepEqual(
      standing('pending').issues.map((i) => i.code),
      ['already_pending'],
    )
    assert.deepEqual(
      standing('approved').issues.map((i) => i.code),
      ['already_approved'],
    )
    const rejected = standing('rejected', { rejectionReason: 'PROMOTIONAL' })
    assert.equal(rejected.submittable, false)
    assert.match(rejected.issues[0].message, /promotional/)
    assert.deepEqual(
      standing(null, { system: true }).issues.map((i) => i.code),
      ['system_template'],
    )
  })

  test('rejection reasons read as English text', () => {
    assert.equal(
      rejectionReasonText('INVALID_FORMAT'),
      'The template format is invalid (variables, placement or formatting)',
    )
    assert.equal(rejectionReasonText('NONE'), null)
    assert.equal(rejectionReasonText(null), null)
    assert.match(rejectionReasonText('SOMETHING_NEW') ?? '', /SOMETHING_NEW/)
  })

  test('provider statuses move the state; undecided ones read as pending', () => {
    assert.equal(stateForProviderStatus(null), 'draft')
    assert.equal(stateForProviderStatus('APPROVED'), 'approved')
    assert.equal(stateForProviderStatus('rejected'), 'rejected')
    assert.equal(stateForProviderStatus('paused'), 'paused')
    assert.equal(stateForProviderStatus('disabled'), 'disabled')
    assert.equal(stateForProviderStatus('in_appeal'), 'pending')
  })

  test('sendable: approved at the provider, chat, not optin_confirm, not system', () => {
    const base = { channel: 'chat' as const, purpose: 'marketing' as const, providerStatus: 'approved', system: false }
    assert.equal(isSendable(base), true)
    assert.equal(isSendable({ ...base, providerStatus: 'pending' }), false)
    assert.equal(isSendable({ ...base, channel: 'email' }), false)
    assert.equal(isSendable({ ...base, purpose: 'optin_confirm' }), false)
    assert.equal(isSendable({ ...base, system: true }), false)
  })
})

describe('the check and the sandbox review agree (one rule: channels/whatsapp.rules.ts)', () => {
  test('a variable followed only by punctuation still ends the body: not submittable, and the sandbox rejects it', () => {
    const content = 'Hallo {{name}}, dein Rabatt: {{rabatt}}!'
    assert.ok(codes({ content }).includes('variable_at_end'))
    assert.equal(sandboxTemplateDecision({ name: 'rabatt', content }).status, 'REJECTED')
    const opening = '¡{{name}}, willkommen bei uns!'
    assert.ok(codes({ content: opening }).includes('variable_at_start'))
    assert.equal(sandboxTemplateDecision({ name: 'welcome', content: opening }).status, 'REJECTED')
  })

  test('property: whenever the check says submittable, the sandbox approves', () => {
    const piece = fc.oneof(
      fc.constantFrom('Hallo', 'dein', 'Code', 'ist', 'da', 'Rabatt', '10 %', 'bis', 'Sonntag', 'Bestellung'),
      fc.constantFrom(' ', ', ', '. ', '! ', '? ', ': ', ' – ', '🙂', '"', '(', ')', '\n'),
      fc.constantFrom('{{name}}', '{{1}}', '{{2}}', '{{code}}', '{{rabatt}}', '{{}}'),
    )
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 14 }),
        fc.constantFrom('Order', 'Rabatt Aktion'),
        (parts, name) => {
          const content = parts.join('')
          const template = { ...valid, name, content }
          if (checkTemplate(template).length > 0) return
          assert.equal(
            sandboxTemplateDecision({ name: providerName(name), content }).status,
            'APPROVED',
            `the check passed ${JSON.stringify(content)}`,
          )
        },
      ),
      { numRuns: 2000 },
    )
  })
})
