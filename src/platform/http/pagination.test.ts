import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { type Page, toPage } from './pagination.ts'

test('a page of limit rows with one more fetched has more, and the next offset follows', () => {
  assert.deepEqual(toPage([1, 2, 3], 2, 10), { items: [1, 2], limit: 2, offset: 10, has_more: true, next_offset: 12 })
})

test('the last page has no more and no next offset', () => {
  assert.deepEqual(toPage([1, 2], 2, 0), { items: [1, 2], limit: 2, offset: 0, has_more: false, next_offset: null })
  assert.deepEqual(toPage([], 5, 40), { items: [], limit: 5, offset: 40, has_more: false, next_offset: null })
})

test('property: paging through any list with limit+1 fetches visits every row exactly once, in order', () => {
  fc.assert(
    fc.property(fc.array(fc.integer(), { maxLength: 60 }), fc.integer({ min: 1, max: 10 }), (rows, limit) => {
      const seen: number[] = []
      let offset: number | null = 0
      while (offset !== null) {
        const page: Page<number> = toPage(rows.slice(offset, offset + limit + 1), limit, offset)
        seen.push(...page.items)
        offset = page.next_offset
      }
      assert.deepEqual(seen, rows)
    }),
  )
})
