import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import {
  displayTags,
  isSystemTagName,
  likeContains,
  MAX_TAGS_PER_CONTACT,
  normalizePhone,
  optinResets,
  planTagAddition,
  searchTerms,
  type TagOrigin,
} from './contacts.rules.ts'

const separators = fc.constantFrom(' ', '-', '', '  ', ' - ')
const germanMobile = fc.integer({ min: 10_000_000, max: 99_999_999 }).map((n) => `+49151${n}`)

describe('normalizePhone', () => {
  test('gives E.164 whatever spaces and hyphens the number has', () => {
    fc.assert(
      fc.property(germanMobile, fc.array(separators, { minLength: 13, maxLength: 13 }), (e164, seps) => {
        const spaced = [...e164].map((c, i) => (i > 1 ? seps[i - 2] : '') + c).join('')
        assert.equal(normalizePhone(spaced), e164)
      }),
    )
  })

  test('is idempotent: a normalised number normalises to itself', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (input) => {
        const once = normalizePhone(input)
        if (once !== null) assert.equal(normalizePhone(once), once)
      }),
    )
  })

  test('answers E.164 or null, never anything else', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 25 }), (input) => {
        const out = normalizePhone(input)
        assert.ok(out === null || /^\+[1-9]\d{6,14}$/.test(out))
      }),
    )
  })

  test('reads a leading 00 as + and refuses national numbers without a country', () => {
    assert.equal(normalizePhone('0049 151 23456789'), '+4915123456789')
    assert.equal(normalizePhone('0151 23456789'), null)
    assert.equal(normalizePhone('+49 12'), null)
    assert.equal(normalizePhone('call me'), null)
  })
})

describe('searchTerms', () => {
  test('a phone-looking term loses its separators and national trunk zero', () => {
    assert.deepEqual(searchTerms(' 0151 234-56 '), { text: '0151 234-56', phone: '15123456' })
    assert.deepEqual(searchTerms('+49 151'), { text: '+49 151', phone: '+49151' })
    assert.deepEqual(searchTerms('anna'), { text: 'anna', phone: null })
    assert.equal(searchTerms('   '), null)
  })

  test('likeContains matches its term literally', () => {
    fc.assert(
      fc.property(fc.string(), (term) => {
        const pattern = likeContains(term)
        assert.ok(pattern.startsWith('%') && pattern.endsWith('%'))
        assert.ok(!/(^|[^\\])[%_]/.test(pattern.slice(1, -1).replace(/\\\\/g, '')))
      }),
    )
  })
})

describe('tags', () => {
  const origin = fc.constantFrom<TagOrigin>('system', 'ki', 'manuell')
  const rank = { system: 3, ki: 2, manuell: 1 }

  test('each name is shown once, under its strongest origin', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ name: fc.constantFrom('a', 'b', 'c'), origin })), (rows) => {
        const shown = displayTags(rows)
        assert.equal(new Set(shown.map((t) => t.name)).size, shown.length)
        for (const tag of shown) {
          const best = Math.max(...rows.filter((r) => r.name === tag.name).map((r) => rank[r.origin]))
          assert.equal(rank[tag.origin], best)
        }
      }),
    )
  })

  test('a contact never ends up with more than 30 tags, and existing names are neither added nor rejected', () => {
    const name = fc.string({ minLength: 1, maxLength: 6 }).filter((s) => s.trim() === s && s !== '')
    fc.assert(
      fc.property(fc.uniqueArray(name, { maxLength: 40 }), fc.array(name, { maxLength: 40 }), (existing, wanted) => {
        const start = existing.slice(0, MAX_TAGS_PER_CONTACT)
        const plan = planTagAddition(start, wanted)
        assert.ok(start.length + plan.added.length <= MAX_TAGS_PER_CONTACT)
        for (const n of plan.added) assert.ok(!start.includes(n))
        for (const n of plan.rejected) assert.ok(!start.includes(n))
      }),
    )
  })

  test('system tags: purchase and marketing markers and anything starting herkunft:', () => {
    for (const name of ['kauf', 'Marketing', 'herkunft:website', 'HERKUNFT:messe']) assert.ok(isSystemTagName(name))
    for (const name of ['vip', 'herkunft', 'marketing-team']) assert.ok(!isSystemTagName(name))
  })
})

describe('optinResets', () => {
  const state = fc.constantFrom('none', 'pending', 'confirmed', 'opted_out') as fc.Arbitrary<
    'none' | 'pending' | 'confirmed' | 'opted_out'
  >
  test('consent never moves to another address and unchanged addresses keep their consent', () => {
    fc.assert(
      fc.property(state, state, fc.boolean(), fc.boolean(), (optinChat, optinEmail, newEmail, newPhone) => {
        const before = { email: 'a@x.de', phone: '+4915100000000', optinChat, optinEmail }
        const after = { email: newEmail ? 'b@x.de' : 'a@x.de', phone: newPhone ? '+4915100000001' : '+4915100000000' }
        const resets = optinResets(before, after)
        assert.equal(
          resets.some((r) => r.channel === 'email'),
          newEmail && optinEmail !== 'none',
        )
        assert.equal(
          resets.some((r) => r.channel === 'chat'),
          newPhone && optinChat !== 'none',
        )
      }),
    )
  })
})
