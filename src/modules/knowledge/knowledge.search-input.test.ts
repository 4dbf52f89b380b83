import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'

// Search text is a customer's or an assistant's: whatever operators it holds, the answer is a result or a 400,
// never PostgreSQL's "tsquery stack too small" as a 500 (issue 51, finding 9).

let harness: Harness
let account: TestAccount

before(async () => {
  harness = await createHarness()
  account = await createTestAccount(harness, { plan: { requestsPerMinute: 100_000 } })
  const text = 'Rücksendungen sind innerhalb von 30 Tagen kostenlos. Die Erstattung erfolgt nach fünf Werktagen.'
  const uploaded = await account.request({
    method: 'POST',
    url: '/v1/knowledge/documents',
    payload: { data_base64: Buffer.from(text).toString('base64'), filename: 'faq.txt', mime: 'text/plain' },
  })
  assert.equal(uploaded.statusCode, 201, uploaded.body)
})
after(() => harness.close())

const search = (q: string) => account.request({ method: 'GET', url: `/v1/knowledge/search?q=${encodeURIComponent(q)}` })

describe('knowledge search input', () => {
  test('runs of - and other operators without a word are searched, not a 500', async () => {
    for (const q of [
      '-'.repeat(50),
      '-'.repeat(500),
      `${'- '.repeat(100)}Tagen`,
      `${'-('.repeat(60)}x`,
      `${'-"'.repeat(60)}Tagen`,
      `${'-&'.repeat(60)}a`,
    ]) {
      const response = await search(q)
      assert.equal(response.statusCode, 200, `${q.slice(0, 20)}: ${response.body}`)
    }
  })

  test('-word still excludes and a word still finds', async () => {
    const found = await search('Tagen')
    assert.equal(found.statusCode, 200, found.body)
    assert.equal(found.json().match, 'all')
    const excluded = await search('Tagen -Erstattung')
    assert.equal(excluded.json().match, 'any', excluded.body)
  })

  test('random strings of operators and punctuation never answer 500', async () => {
    // '-' weighs most: a run of them without a word is what overflowed PostgreSQL's tsquery parser
    const alphabet = fc.oneof(
      { weight: 3, arbitrary: fc.constant('-') },
      { weight: 5, arbitrary: fc.constantFrom(...'!&|():*<>\'" aäb1'.split(''), ' or ', ' OR ', 'Tagen', '-Tagen') },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(alphabet, { minLength: 1, maxLength: 200 }), async (parts) => {
        const q = parts.join('').slice(0, 500)
        const response = await search(q)
        assert.ok(
          response.statusCode === 200 || (response.statusCode === 400 && response.json().error.code === 'bad_request'),
          `${JSON.stringify(q)}: ${response.statusCode} ${response.body}`,
        )
      }),
      { numRuns: 150 },
    )
  })
})
