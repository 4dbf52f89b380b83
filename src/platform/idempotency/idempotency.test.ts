import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { canonicalJson, isValidIdempotencyKey, requestFingerprint } from './idempotency.ts'

function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, seed))
  if (value === null || typeof value !== 'object') return value
  const entries = Object.entries(value)
  const rotated = entries.length
    ? [...entries.slice(seed % entries.length), ...entries.slice(0, seed % entries.length)]
    : []
  return Object.fromEntries(rotated.reverse().map(([k, v]) => [k, shuffleKeys(v, seed)]))
}

test('property: the fingerprint ignores the order of object keys', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.nat(), (body, seed) => {
      assert.equal(canonicalJson(shuffleKeys(body, seed)), canonicalJson(body))
      assert.equal(
        requestFingerprint('POST', '/v1/x', shuffleKeys(body, seed)),
        requestFingerprint('post', '/v1/x', body),
      )
    }),
  )
})

test('property: different bodies give different fingerprints', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
      fc.pre(canonicalJson(a) !== canonicalJson(b))
      assert.notEqual(requestFingerprint('POST', '/v1/x', a), requestFingerprint('POST', '/v1/x', b))
    }),
  )
})

test('the path and the query string are part of the fingerprint', () => {
  const body = { a: 1 }
  assert.notEqual(requestFingerprint('POST', '/v1/x', body), requestFingerprint('POST', '/v1/y', body))
  assert.notEqual(requestFingerprint('POST', '/v1/x', body), requestFingerprint('POST', '/v1/x?upsert=true', body))
})

test('property: a key is valid exactly when it is 1-255 printable ASCII characters without spaces', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (key) => {
      const expected = key.length >= 1 && key.length <= 255 && [...key].every((c) => c > ' ' && c <= '~')
      assert.equal(isValidIdempotencyKey(key), expected)
    }),
  )
})
