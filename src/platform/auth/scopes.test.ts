import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseScopes, SCOPES } from './scopes.ts'

test('"all" gives every scope of section 5', () => {
  assert.deepEqual(parseScopes('all'), [...SCOPES])
  assert.equal(SCOPES.length, 27)
})

test('a list is parsed, trimmed and deduplicated; unknown scopes are named', () => {
  assert.deepEqual(parseScopes('contacts:read, inbox:read,contacts:read'), ['contacts:read', 'inbox:read'])
  assert.throws(() => parseScopes('contacts:read,contacts:admin'), /contacts:admin/)
  assert.throws(() => parseScopes(' , '), /at least one scope/)
})
