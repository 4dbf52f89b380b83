import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { ConfigError, loadConfig } from '../config.ts'
import { SECRET_KEY_FILE, secretBox, secretBoxFor } from './secrets.ts'

describe('secrets at rest', () => {
  test('a sealed secret opens to the same text and never contains it', () => {
    const box = secretBox(Buffer.alloc(32, 7))
    fc.assert(
      fc.property(fc.string({ minLength: 8 }), (secret) => {
        const sealed = box.seal(secret)
        return box.open(sealed) === secret && !sealed.includes(secret)
      }),
    )
  })

  test('a sealed secret cannot be opened with another key or after tampering', () => {
    const sealed = secretBox(Buffer.alloc(32, 1)).seal('whsec_abc')
    assert.throws(() => secretBox(Buffer.alloc(32, 2)).open(sealed))
    const parts = sealed.split('.')
    parts[3] = Buffer.from('whsec_abd').toString('base64url')
    assert.throws(() => secretBox(Buffer.alloc(32, 1)).open(parts.join('.')))
  })

  test('a malformed HEROLD_SECRET_KEY stops the start with a message naming the variable', () => {
    assert.throws(() => loadConfig({ HEROLD_SECRET_KEY: 'short' }), /HEROLD_SECRET_KEY must be 32 bytes/)
  })

  test('a server deployment without HEROLD_SECRET_KEY is refused', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://localhost/x' })
    assert.throws(
      () => secretBoxFor(config),
      (e: Error) => e instanceof ConfigError && /HEROLD_SECRET_KEY is required/.test(e.message),
    )
  })

  test('embedded mode without a key generates one once and keeps it in the data directory', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'herold-secret-'))
    try {
      const sealed = secretBoxFor(loadConfig({ HEROLD_DATA_DIR: dir })).seal('kept')
      const file = path.join(dir, SECRET_KEY_FILE)
      assert.equal(statSync(file).mode & 0o777, 0o600)
      const key = readFileSync(file, 'utf8')
      assert.equal(secretBoxFor(loadConfig({ HEROLD_DATA_DIR: dir })).open(sealed), 'kept', 'a restart reads it back')
      assert.equal(readFileSync(file, 'utf8'), key)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
