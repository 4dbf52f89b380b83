import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { type LinkTrackingOptions, trackLinks } from './messaging.links.ts'

const PUBLIC_URL = 'https://app.herold.example'

function options(overrides: Partial<LinkTrackingOptions> = {}): LinkTrackingOptions {
  let counter = 0
  return {
    serviceName: 'herold',
    medium: 'chat',
    publicUrl: PUBLIC_URL,
    maxLength: 4000,
    newId: () => `id${++counter}`,
    ...overrides,
  }
}

const SHORT = new RegExp(`^${PUBLIC_URL.replace(/\./g, '\\.')}/public/t/c/[A-Za-z0-9_-]+$`)

const word = fc.stringMatching(/^[A-Za-z0-9äöüß.,!?()-]{0,12}$/)
const plain = fc.array(word, { maxLength: 5 }).map((words) => ` ${words.join(' ')} `)
const segment = fc.stringMatching(/^[a-z0-9]{1,8}$/)
const address = fc
  .record({
    scheme: fc.constantFrom('http', 'https', 'HTTPS'),
    host: fc.constantFrom('shop.example.com', 'example.org', 'app.herold.example', 'a.b.example.net:8080'),
    path: fc.array(segment, { maxLength: 3 }),
    query: fc.array(
      fc.tuple(fc.constantFrom('a', 'q', 'utm_source', 'sig', 'token', 'X-Amz-Signature', 'page'), segment),
      { maxLength: 3 },
    ),
    fragment: fc.option(segment, { nil: undefined }),
  })
  .map(({ scheme, host, path, query, fragment }) => {
    const search = query.length ? `?${query.map(([k, v]) => `${k}=${v}`).join('&')}` : ''
    return `${scheme}://${host}/${path.join('/')}${search}${fragment ? `#${fragment}` : ''}`
  })
/** text as alternating plain runs and addresses, each address set off by spaces */
const message = fc.tuple(plain, fc.array(fc.tuple(address, plain), { maxLength: 5 }))

describe('trackLinks', () => {
  test('an address gets the UTM parameters and is replaced by a short link', () => {
    const result = trackLinks('Neu im Shop: https://shop.example.com/sale?x=1. Bis bald!', options())
    assert.equal(result.text, `Neu im Shop: ${PUBLIC_URL}/public/t/c/id1. Bis bald!`)
    assert.deepEqual(result.links, [
      { id: 'id1', url: 'https://shop.example.com/sale?x=1&utm_source=herold&utm_medium=chat&utm_campaign=api' },
    ])
  })

  test('own addresses, addresses with utm_source and signed addresses stay unchanged', () => {
    const unchanged = [
      `${PUBLIC_URL}/public/media/x`,
      'https://shop.example.com/?utm_source=newsletter',
      'https://bucket.s3.example.com/file.pdf?X-Amz-Signature=abc&X-Amz-Expires=60',
      'https://cdn.example.com/a?sig=1',
      'https://cdn.example.com/a?signature=1',
      'https://cdn.example.com/a?token=1',
      'https://cdn.example.com/a?expires=1',
    ]
    for (const text of unchanged)
      assert.deepEqual(trackLinks(`see ${text}`, options()), { text: `see ${text}`, links: [] })
  })

  test('a text the rewrite would make longer than the limit stays unchanged', () => {
    const text = `${'a'.repeat(3980)} https://x.io`
    assert.deepEqual(trackLinks(text, options()), { text, links: [] })
  })

  test('property: the text outside the addresses never changes', () => {
    fc.assert(
      fc.property(message, ([head, rest]) => {
        const text = head + rest.map(([a, p]) => a + p).join('')
        const result = trackLinks(text, options())
        let expected = head
        let link = 0
        for (const [a, p] of rest) {
          const replaced = result.links.length > 0 && trackLinks(a, options()).links.length === 1
          expected += replaced ? `${PUBLIC_URL}/public/t/c/id${++link}` : a
          expected += p
        }
        assert.equal(result.text, result.links.length > 0 ? expected : text)
      }),
    )
  })

  test('property: an address is never broken (a valid URL to the same place, or untouched)', () => {
    fc.assert(
      fc.property(address, (a) => {
        const { text, links } = trackLinks(a, options())
        if (links.length === 0) return assert.equal(text, a)
        assert.match(text, SHORT)
        const original = new URL(a)
        const full = new URL(links[0].url)
        assert.equal(full.origin, original.origin)
        assert.equal(full.pathname, original.pathname)
        assert.equal(full.hash, original.hash)
        for (const [k, v] of original.searchParams) assert.ok(full.searchParams.getAll(k).includes(v))
        assert.equal(full.searchParams.get('utm_source'), 'herold')
        assert.equal(full.searchParams.get('utm_medium'), 'chat')
        assert.equal(full.searchParams.get('utm_campaign'), 'api')
      }),
    )
  })

  test('property: the rewrite is idempotent', () => {
    fc.assert(
      fc.property(message, ([head, rest]) => {
        const once = trackLinks(head + rest.map(([a, p]) => a + p).join(''), options()).text
        assert.deepEqual(trackLinks(once, options()), { text: once, links: [] })
      }),
    )
  })
})
