import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  cleanKeywords,
  escapeHtml,
  hashToken,
  inboundIntent,
  matchKeyword,
  newLinkToken,
  overlappingKeywords,
  withUnsubscribe,
} from './consent.rules.ts'

const defaults = { startKeywords: ['START', 'Anmelden'], stopKeywords: ['STOP', 'Abmelden'] }

describe('keyword matching', () => {
  test('the whole message, trimmed and case-insensitive', () => {
    assert.equal(matchKeyword('  start\n', defaults.startKeywords), 'START')
    assert.equal(matchKeyword('ANMELDEN', defaults.startKeywords), 'Anmelden')
    assert.equal(matchKeyword('START now', defaults.startKeywords), null)
    assert.equal(matchKeyword('', defaults.startKeywords), null)
    assert.equal(matchKeyword('TSCHÜSS', ['Tschüss']), 'Tschüss')
  })

  test('any casing and surrounding whitespace of a keyword matches it; added text never does', () => {
    const keyword = fc.stringMatching(/^[A-Za-zÄÖÜäöü]{1,12}$/)
    const space = fc.constantFrom('', ' ', '  ', '\t', '\n')
    fc.assert(
      fc.property(keyword, space, space, fc.array(fc.boolean(), { maxLength: 12 }), (word, left, right, upper) => {
        const cased = [...word].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join('')
        assert.equal(matchKeyword(`${left}${cased}${right}`, [word]), word)
        assert.equal(matchKeyword(`${cased} bitte`, [word]), null)
      }),
    )
  })

  test('intents: stop before start, buttons only as button messages, other types ignored', () => {
    assert.deepEqual(inboundIntent({ type: 'text', text: 'stop' }, defaults), { kind: 'stop', keyword: 'STOP' })
    assert.deepEqual(inboundIntent({ type: 'text', text: 'Start' }, defaults), { kind: 'start', keyword: 'START' })
    assert.deepEqual(inboundIntent({ type: 'button', text: 'Ja, bestätigen' }, defaults), {
      kind: 'button',
      text: 'Ja, bestätigen',
    })
    assert.equal(inboundIntent({ type: 'image', text: 'START' }, defaults), null)
    assert.deepEqual(inboundIntent({ type: 'text', text: 'x' }, { startKeywords: ['x'], stopKeywords: ['X'] }), {
      kind: 'stop',
      keyword: 'X',
    })
  })

  test('keyword lists are trimmed and deduplicated; overlaps are found case-insensitively', () => {
    assert.deepEqual(cleanKeywords([' Ja ', 'ja', '', '  ', 'Hallo']), ['Ja', 'Hallo'])
    assert.deepEqual(overlappingKeywords(['Los', 'Start'], ['LOS']), ['Los'])
  })
})

describe('pages and links', () => {
  test('escaping leaves no markup character', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        assert.doesNotMatch(escapeHtml(text), /[<>"']/)
      }),
    )
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;')
  })

  test('link tokens are random and only their hash is kept', () => {
    const a = newLinkToken()
    const b = newLinkToken()
    assert.notEqual(a.token, b.token)
    assert.equal(a.hash, hashToken(a.token))
    assert.ok(!a.hash.includes(a.token))
    assert.match(a.token, /^[A-Za-z0-9_-]{32}$/)
  })

  test('a marketing mail gets the link in text and HTML and the RFC 8058 headers', () => {
    const url = 'https://app.example/public/unsubscribe/abc'
    const mail = withUnsubscribe({ subject: 'S', text: 'Hallo\n\n', html: '<body><p>Hallo</p></body>' }, url, 'de')
    assert.equal(mail.text, `Hallo\n\n--\nAbmelden: ${url}\n`)
    assert.match(
      String(mail.html),
      /<a href="https:\/\/app\.example\/public\/unsubscribe\/abc">Abmelden<\/a><\/p><\/body>$/,
    )
    assert.deepEqual(mail.headers, {
      'List-Unsubscribe': `<${url}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    })
    assert.equal(withUnsubscribe({ subject: 'S', text: 'T' }, url, 'en').html, undefined)
  })
})
